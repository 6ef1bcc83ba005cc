"""Issue 39: a player waiting for a quick match is told how his queue looks (players found so
far, when bots fill in) instead of nothing, on WatchTicket when asked for. Real nats-server,
real gRPC on loopback, the matchmaking replica as it runs (its partition owner writes the
queue's count), an injected clock for the waits."""

from __future__ import annotations

import asyncio
import random
from collections.abc import AsyncIterator
from functools import partial

import pytest
from mm_support import config, identity, service_of, serving_replica

from support.clock import ManualClock
from support.nats import NatsServer
from trix.matchmaking.queue_status import QueueCount, QueueView, QueueWatch
from trix.matchmaking.records import Ticket
from trix.matchmaking.service import MatchmakingService
from trix.matchmaking.wishes import Wish
from trix.v1 import common_pb2
from trix.v1 import matchmaking_pb2 as mm
from trix.v1.matchmaking_pb2_grpc import MatchmakingServiceStub as Stub

pytestmark = pytest.mark.timeout(120)

BOT_FILL_S = 20.0


@pytest.fixture
async def replica(nats_server: NatsServer) -> AsyncIterator[tuple[Stub, ManualClock, MatchmakingService]]:
    clock = ManualClock()
    cfg = config(nats_server.url, bot_fill_after_s=BOT_FILL_S, ticket_ttl_s=300.0)
    runtime, channel, api = await serving_replica(cfg, partial(MatchmakingService, clock=clock, rng=random.Random(3)))
    try:
        yield api, clock, service_of(runtime)
    finally:
        await channel.close()
        await runtime.stop()


async def enqueue(api: Stub, player: str, stake: int | None = None) -> mm.Ticket:
    wish = mm.GameWish(variant=common_pb2.VARIANT_TRIX)
    if stake is not None:
        wish.stake.coins = stake
    reply = await api.EnqueueTicket(mm.EnqueueTicketRequest(player_id=player, wish=wish), metadata=identity(player))
    return reply.ticket


def seconds(ts: object) -> float:
    return ts.seconds + ts.nanos / 1e9  # type: ignore[attr-defined]


async def next_queue(stream: AsyncIterator[mm.WatchTicketResponse], want_players: int) -> mm.QueueStatus:
    """The first queue status saying `want_players` (tickets and earlier counts are skipped)."""
    async for reply in stream:
        if reply.HasField("queue") and reply.queue.players_waiting == want_players:
            return reply.queue
    raise AssertionError("the watch ended before the queue said so")


async def test_a_waiting_player_is_told_the_players_found_and_when_bots_fill_in(
    replica: tuple[Stub, ManualClock, MatchmakingService],
) -> None:
    api, clock, _ = replica
    first = await enqueue(api, "q0")
    start = clock()
    call = api.WatchTicket(mm.WatchTicketRequest(ticket_id=first.ticket_id, queue_status=True), metadata=identity("q0"))
    stream = call.__aiter__()
    opening = await asyncio.wait_for(stream.__anext__(), 10)
    assert opening.ticket.state == mm.TICKET_STATE_SEARCHING and not opening.HasField("queue")

    clock.advance(1.0)  # the queue has waited: its count is written from now on
    alone = await asyncio.wait_for(next_queue(stream, 1), 10)
    assert alone.ticket_id == first.ticket_id
    assert seconds(alone.bots_fill_at) == pytest.approx(start + BOT_FILL_S, abs=0.01)
    assert seconds(alone.bots_fill_at) - seconds(alone.server_time) == pytest.approx(BOT_FILL_S - 1.0, abs=0.01)

    await enqueue(api, "q1")
    await enqueue(api, "q2")
    clock.advance(1.0)  # a queue's count is written at most every half second
    three = await asyncio.wait_for(next_queue(stream, 3), 10)
    # Bots fill in when the oldest ticket of the queue has waited its time, not later.
    assert seconds(three.bots_fill_at) == pytest.approx(start + BOT_FILL_S, abs=0.01)

    clock.advance(BOT_FILL_S)  # the wait is over: bots fill the fourth seat
    rest = [r async for r in stream]  # the watch ends with the match
    assert rest and rest[-1].ticket.state == mm.TICKET_STATE_MATCHED and rest[-1].ticket.table_id


async def test_a_watch_that_does_not_ask_gets_the_ticket_states_only(
    replica: tuple[Stub, ManualClock, MatchmakingService],
) -> None:
    api, clock, _ = replica
    plain = await enqueue(api, "r0")
    clock.advance(1.0)
    await asyncio.sleep(0.8)  # the owner has written the queue's count by now
    quiet = api.WatchTicket(mm.WatchTicketRequest(ticket_id=plain.ticket_id), metadata=identity("r0"))
    stream = quiet.__aiter__()
    first = await asyncio.wait_for(stream.__anext__(), 10)
    assert first.ticket.state == mm.TICKET_STATE_SEARCHING
    await api.CancelTicket(mm.CancelTicketRequest(ticket_id=plain.ticket_id, player_id="r0"), metadata=identity("r0"))
    replies = [r async for r in stream]
    assert [r.ticket.state for r in replies] == [mm.TICKET_STATE_CANCELLED]
    assert not any(r.HasField("queue") for r in replies)


def test_a_paid_queue_names_no_bot_time_and_a_count_older_than_the_ticket_is_not_believed() -> None:
    watch = QueueWatch(store=None, clock=lambda: 100.0, bot_fill_after_s=BOT_FILL_S)  # type: ignore[arg-type]
    free = Ticket("00a", "p", Wish(variant=common_pb2.VARIANT_TRIX, options=()), created_at=90.0)
    paid = Ticket("00b", "p", Wish(variant=common_pb2.VARIANT_TRIX, options=(), stake=50), created_at=90.0)
    count = QueueCount(players=3, oldest=85.0, at=95.0)
    assert watch.view(free, count) == QueueView("00a", 3, 85.0 + BOT_FILL_S, 100.0)
    assert watch.view(paid, count).bots_at is None
    # Left behind by an owner that died before the queue emptied: the player alone.
    stale = QueueCount(players=3, oldest=10.0, at=20.0)
    assert watch.view(free, stale) == QueueView("00a", 1, 90.0 + BOT_FILL_S, 100.0)
