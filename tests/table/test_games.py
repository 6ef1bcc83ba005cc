"""Full games of the four variants through the table service (real NATS, real gRPC,
the C engine), each checked for leaks (docs/rules.md §14) on every subject the gateway's
NATS user can read and on every seat stream of the gRPC API; the finished record
replays (trix.records) and passes `trix replay` and `trix verify`."""

from __future__ import annotations

import asyncio
import json
import random
import subprocess
import sys
from pathlib import Path

import grpc
import nats
import pytest

from conftest import InProcessTable
from support.leakcheck import check_own_copies, check_stream, merged_stream
from support.table import REPO, GatewayClient, create_request, play_until, read_served, record_of, token
from trix import engine, records
from trix.natsio import subjects
from trix.runtime.identity import TOKEN_METADATA
from trix.v1 import common_pb2, events_pb2, table_pb2, table_pb2_grpc

PLAYERS = ("alice", "bob", "carol", "dave")
SIM = common_pb2.DOUBLING_REVEAL_SIMULTANEOUS
SEQ = common_pb2.DOUBLING_REVEAL_SEQUENTIAL


async def grpc_stream(
    address: str, table_id: str, seat: int, after: int = 0, bots: tuple[int, ...] = ()
) -> list[bytes]:
    async with grpc.aio.insecure_channel(address) as channel:
        stub = table_pb2_grpc.TableServiceStub(channel)
        if seat == -1:
            md = ((TOKEN_METADATA, token("service", "admin")),)
            call = stub.StreamPublicEvents(
                table_pb2.StreamPublicEventsRequest(table_id=table_id, after_sequence=after), metadata=md, timeout=60
            )
        else:
            who = token("service", "admin") if seat in bots else token("player", PLAYERS[seat])
            md = ((TOKEN_METADATA, who),)
            call = stub.StreamSeatEvents(
                table_pb2.StreamSeatEventsRequest(table_id=table_id, seat=seat, after_sequence=after),
                metadata=md,
                timeout=60,
            )
        return [r.event.SerializeToString() async for r in call]


@pytest.mark.parametrize(
    ("variant", "reveal", "bots", "await_seeds"),
    [
        (common_pb2.VARIANT_TRIX, SEQ, (), False),
        (common_pb2.VARIANT_TRIX_PARTNERSHIP, SIM, (1,), True),
        (common_pb2.VARIANT_COMPLEX, SIM, (), True),
        (common_pb2.VARIANT_COMPLEX_PARTNERSHIP, SEQ, (3,), False),
    ],
    ids=["trix", "trix-partnership", "complex", "complex-partnership"],
)
async def test_full_game_without_leaks(
    tmp_path: Path,
    table_service: InProcessTable,
    gateway: GatewayClient,
    variant: int,
    reveal: int,
    bots: tuple[int, ...],
    await_seeds: bool,
) -> None:
    table_id = f"game-{variant}"
    seen: dict[int | None, list[bytes]] = {}

    async def collect(msg: nats.aio.msg.Msg) -> None:
        batch = events_pb2.TableEventBatch.FromString(msg.data)  # one batch per action (issue 16)
        seen.setdefault(None, []).extend(e.SerializeToString() for e in batch.events)
        for copies in batch.seats:
            seen.setdefault(copies.seat, []).extend(e.SerializeToString() for e in copies.events)

    # Everything the gateway's user may subscribe to, live, from before the table exists.
    await gateway.nc.subscribe(subjects.all_table_feeds(), cb=collect)
    options = common_pb2.TableOptions(doubling_reveal=reveal)
    request = create_request(table_id, variant, PLAYERS, options=options, bots=bots, await_seeds=await_seeds)
    reply = await gateway.request(table_id, table_pb2.TableCommand(create_table=request), token("service", "table"))
    assert len(reply.create_table.commitment) == 64
    sent = await play_until(gateway, table_id, PLAYERS, random.Random(variant))
    assert sent > 50

    stored = await read_served(gateway.nc.jetstream(), table_id)
    record = record_of(stored)
    assert record["players"] == [p if s not in bots else f"bot-{s}" for s, p in enumerate(PLAYERS)]
    result = records.replay(record, engine.Game, engine.Options)
    assert result.differences == [] and result.finished
    assert record["ranking"] is not None

    # §14 on every part of the feed the gateway read live, and on the gRPC streams (resume from 0).
    await gateway.nc.flush()
    await asyncio.sleep(0.2)
    simultaneous = reveal == SIM
    assert len(seen) == 5
    public = seen[None]
    check_stream(public, record, seat=None, simultaneous=simultaneous, where="public")
    merged: dict[int, list[bytes]] = {-1: public}
    for seat in range(4):
        own = seen[seat]
        check_own_copies(own, public, record, seat=seat, where=f"seat {seat}")
        merged[seat] = merged_stream(public, own)
        check_stream(merged[seat], record, seat=seat, simultaneous=simultaneous, where=f"merged {seat}")
    streams = await asyncio.gather(
        *(grpc_stream(table_service.address, table_id, s, bots=bots) for s in (-1, 0, 1, 2, 3))
    )
    for seat, messages in zip((-1, 0, 1, 2, 3), streams, strict=True):
        assert messages == merged[seat]
        check_stream(
            messages, record, seat=None if seat == -1 else seat, simultaneous=simultaneous, where=f"grpc {seat}"
        )
    resumed = await grpc_stream(table_service.address, table_id, 2, after=40)
    assert resumed == [m for m in streams[3] if _seq(m) > 40]

    # The finished record passes the record tools.
    path = tmp_path / "record.json"
    path.write_text(json.dumps(record))
    for tool in ("replay", "verify"):
        done = subprocess.run(  # noqa: ASYNC221 - the CLI is the thing tested, the loop has nothing else to do
            [sys.executable, "-m", "trix.cli", tool, str(path)],
            capture_output=True,
            text=True,
            cwd=REPO,
            env={"PYTHONPATH": str(REPO / "services")},
            timeout=120,
        )
        assert done.returncode == 0, (tool, done.stderr)


def _seq(data: bytes) -> int:
    from trix.v1 import events_pb2

    return events_pb2.Event.FromString(data).sequence
