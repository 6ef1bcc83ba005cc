"""Issue 42, finding 5: a private table says so in its TableCreated, so scoring keeps its
standings (and later its record and history rows) for its players. Real nats-server, the table
and scoring services in-process."""

from __future__ import annotations

import asyncio
import time

import grpc
import pytest

from conftest import InProcessScoring, InProcessTable
from support.table import GatewayClient, create_request, token
from trix.runtime.identity import IDENTITY_METADATA
from trix.v1 import common_pb2, scoring_pb2, table_pb2

PLAYERS = ("pia", "quo", "rex", "sol")


def player_metadata(player_id: str) -> tuple[tuple[str, str], ...]:
    return ((IDENTITY_METADATA, token("player", player_id)),)


async def test_a_private_tables_standings_are_read_by_its_players_only(
    table_service: InProcessTable, scoring: InProcessScoring, gateway: GatewayClient
) -> None:
    stub = await scoring.start()
    t = "private-results"
    request = create_request(t, common_pb2.VARIANT_TRIX, PLAYERS)
    request.private_table = True
    await gateway.request(t, table_pb2.TableCommand(create_table=request), token("service", "table"))
    ask = scoring_pb2.GetStandingsRequest(table_id=t)
    deadline = time.monotonic() + 30
    while True:  # scoring has applied the TableCreated
        try:
            await stub.GetStandings(ask, metadata=player_metadata(PLAYERS[2]))
            break
        except grpc.aio.AioRpcError as err:
            assert err.code() == grpc.StatusCode.NOT_FOUND and time.monotonic() < deadline, err
            await asyncio.sleep(0.1)
    for metadata in ((), player_metadata("outsider")):
        with pytest.raises(grpc.aio.AioRpcError) as refused:
            await stub.GetStandings(ask, metadata=metadata)
        assert refused.value.code() == grpc.StatusCode.PERMISSION_DENIED
