"""A table whose append meets a log conflict catches up from the table it holds (issue 42): it
reads only the entries appended after its own, not its snapshot and every entry since. After
a stopped NATS leader came back, such reloads read 200+ entries one by one (0.85-1.2 s) before
the game went on. Two table services on one real JetStream log writing as the same owner (an
earlier attempt of this replica stored while its ack was lost looks the same to the log), the
real `JetStreamStore` counting what it reads, the C engine."""

from __future__ import annotations

import random
from collections.abc import AsyncIterator

import pytest

from support.nats import AuthNats
from support.table import create_request, read_log, table_env
from trix.errors import Unavailable
from trix.natsio.connection import NatsConnection
from trix.runtime.identity import Caller
from trix.table.adapters import JetStreamStore, NatsSink
from trix.table.config import TableConfig
from trix.table.service import ActionHeader, TableService
from trix.v1 import common_pb2

PLAYERS = ("ann", "ben", "cat", "dan")
TABLE = "conflict"


class CountingStore(JetStreamStore):
    """The real store, counting the snapshots and log entries it reads."""

    snapshots = 0
    entries = 0

    async def get_snapshot(self, table_id: str) -> bytes | None:
        self.snapshots += 1
        return await super().get_snapshot(table_id)

    async def read_log(self, table_id: str, after: int) -> AsyncIterator[tuple[int, bytes]]:
        async for seq, data in super().read_log(table_id, after):
            self.entries += 1
            yield seq, data


async def _service(url: str, name: str) -> tuple[NatsConnection, CountingStore, TableService]:
    conn = NatsConnection(url, name)
    await conn.connect(give_up_after_s=30)
    store = CountingStore(conn, lambda _table: "table-a/9")
    service = TableService(
        TableConfig.from_env(table_env(url)),
        store,
        NatsSink(conn),
        may_write=lambda _table: True,
        on_stale_writer=lambda _table: None,
        new_seed=lambda: random.Random(7).randbytes(32),
    )
    return conn, store, service


async def _play(service: TableService, action_id: str) -> int:
    table = service.tables[TABLE]
    assert table.game is not None
    seat = table.to_act()[0]
    header = ActionHeader(TABLE, seat, action_id, table.sequence)
    return await service.act(Caller("player", PLAYERS[seat]), header, table.game.legal_actions(seat)[0])


async def test_a_log_conflict_reads_only_the_entries_after_the_table_it_holds(auth_nats: AuthNats) -> None:
    url = auth_nats.url("table")
    conn, store, service = await _service(url, "table-a")
    other_conn, _, other = await _service(url, "table-a-again")
    try:
        request = create_request(TABLE, common_pb2.VARIANT_TRIX, PLAYERS, seeds=("a", "b", "c", "d"))
        await service.create_table(Caller("service", "table"), request)
        for i in range(6):
            await _play(service, f"m{i}")
        await other.recover()
        await _play(other, "x1")  # appended behind this service's back (its lost ack, as the log sees it)
        store.snapshots = store.entries = 0

        with pytest.raises(Unavailable, match="moved on"):
            await _play(service, "m6")  # the log moved on: caught up, the caller retries

        assert store.snapshots == 0  # not rebuilt from the snapshot...
        assert store.entries == 1  # ...but from the table it held: the one entry after it
        await _play(service, "m6")  # the retry is applied after it
        log = await read_log(conn.jetstream, TABLE)
        assert [i for i, _ in log] == ["create", *(f"m{i}" for i in range(6)), "x1", "m6"]
    finally:
        await conn.drain()
        await other_conn.drain()
