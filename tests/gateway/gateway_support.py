"""Helpers of the gateway tests: signed-in clients, seated players, forged tokens."""

from __future__ import annotations

import asyncio
import base64
import json
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

import grpc

from trix.client import GatewayClient
from trix.gateway.tokens import HmacTokens
from trix.v1 import common_pb2, gateway_pb2, matchmaking_pb2

LEAKY = ("Traceback", "Error(", "Exception", ".py", 'File "', "DecodeError", "KeyError", "AttributeError")


@dataclass
class Platform:
    target: str
    env: dict[str, str]
    state_dir: Path
    gateway_pid: int
    edge_url: str = ""
    """The Envoy edge in front of the gateway (gRPC-Web, HTTP/JSON)."""

    @property
    def token_key(self) -> bytes:
        return self.env["TRIX_GATEWAY_TOKEN_KEY"].encode()


def b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def forged_tokens(platform: Platform, player_id: str) -> dict[str, str]:
    """Every kind of bad token for `player_id`."""
    good, _ = HmacTokens(platform.token_key, 3600).issue(player_id, "x", 1.7e9 + 10**8)
    expired, _ = HmacTokens(platform.token_key, 60).issue(player_id, "x", 1_000_000_000)
    h, p, _sig = good.split(".")
    bad_sig = f"{h}.{p}.{b64(b'0' * 32)}"
    none_header = b64(json.dumps({"alg": "none", "typ": "JWT"}).encode())
    alg_none = f"{none_header}.{p}."
    other_key, _ = HmacTokens(b"k" * 32, 3600).issue(player_id, "x", 1.7e9 + 10**8)
    return {"expired": expired, "bad_signature": bad_sig, "alg_none": alg_none, "other_key": other_key}


async def signed_in(target: str, name: str, secret: str | None = None) -> GatewayClient:
    client = GatewayClient(target)
    await client.sign_in(secret or f"device-secret-of-{name}-0123456789", name)
    return client


@dataclass
class Seated:
    client: GatewayClient
    stream: AsyncIterator[gateway_pb2.SessionResponse]
    table_id: str
    seat: int


async def seated(target: str, name: str, variant: int = common_pb2.VARIANT_COMPLEX) -> Seated:
    """A player at a table (bots fill the other seats at once)."""
    client = await signed_in(target, name)
    stream = client.open()
    wish = matchmaking_pb2.GameWish(variant=variant)  # type: ignore[arg-type]
    client.send(gateway_pb2.SessionRequest(find_match=gateway_pb2.FindMatchRequest(wish=wish)))

    async def matched() -> Seated:
        async for m in stream:
            if m.HasField("ticket") and m.ticket.state == matchmaking_pb2.TICKET_STATE_MATCHED:
                return Seated(client, stream, m.ticket.table_id, m.ticket.seat)
            assert not m.HasField("error"), m.error
        raise AssertionError("stream ended before a match")

    return await asyncio.wait_for(matched(), 30)


def auth(token: str) -> tuple[tuple[str, str], ...]:
    return (("authorization", f"Bearer {token}"),)


def assert_clean(details: str | None) -> None:
    text = details or ""
    for word in LEAKY:
        assert word not in text, text


async def status_of(call: object) -> grpc.StatusCode:
    try:
        await call  # type: ignore[misc]
    except grpc.aio.AioRpcError as err:
        assert_clean(err.details())
        return err.code()
    return grpc.StatusCode.OK
