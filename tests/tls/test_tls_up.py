"""`trix up --tls` (issue 41) as the embedded platform runs it: the local CA in the state
folder, NATS, the five services and the edge all TLS. A player signs in through the edge with
the CA and is matched to a table (the gateway calls matchmaking over TLS, every service talks
to NATS over TLS); without the CA neither the edge nor the gateway answers."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit

import grpc
import pytest

from support.tls import health_code
from trix import tls
from trix.client import GatewayClient
from trix.embedded import EmbeddedPlatform
from trix.v1 import common_pb2, gateway_pb2, matchmaking_pb2

pytestmark = pytest.mark.timeout(240)

MATCH_DEADLINE_S = 60.0


@pytest.fixture(scope="module")
def platform(tmp_path_factory: pytest.TempPathFactory) -> Iterator[EmbeddedPlatform]:
    embedded = EmbeddedPlatform(tmp_path_factory.mktemp("tls-up"), fresh=True, edge=True, tls=True)
    with embedded:
        yield embedded


def _edge_target(platform: EmbeddedPlatform) -> str:
    parts = urlsplit(platform.edge_url)
    assert parts.scheme == "https"
    return f"{parts.hostname}:{parts.port}"


async def _matched(target: str, ca_file: str) -> gateway_pb2.SessionResponse:
    client = GatewayClient(target, ca_file=ca_file)
    try:
        await client.sign_in("device-secret-of-tls-up-0123456789", "tls")
        stream = client.open()
        wish = matchmaking_pb2.GameWish(variant=common_pb2.VARIANT_TRIX)
        client.send(gateway_pb2.SessionRequest(find_match=gateway_pb2.FindMatchRequest(wish=wish)))

        async def matched() -> gateway_pb2.SessionResponse:
            async for m in stream:
                assert not m.HasField("error"), m.error
                if m.HasField("ticket") and m.ticket.state == matchmaking_pb2.TICKET_STATE_MATCHED:
                    return m
            raise AssertionError("the stream ended before a match")

        return await asyncio.wait_for(matched(), MATCH_DEADLINE_S)
    finally:
        await client.close()


def test_the_state_folder_holds_the_ca_and_every_nats_node_requires_tls(platform: EmbeddedPlatform) -> None:
    assert platform.ca_file is not None
    ca = Path(platform.ca_file)
    assert ca.is_file() and ca.parent == platform.supervisor.state_dir / "tls"
    assert "tls {" in (platform.supervisor.state_dir / "nats.conf").read_text()


def test_a_player_signs_in_through_the_edge_with_the_ca_and_is_matched(platform: EmbeddedPlatform) -> None:
    assert platform.ca_file is not None
    reply = asyncio.run(_matched(_edge_target(platform), platform.ca_file))
    assert reply.ticket.table_id


def test_every_service_answers_only_over_tls_with_the_ca(platform: EmbeddedPlatform, tmp_path: Path) -> None:
    assert platform.ca_file is not None
    stranger = tls.local_pki(tmp_path / "stranger").ca_cert
    for child in platform.supervisor.services:
        target = f"127.0.0.1:{child.grpc_port}"
        assert health_code(target, Path(platform.ca_file)) == grpc.StatusCode.OK, child.name
        assert health_code(target, None) == grpc.StatusCode.UNAVAILABLE, child.name
        assert health_code(target, stranger) == grpc.StatusCode.UNAVAILABLE, child.name
