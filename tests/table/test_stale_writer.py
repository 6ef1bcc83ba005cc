"""A stale owner of a table can never append after a newer one (issue 19, fencing by writer
epoch): two replicas' table services on one real JetStream log, the old owner still
believing it holds the table (its lease was taken and it has not heard: a paused process, a
partition, a deaf watcher) while the new owner, under a newer lease epoch, plays on.

The old owner's next command meets the log's expected-sequence check, reloads the table and
answers UNAVAILABLE; before the fence, its retry then appended after the new owner's entry
(the reload had given it the log's last sequence): two writers, epochs going back along the
log. Now the entry it would append after carries a newer epoch than its own, so it refuses,
forgets the table and gives the shard up; the new owner's log stays one writer at a time.
Real nats-server, the real `JetStreamStore`, the C engine."""

from __future__ import annotations

import random

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
TABLE = "fenced"


class Replica:
    """One replica's table service on its own NATS connection, writing as `<name>/<epoch>`."""

    def __init__(self, url: str, name: str, epoch: int) -> None:
        self.conn = NatsConnection(url, name)
        self.store = JetStreamStore(self.conn, lambda _table: f"{name}/{epoch}")
        self.fenced: list[str] = []
        self.service = TableService(
            TableConfig.from_env(table_env(url)),
            self.store,
            NatsSink(self.conn),
            may_write=lambda _table: True,
            on_stale_writer=self.fenced.append,
            new_seed=lambda: random.Random(7).randbytes(32),
        )

    async def start(self) -> Replica:
        await self.conn.connect(give_up_after_s=30)
        return self

    async def play(self, action_id: str) -> int:
        """The seat due plays its first legal move (as the gateway would send it)."""
        table = self.service.tables[TABLE]
        assert table.game is not None
        seat = table.to_act()[0]
        action = table.game.legal_actions(seat)[0]
        header = ActionHeader(TABLE, seat, action_id, table.sequence)
        return await self.service.act(Caller("player", PLAYERS[seat]), header, action)


async def test_a_stale_owner_never_appends_after_a_newer_owner(auth_nats: AuthNats) -> None:
    url = auth_nats.url("table")
    old = await Replica(url, "table-old", epoch=5).start()
    new = await Replica(url, "table-new", epoch=9).start()
    try:
        request = create_request(TABLE, common_pb2.VARIANT_TRIX, PLAYERS, seeds=("a", "b", "c", "d"))
        await old.service.create_table(Caller("service", "table"), request)
        await old.play("m1")

        # The shard changes hands: the new owner rebuilds the table from the log and plays on.
        await new.service.recover()
        await new.play("m2")

        # The old owner, not knowing, is asked to play: the log moved on, it reloads the table.
        with pytest.raises(Unavailable):
            await old.play("m3")
        # Asked again (the caller retries with the same action id): the fence, not an append.
        with pytest.raises(Unavailable, match="no longer owns"):
            await old.play("m3")
        assert old.fenced == [TABLE]
        assert TABLE not in old.service.tables

        await new.play("m3")  # the retry reaches the owner
        log = await read_log(new.conn.jetstream, TABLE)
        assert [i for i, _ in log] == ["create", "m1", "m2", "m3"]
        assert [w for _, w in log] == ["table-old/5"] * 2 + ["table-new/9"] * 2
    finally:
        for replica in (old, new):
            await replica.conn.drain()


async def test_a_new_owner_behind_the_log_catches_up_on_the_timers_word(auth_nats: AuthNats) -> None:
    """A cut-off owner's append in flight lands once the cut heals, after the new owner rebuilt
    the table and before it appended anything (nothing to fence yet: the entry before is the
    old owner's own); its events reach the timers, not the new owner. The timers' AutoAct for
    that newer turn makes the new owner reload the table and act. (It refused it as a stale
    turn, for good: in `make fault-nats`, a bot's turn that waited 21 s, or for ever.)"""
    url = auth_nats.url("table")
    old = await Replica(url, "table-old", epoch=5).start()
    new = await Replica(url, "table-new", epoch=9).start()
    try:
        request = create_request(TABLE, common_pb2.VARIANT_TRIX, PLAYERS, seeds=("a", "b", "c", "d"))
        await old.service.create_table(Caller("service", "table"), request)
        await old.play("m1")
        await new.service.recover()  # the shard changes hands: the new owner rebuilds the table
        await old.play("m2")  # the old owner's append in flight lands after that rebuild
        ahead = old.service.tables[TABLE]
        assert ahead.turn is not None and ahead.sequence > new.service.tables[TABLE].sequence
        seat = ahead.to_act()[0]

        # The timers heard the old owner's events: the turn they act on is newer than the new owner's table.
        sequence = await new.service.auto_act(Caller("service", "timers"), TABLE, seat, ahead.turn.seq)
        assert sequence > ahead.sequence
        log = await read_log(new.conn.jetstream, TABLE)
        assert [i for i, _ in log] == ["create", "m1", "m2", f"auto-{ahead.turn.seq}-{seat}"]
        assert [w for _, w in log] == ["table-old/5"] * 3 + ["table-new/9"]  # one writer at a time
    finally:
        for replica in (old, new):
            await replica.conn.drain()
