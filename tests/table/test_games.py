"""Full games of the four variants through the table service (real NATS, gRPC, C engine)."""

from __future__ import annotations

import random

import pytest
from table_support import GatewayClient, create_request, play_until, read_subject, record_of, token

from trix import engine, records
from trix.natsio import subjects
from trix.v1 import common_pb2, table_pb2

PLAYERS = ("alice", "bob", "carol", "dave")


@pytest.mark.parametrize(
    ("variant", "reveal"),
    [
        (common_pb2.VARIANT_COMPLEX, common_pb2.DOUBLING_REVEAL_SEQUENTIAL),
    ],
)
async def test_full_game(table_service: object, gateway: GatewayClient, variant: int, reveal: int) -> None:
    table_id = f"g{variant}"
    options = common_pb2.TableOptions(doubling_reveal=reveal)
    create = table_pb2.TableCommand(create_table=create_request(table_id, variant, PLAYERS, options=options))
    reply = await gateway.request(table_id, create, token("service", "matchmaking"))
    assert len(reply.create_table.commitment) == 64
    sent = await play_until(gateway, table_id, PLAYERS, random.Random(variant))
    assert sent > 50
    events = await read_subject(gateway.nc.jetstream(), subjects.public_events(table_id))
    record = record_of(events)
    result = records.replay(record, engine.Game, engine.Options)
    assert result.differences == []
    assert record["totals"] == result.record["totals"]
