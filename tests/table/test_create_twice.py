"""A table created twice keeps the seed its log was made with (issue 19, docs/rules.md §11).

A create runs again when its first attempt's answer was lost: its MatchFormed is delivered
again (the first attempt's log entry still in process on a NATS cluster's leader, or stored
with its ack lost). The second attempt made a new server seed and wrote it over the first
one, then found the create entry in the log (a duplicate message id) and reloaded the table:
with the new seed under the first seed's commitment. Its deals were not the ones played, the
table's next rebuild failed ("not your turn"), and the game never finished (the 120-fault run
of `make fault-nats`). Now the seed is stored by compare-and-set: the first stored is the
table's, and every attempt makes the same create entry.

Two replicas' table services creating one table at once (the race of a create and its
redelivery), a third rebuilding it from the log: real nats-server, the real `JetStreamStore`,
the C engine."""

from __future__ import annotations

import asyncio

from support.nats import AuthNats
from support.table import create_request, table_env
from trix import fairness
from trix.natsio.connection import NatsConnection
from trix.runtime.identity import Caller
from trix.table.adapters import JetStreamStore, NatsSink
from trix.table.config import TableConfig
from trix.table.service import ActionHeader, TableService
from trix.v1 import common_pb2

PLAYERS = ("ann", "ben", "cat", "dan")
TABLE = "created-twice"
ON_MATCH = Caller("service", "table")  # its MatchFormed consumer, in its own name


class Replica:
    """One replica's table service on its own NATS connection, with its own seeds."""

    def __init__(self, url: str, name: str, seed_byte: int) -> None:
        self.conn = NatsConnection(url, name)
        self.store = JetStreamStore(self.conn, lambda _table: f"{name}/1")
        self.service = TableService(
            TableConfig.from_env(table_env(url)),
            self.store,
            NatsSink(self.conn),
            may_write=lambda _table: True,
            on_stale_writer=lambda _table: None,
            new_seed=lambda: bytes([seed_byte]) * 32,
        )

    async def start(self) -> Replica:
        await self.conn.connect(give_up_after_s=30)
        return self


async def test_a_table_created_twice_at_once_keeps_the_seed_its_log_was_made_with(auth_nats: AuthNats) -> None:
    url = auth_nats.url("table")
    first, again, rebuilt = [await Replica(url, f"table-{n}", b).start() for n, b in (("a", 1), ("b", 2), ("c", 3))]
    try:
        request = create_request(TABLE, common_pb2.VARIANT_TRIX, PLAYERS, seeds=("a", "b", "c", "d"))
        one, two = await asyncio.gather(
            first.service.create_table(ON_MATCH, request), again.service.create_table(ON_MATCH, request)
        )
        assert one.commitment == two.commitment  # one table, one seed
        seed = await rebuilt.store.get_secret(TABLE)
        assert seed is not None and fairness.commitment(seed) == one.commitment

        # Rebuilt from its log by another replica, the table is the one both answered for:
        # its deals are those of that seed, and play goes on from it.
        await rebuilt.service.recover()
        table = rebuilt.service.tables[TABLE]
        assert table.commitment == one.commitment
        for n in range(3):
            assert table.game is not None
            seat = table.to_act()[0]
            action = table.game.legal_actions(seat)[0]
            header = ActionHeader(TABLE, seat, f"m{n}", table.sequence)
            await rebuilt.service.act(Caller("player", PLAYERS[seat]), header, action)
            table = rebuilt.service.tables[TABLE]
    finally:
        for replica in (first, again, rebuilt):
            await replica.conn.drain()
