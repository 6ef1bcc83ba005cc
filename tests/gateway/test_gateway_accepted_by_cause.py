"""A seat action's fresh acceptance reaches the gateway once, as the cause on its feed batch
(issue 16): the gateway's `NatsTables` ends the command there, and the table sends no reply
to it. Errors and repeated action ids are still answered; a gateway that does not receive the
table's feed asks as before; and a batch that never comes costs one attempt's wait,
then the table answers the same action id as a repeat (applied once). Real nats-server with the
services' users, the real table service (C engine) behind `trix.table.codec.handle_command` on
the table's command subject, with `trix.table.entrypoints.answer_command`, as `ShardRouter` answers it."""

from __future__ import annotations

import asyncio
import random
import time
from collections.abc import AsyncIterator

import pytest
from nats.aio.msg import Msg

from support.nats import AuthNats
from support.table import KEYS, choose_move, create_request, read_log, table_env
from trix.errors import DomainError
from trix.gateway.adapters import COMMAND_ATTEMPT_S, NatsTables
from trix.natsio import subjects
from trix.natsio.connection import NatsConnection
from trix.runtime.identity import Caller
from trix.table.adapters import JetStreamStore, NatsSink
from trix.table.config import TableConfig
from trix.table.entrypoints import answer_command
from trix.table.service import TableService
from trix.v1 import common_pb2, table_pb2

PLAYERS = ("ann", "ben", "cat", "dan")
TABLE = "bycause"


class Owner:
    """The table service answering its shard's commands with the owner's own code
    (`trix.table.entrypoints.answer_command`, what `ShardRouter` runs), counting its replies."""

    def __init__(self, conn: NatsConnection, service: TableService) -> None:
        self.conn = conn
        self.service = service
        self.replies = 0

    async def answer(self, msg: Msg) -> None:
        if await answer_command(self.service, msg) is not None:
            self.replies += 1


@pytest.fixture
async def owner(auth_nats: AuthNats) -> AsyncIterator[tuple[Owner, NatsTables]]:
    table_url = auth_nats.url("table")
    table_conn = NatsConnection(table_url, "table-a")
    gateway_conn = NatsConnection(auth_nats.url("gateway"), "gateway-a")
    await table_conn.connect(give_up_after_s=30)
    await gateway_conn.connect(give_up_after_s=30)
    service = TableService(
        TableConfig.from_env(table_env(table_url)),
        JetStreamStore(table_conn, lambda _table: "table-a/1"),
        NatsSink(table_conn),
        may_write=lambda _table: True,
        on_stale_writer=lambda _table: None,
        new_seed=lambda: random.Random(11).randbytes(32),
    )
    table = Owner(table_conn, service)
    sub = await table_conn.client.subscribe(
        subjects.table_commands_of_shard(subjects.table_shard(TABLE)), cb=table.answer
    )
    try:
        request = create_request(TABLE, common_pb2.VARIANT_TRIX, PLAYERS, seeds=("a", "b", "c", "d"))
        await service.create_table(Caller("service", "table"), request)
        yield table, NatsTables(gateway_conn, KEYS.player, timeout_s=5.0)
    finally:
        await sub.unsubscribe()
        await gateway_conn.drain()
        await table_conn.drain()


async def _move(tables: NatsTables, service: TableService) -> tuple[int, table_pb2.TableCommand, str]:
    seat = service.tables[TABLE].to_act()[0]
    ask = table_pb2.TableCommand(get_seat_view=table_pb2.GetSeatViewRequest(table_id=TABLE, seat=seat))
    view = (await tables.command(TABLE, ask, PLAYERS[seat])).get_seat_view.view
    move = choose_move(view, random.Random(view.sequence))
    assert move is not None
    kind = move.WhichOneof("command")
    assert kind is not None
    return seat, move, getattr(move, kind).header.action_id


async def _follow(tables: NatsTables, seat: int) -> asyncio.Task[None]:
    """A session's reader of the seat: the gateway now receives the table's feed."""

    async def read() -> None:
        async for _event in tables.events(TABLE, seat, PLAYERS[seat]):
            pass

    task = asyncio.ensure_future(read())
    for _ in range(200):
        if tables.feeds.live(TABLE):
            return task
        await asyncio.sleep(0.05)
    raise AssertionError("the table's feed was never subscribed")


async def test_a_fresh_acceptance_ends_the_command_on_its_cause_with_no_reply_from_the_table(
    owner: tuple[Owner, NatsTables],
) -> None:
    table, tables = owner
    service = table.service
    heard: list[tuple[str, int]] = []
    tables.hear_causes(lambda _t, cause, sequence: heard.append((cause.action_id, sequence)))
    seat, move, action_id = await _move(tables, service)
    reader = await _follow(tables, seat)
    try:
        replies = table.replies
        reply = await tables.command(TABLE, move, PLAYERS[seat], action_id=action_id)

        assert reply.sequence == service.tables[TABLE].sequence  # the action's last event
        assert heard == [(action_id, reply.sequence)]  # the session heard the same cause
        assert service.announced_only == 1 and table.replies == replies  # nothing else was sent

        # The same action id again: a repeat, answered by the table with its first result.
        again = await tables.command(TABLE, move, PLAYERS[seat], action_id=action_id)
        assert again.sequence == reply.sequence
        assert service.announced_only == 1 and table.replies == replies + 1

        # An error is answered too (a seat whose turn it is not), and changes nothing.
        _, other, _ = await _move(tables, service)
        kind = other.WhichOneof("command")
        assert kind is not None
        idle = next(s for s in range(4) if s not in service.tables[TABLE].to_act())
        getattr(other, kind).header.seat = idle
        getattr(other, kind).header.action_id = "not-my-turn"
        sequence = service.tables[TABLE].sequence
        with pytest.raises(DomainError, match="turn"):
            await tables.command(TABLE, other, PLAYERS[idle], action_id="not-my-turn")
        assert service.tables[TABLE].sequence == sequence and service.announced_only == 1
        log = await read_log(table.conn.jetstream, TABLE)
        assert [i for i, _ in log].count(action_id) == 1  # applied once
    finally:
        reader.cancel()
        await asyncio.gather(reader, return_exceptions=True)


async def test_a_gateway_that_does_not_receive_the_tables_feed_is_answered_by_the_table(
    owner: tuple[Owner, NatsTables],
) -> None:
    table, tables = owner
    seat, move, action_id = await _move(tables, table.service)
    assert not tables.feeds.live(TABLE)
    replies = table.replies
    reply = await tables.command(TABLE, move, PLAYERS[seat], action_id=action_id)
    assert reply.sequence == table.service.tables[TABLE].sequence
    assert table.service.announced_only == 0 and table.replies == replies + 1


async def test_a_lost_feed_batch_costs_one_attempt_then_the_repeat_is_answered_and_applied_once(
    owner: tuple[Owner, NatsTables],
) -> None:
    table, tables = owner
    seat, move, action_id = await _move(tables, table.service)
    reader = await _follow(tables, seat)
    try:
        # The gateway believes it receives the table's feed, but NATS no longer
        # delivers them to it (what a batch lost on the way looks like from here).
        feed = tables.feeds._feeds[subjects.table_feed(TABLE)]
        assert feed.opened is not None
        await (await feed.opened).unsubscribe()
        t0 = time.monotonic()
        reply = await tables.command(TABLE, move, PLAYERS[seat], action_id=action_id)
        waited = time.monotonic() - t0

        assert reply.sequence == table.service.tables[TABLE].sequence
        assert table.service.announced_only == 1  # the first attempt was not answered...
        assert COMMAND_ATTEMPT_S * 0.9 <= waited < COMMAND_ATTEMPT_S + 3.0  # ...the second was
        log = await read_log(table.conn.jetstream, TABLE)
        assert [i for i, _ in log].count(action_id) == 1
    finally:
        reader.cancel()
        await asyncio.gather(reader, return_exceptions=True)
