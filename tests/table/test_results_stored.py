"""Every event appended to a table's log reaches TABLE_RESULTS exactly once, whatever fails
between the append and its publishing (issue 42). In `make fault-nats`, games that ended while
NATS elected a leader kept their last DealScored and their GameEnded in the table's log but
never stored them on TABLE_RESULTS: the end's write to the players' index timed out after the
state was swapped in, and the retried action was answered from the table's cached result.
A real nats-server (a stream made to fail as a leaderless one does: deleted, then declared again
as the provisioner does), the real store and sink, the C engine."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import random
import signal
from collections import Counter
from datetime import UTC, datetime

import nats
import nats.errors
import nats.js.errors

from support.nats import AuthNats
from support.processes import paused
from support.table import create_request, table_env
from support.waiting import eventually
from trix.errors import Unavailable
from trix.natsio import names, subjects
from trix.natsio.connection import NatsConnection
from trix.natsio.permissions import PROVISIONER, inbox_prefix
from trix.natsio.publish import RETRYABLE
from trix.natsio.stored import stored_messages
from trix.runtime.identity import Caller
from trix.table.adapters import RESULT_BODIES, JetStreamStore, NatsSink
from trix.table.config import TableConfig
from trix.table.service import ActionHeader, TableService
from trix.table.table import ALL, Table
from trix.v1 import common_pb2, events_pb2

PLAYERS = ("ann", "ben", "cat", "dan")
FAILED = (Unavailable, *RETRYABLE, nats.js.errors.APIError)
OUTAGE_S = 1.5


class StoreMeetingAnOutage(JetStreamStore):
    """The real store; when a game ends (its last entry appended, its players' index written
    next) the NATS server stops answering for `OUTAGE_S`, as a bucket whose leader died does
    (SIGSTOP, then SIGCONT)."""

    server_pid = 0

    async def end_player_table(self, player_id: str, table_id: str) -> None:
        if self.server_pid:
            pid, self.server_pid = self.server_pid, 0
            await paused(pid)  # every thread stopped before the write is sent (SIGSTOP alone: not yet)
            asyncio.get_running_loop().call_later(OUTAGE_S, os.kill, pid, signal.SIGCONT)
        await super().end_player_table(player_id, table_id)


async def _service(url: str, name: str) -> tuple[NatsConnection, TableService]:
    conn = NatsConnection(url, name, request_timeout_s=1.0)  # the index's write waits 1 s, not 5
    await conn.connect(give_up_after_s=30)
    service = TableService(
        TableConfig.from_env(table_env(url, TRIX_TABLE_SNAPSHOT_EVERY="5")),
        StoreMeetingAnOutage(conn, lambda _table: f"{name}/1"),
        NatsSink(conn),
        may_write=lambda _table: True,
        new_seed=lambda: random.Random(7).randbytes(32),
    )
    return conn, service


async def _play(service: TableService, table_id: str, actions: int, name: str = "a") -> ActionHeader | None:
    """Play the first legal action of the seat to act (`actions` of them at most, until the game
    ends) until one is not answered: its header, else None."""
    for i in range(actions):
        table = service.tables[table_id]
        if table.finished:
            return None
        assert table.game is not None
        seat = table.to_act()[0]
        header = ActionHeader(table_id, seat, f"{name}{i}", table.sequence)
        try:
            await service.act(Caller("player", PLAYERS[seat]), header, table.game.legal_actions(seat)[0])
        except FAILED:
            return header
    return None


async def _create(service: TableService, table_id: str) -> None:
    request = create_request(table_id, common_pb2.VARIANT_TRIX, PLAYERS, seeds=("a", "b", "c", "d"))
    await service.create_table(Caller("service", "table"), request)


async def _results_in_log(service: TableService, table_id: str) -> list[int]:
    """The sequences of the results the table's log holds (replayed from its first entry)."""
    seed = await service.store.get_secret(table_id)
    assert seed is not None
    table: Table | None = None
    out: list[int] = []
    async for _, data in service.store.read_log(table_id, 0):
        entry = json.loads(data)
        table = table or Table.from_create(entry, seed)
        out += [
            r.event.sequence
            for r in table.apply_entry(entry, datetime.now(UTC), live=False)
            if r.audience == ALL and r.event.WhichOneof("body") in RESULT_BODIES
        ]
    return out


async def _stored_results(conn: NatsConnection, table_id: str) -> list[events_pb2.Event]:
    stored = stored_messages(conn, names.TABLE_RESULTS_STREAM, subjects.table_results(table_id))
    return [events_pb2.Event.FromString(msg.data) async for msg in stored]


async def test_a_game_ended_while_the_players_index_did_not_answer_stores_its_last_results_once(
    auth_nats: AuthNats,
) -> None:
    t = "ends-in-outage"
    conn, service = await _service(auth_nats.url("table"), "table-a")
    assert auth_nats.proc is not None and isinstance(service.store, StoreMeetingAnOutage)
    try:
        await _create(service, t)
        service.store.server_pid = auth_nats.proc.pid
        last = await _play(service, t, 2000)
        assert last is not None, "the game's end was answered"

        want = await _results_in_log(service, t)
        assert want and want[-1] > last.last_seen_sequence  # the refused action's results are in the log

        async def stored() -> list[int]:
            return [e.sequence for e in await _stored_results(conn, t)]

        got: list[int] = []

        async def all_stored() -> bool:
            got[:] = await stored()
            return got == want

        with contextlib.suppress(AssertionError):
            await eventually(all_stored, 15, "every result the log holds stored on TABLE_RESULTS", interval_s=0.2)
        assert got == want  # the game's last DealScored and its GameEnded too
        assert (await _stored_results(conn, t))[-1].WhichOneof("body") == "game_ended"

        await eventually(lambda: t in service.tables, 15, "the table back in memory, finished")
        assert service.tables[t].finished
        caller = Caller("player", PLAYERS[last.seat])
        assert await service.act(caller, last, 0) == service.tables[t].sequence  # the retry: its first result
        assert Counter(await stored()) == Counter(want)  # each once
    finally:
        os.kill(auth_nats.proc.pid, signal.SIGCONT)
        await service.unpublished.stop()
        await conn.drain()


async def test_results_a_stream_refused_are_stored_before_the_table_serves_again_and_by_its_next_owner(
    auth_nats: AuthNats,
) -> None:
    """TABLE_RESULTS refuses a deal's results (a real refusal: its messages made too large for
    it), then takes them again: the table stores them before its next entry (else a snapshot
    taken after would hide them from every rebuild), and a next owner, rebuilding from that
    snapshot after more refused results, stores what the stream lacks, each result once."""
    t = "results-refused"
    conn, service = await _service(auth_nats.url("table"), "table-a")
    next_conn, next_owner = await _service(auth_nats.url("table"), "table-b")
    admin = await nats.connect(auth_nats.url(PROVISIONER), inbox_prefix=inbox_prefix(PROVISIONER).encode())
    stream = (await admin.jetstream().stream_info(names.TABLE_RESULTS_STREAM)).config

    async def refusing(refused: bool) -> None:
        stream.max_msg_size = 8 if refused else -1
        await admin.jetstream().update_stream(stream)

    try:
        await _create(service, t)
        await refusing(True)
        refused = await _play(service, t, 2000)  # the first deal's end: its DealScored refused
        assert refused is not None
        await refusing(False)
        caller = Caller("player", PLAYERS[refused.seat])
        for _ in range(50):  # the caller's retry, answered once the table stored the results
            try:
                await service.act(caller, refused, 0)
                break
            except FAILED:
                await asyncio.sleep(0.1)
        assert await _play(service, t, 12, "b") is None  # past a snapshot
        await refusing(True)
        assert await _play(service, t, 2000, "c") is not None  # the next deal's end refused...
        service.forget(lambda _t: True)  # ...and the shard moves before the owner stored it
        await refusing(False)
        await next_owner.ensure_loaded(t)
        assert await _play(next_owner, t, 2000, "d") is None  # the game goes on to its end

        want = await _results_in_log(next_owner, t)
        got = [e.sequence for e in await _stored_results(conn, t)]
        assert next_owner.tables[t].finished
        assert got == want  # every result the log holds, in order, once
    finally:
        await admin.close()
        for one in (service, next_owner):
            await one.unpublished.stop()
        await conn.drain()
        await next_conn.drain()
