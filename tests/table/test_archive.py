"""Finished tables' private data expires once scoring has archived their record (issue 4,
ADR 0003): a whole game with the real scoring service (its own NATS user), then the table's
log, snapshot and server seed are gone while scoring still serves the record; the signal
waits for a stopped scoring and survives a restart of the table service; a signal for a
running table is refused, and only scoring's NATS user may send one."""

from __future__ import annotations

import asyncio
import json
import random

import nats
import pytest

from conftest import InProcessScoring, InProcessTable
from support.nats import AuthNats
from support.table import CommandError, GatewayClient, create_request, play_until, read_served, record_of, token
from support.waiting import eventually
from trix import engine, records
from trix.natsio import subjects
from trix.natsio.permissions import inbox_prefix
from trix.table.entrypoints import ARCHIVE_CONSUMER
from trix.v1 import common_pb2, events_pb2, scoring_pb2, table_pb2

PLAYERS = ("ann", "ben", "cat", "don")
ADMIN = token("service", "admin")
BOTS = (1, 2, 3)  # one human seat: a whole game in a few seconds


async def private_counts(js: nats.js.JetStreamContext, table_id: str) -> tuple[int, int, int]:
    """Messages stored on the table's log, snapshot and secret subjects."""
    out = []
    for stream, subject in (
        ("TABLE_LOG", subjects.table_log(table_id)),
        ("TABLE_SNAPSHOTS", subjects.table_snapshot(table_id)),
        ("KV_table_secrets", f"$KV.table_secrets.{table_id}"),
    ):
        info = await js.stream_info(stream, subjects_filter=subject)
        out.append(int((info.state.subjects or {}).get(subject, 0)))
    return out[0], out[1], out[2]


async def play_game(gateway: GatewayClient, table_id: str, seed: int) -> dict[str, object]:
    request = create_request(table_id, common_pb2.VARIANT_COMPLEX, PLAYERS, bots=BOTS, seeds=("s0", "", "", ""))
    await gateway.request(table_id, table_pb2.TableCommand(create_table=request), ADMIN)
    await play_until(gateway, table_id, PLAYERS, random.Random(seed))
    return record_of(await read_served(gateway.nc.jetstream(), table_id))


async def test_finished_table_log_and_snapshot_purged_once_scoring_archived_record(
    table_service: InProcessTable,
    scoring: InProcessScoring,
    gateway: GatewayClient,
    table_nc: nats.aio.client.Client,
) -> None:
    stub = await scoring.start()
    js = table_nc.jetstream()
    record = await play_game(gateway, "arch1", seed=3)
    assert record["fairness"]["server_seed"]  # type: ignore[index]

    async def purged() -> bool:
        return await private_counts(js, "arch1") == (0, 0, 0)

    await eventually(purged)
    # Scoring still serves the record, and it replays.
    served = await stub.GetGameRecord(scoring_pb2.GetGameRecordRequest(table_id="arch1"))
    assert json.loads(served.record_json) == record
    assert records.replay(record, engine.Game, engine.Options).differences == []
    # The owner still serves the finished game's events from memory (a reader's last gap).
    assert record_of(await read_served(gateway.nc.jetstream(), "arch1")) == record
    # The owner still answers views of the final state from memory (a client asking right
    # after GameEnded); nothing rebuilds the table after a restart (see the next test).
    assert (await gateway.view("arch1", 0, token("player", PLAYERS[0]))).finished


async def test_archive_waits_for_scoring_and_survives_table_restart(
    table_service: InProcessTable,
    scoring: InProcessScoring,
    gateway: GatewayClient,
    table_nc: nats.aio.client.Client,
) -> None:
    js = table_nc.jetstream()
    await play_game(gateway, "arch2", seed=5)
    await asyncio.sleep(0.5)
    log_count, snap_count, secret_count = await private_counts(js, "arch2")
    assert log_count > 0 and snap_count == 1 and secret_count == 1  # scoring is down: nothing archived
    await table_service.crash()  # the table service restarts: the finished table is rebuilt, still there
    await table_service.start()
    assert (await gateway.view("arch2", -1, ADMIN)).finished
    stub = await scoring.start()  # scoring consumes the GameEnded, stores the record, signals

    async def purged() -> bool:
        return await private_counts(js, "arch2") == (0, 0, 0)

    await eventually(purged)
    assert (await stub.GetGameRecord(scoring_pb2.GetGameRecordRequest(table_id="arch2"))).record_json
    # A repeated signal (scoring redelivering after a crash) is acknowledged and changes nothing.
    await scoring.stop()
    await table_service.crash()
    await table_service.start()
    scoring_nc = await nats.connect(scoring.env["TRIX_NATS_URL"], inbox_prefix=inbox_prefix("scoring").encode())
    try:
        body = events_pb2.RecordArchived(table_id="arch2", game_ended_sequence=1)
        await scoring_nc.jetstream().publish(subjects.record_archived("arch2"), body.SerializeToString())
    finally:
        await scoring_nc.close()

    async def drained() -> bool:
        info = await js.consumer_info("SCORING_ARCHIVED", ARCHIVE_CONSUMER)
        return info.num_pending == 0 and info.num_ack_pending == 0

    await eventually(drained)
    assert await private_counts(js, "arch2") == (0, 0, 0)
    # After the restart the purged table is gone from the table service (scoring has the record).
    with pytest.raises(CommandError) as info:
        await gateway.view("arch2", -1, ADMIN)
    assert info.value.kind == "NotFound"


async def test_archive_signal_for_running_table_refused_and_only_scoring_may_send_it(
    auth_nats: AuthNats, table_service: InProcessTable, gateway: GatewayClient, table_nc: nats.aio.client.Client
) -> None:
    js = table_nc.jetstream()
    request = create_request("arch3", common_pb2.VARIANT_COMPLEX, PLAYERS, bots=BOTS)
    await gateway.request("arch3", table_pb2.TableCommand(create_table=request), ADMIN)
    await play_until(gateway, "arch3", PLAYERS, random.Random(9), max_actions=3)
    view = await gateway.view("arch3", -1, ADMIN)
    before = await private_counts(js, "arch3")
    body = events_pb2.RecordArchived(table_id="arch3", game_ended_sequence=view.sequence).SerializeToString()
    # Timers and matchmaking are refused by the server (they could not make the table purge anything).
    for user in ("timers", "matchmaking"):
        nc = await nats.connect(auth_nats.url(user), inbox_prefix=inbox_prefix(user).encode())
        try:
            with pytest.raises(Exception):  # noqa: B017 - refused: no PubAck (timeout) or permissions error
                await nc.jetstream(timeout=1.0).publish(subjects.record_archived("arch3"), body)
        finally:
            await nc.close()
    # Scoring may send it, but a running table is never purged.
    nc = await nats.connect(auth_nats.url("scoring"), inbox_prefix=inbox_prefix("scoring").encode())
    try:
        await nc.jetstream().publish(subjects.record_archived("arch3"), body)
    finally:
        await nc.close()

    async def drained() -> bool:
        info = await js.consumer_info("SCORING_ARCHIVED", ARCHIVE_CONSUMER)
        return info.num_pending == 0 and info.num_ack_pending == 0 and info.delivered.stream_seq >= 1

    await eventually(drained)
    assert await private_counts(js, "arch3") == before
    assert not (await gateway.view("arch3", -1, ADMIN)).finished
