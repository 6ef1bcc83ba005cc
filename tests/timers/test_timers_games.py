"""Whole games with the real clock and short timers (docs/rules.md §9, §10): the table service
and the timers service in-process, real NATS with per-service users, real gRPC, the C
engine. A player who never acts is auto-played to the end; a paid table whose player
does not come back ends at once with the §10 ranking; a free table hands the seat to a
bot and gives it back when the player reconnects; too many timeouts in a row is a leave."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import UTC

import grpc
import pytest
from timers_support import KEYS, Client_, InProcessTable, InProcessTimers, fast_options, token

from support.nats import AuthNats
from support.waiting import eventually
from trix.runtime.identity import IDENTITY_METADATA, verify
from trix.timers.clock import SystemClock
from trix.v1 import common_pb2, events_pb2, timers_pb2, timers_pb2_grpc
from trix.v1.events_pb2 import LEAVE_REASON_GRACE_EXPIRED, LEAVE_REASON_TIMEOUTS

PLAYERS = ("alice", "bob", "carol", "dave")
DECISIONS = ("contract_chosen", "double_answered", "card_played")


@pytest.fixture
async def services(auth_nats: AuthNats) -> AsyncIterator[tuple[InProcessTable, InProcessTimers]]:
    clock = SystemClock()
    table = InProcessTable(auth_nats.url("table"), clock)
    timers = InProcessTimers(auth_nats.url("timers"), clock, "timers-1")
    await table.start()
    await timers.start()
    try:
        yield table, timers
    finally:
        await timers.stop()
        await table.stop()


def decisions_of(client: Client_, table_id: str, seat: int) -> list[events_pb2.Event]:
    out = []
    for e in client.events.get(table_id, []):
        kind = e.WhichOneof("body")
        if (kind in ("contract_chosen", "card_played") and getattr(e, kind).seat == seat) or (
            kind == "double_answered" and e.double_answered.answer.seat == seat
        ):
            out.append(e)
    return out


async def stat_is(timers: InProcessTimers, name: str, value: int) -> None:
    """The timers record the table's answer just after the table publishes its events."""

    async def check() -> bool:
        return bool(timers.stats[name] == value)

    await eventually(check, 10, f"{name} == {value} (have {dict(timers.stats)})")


def automatic(e: events_pb2.Event) -> bool:
    return bool(getattr(e, e.WhichOneof("body") or "").automatic)


async def test_a_player_who_never_acts_is_auto_played_to_the_end(
    services: tuple[InProcessTable, InProcessTimers], client: Client_
) -> None:
    _, timers = services
    tid = "silent"
    options = fast_options(40, max_timeouts_in_a_row=10_000)
    await client.create(tid, PLAYERS, bots=(1, 2, 3), options=options)
    ended = await eventually(lambda: client.of(tid, "game_ended"), 90, "the end of the game")
    assert len(ended[0].game_ended.ranking) == 4
    mine = decisions_of(client, tid, 0)
    assert len(mine) > 60 and all(automatic(e) for e in mine)  # every one of his decisions auto-played
    await stat_is(timers, "auto_accepted", len(mine))
    assert timers.stats["auto_refused"] == 0
    # Each turn event carries its deadline (the client's countdown): started + 40 ms.
    for e in client.of(tid, "turn_started"):
        if not e.turn_started.client_seeds:
            started = e.time.ToDatetime(tzinfo=UTC).timestamp()
            assert e.turn_started.deadline.ToDatetime(tzinfo=UTC).timestamp() == pytest.approx(started + 0.04)
    # The lateness of each firing after its deadline stays small.
    assert timers.service is not None
    lateness = sorted(timers.service.lateness_s)
    assert lateness[len(lateness) // 2] < 0.25


@pytest.mark.parametrize("variant", [common_pb2.VARIANT_COMPLEX, common_pb2.VARIANT_COMPLEX_PARTNERSHIP])
async def test_paid_table_ends_with_the_leaver_ranked_last(
    services: tuple[InProcessTable, InProcessTimers], client: Client_, variant: int
) -> None:
    _, timers = services
    tid = f"paid-{variant}"
    options = fast_options(30, max_timeouts_in_a_row=10_000, leave_grace_s=1)
    await client.create(tid, PLAYERS, variant=variant, options=options, stake=100)
    await eventually(lambda: client.of(tid, "deal_scored"), 60, "the first deal")
    await client.presence("carol", connected=False)  # seat 2 disconnects and never comes back
    left = await eventually(lambda: client.of(tid, "seat_left"), 20, "the leave")
    ended = await eventually(lambda: client.of(tid, "game_ended"), 20, "the end")
    assert left[0].seat_left.seat == 2 and left[0].seat_left.reason == LEAVE_REASON_GRACE_EXPIRED
    game = ended[0].game_ended
    assert game.left_seat == 2
    # §10: only finished deals count; the leaver is last (with his partner in partnership).
    finished = [e.deal_scored for e in client.of(tid, "deal_scored") if e.sequence < left[0].sequence]
    totals = list(finished[-1].totals.values)
    ranking = list(game.ranking)
    if variant == common_pb2.VARIANT_COMPLEX_PARTNERSHIP:
        assert ranking == [2, 1, 2, 1]  # seats 0 and 2 together last
    else:
        assert ranking[2] == 4
        others = [s for s in range(4) if s != 2]
        for s in others:
            assert ranking[s] == 1 + sum(1 for o in others if totals[o] > totals[s])  # shared places, 1..3
    # Seat 2 kept being auto-played while his grace ran (§10).
    assert any(automatic(e) for e in decisions_of(client, tid, 2))
    await stat_is(timers, "leave_accepted", 1)


async def test_free_table_gives_the_seat_to_a_bot_and_back(
    services: tuple[InProcessTable, InProcessTimers], client: Client_
) -> None:
    _, timers = services
    tid = "free"
    options = fast_options(40, max_timeouts_in_a_row=10_000, leave_grace_s=1)
    await client.create(tid, PLAYERS, bots=(2, 3), options=options)
    await client.presence("alice", connected=False)
    left = await eventually(lambda: client.of(tid, "seat_left"), 20, "the leave")
    assert left[0].seat_left.seat == 0 and left[0].seat_left.reason == LEAVE_REASON_GRACE_EXPIRED
    to_bot = await eventually(lambda: client.of(tid, "seat_control_changed"), 5, "the bot")
    assert to_bot[0].seat_control_changed.bot and to_bot[0].seat_control_changed.seat == 0
    assert not client.of(tid, "game_ended")  # the game goes on

    # While the bot holds the seat, no turn waits for seat 0: the bot plays at once.
    await eventually(lambda: len(client.of(tid, "turn_started")) > 0, 5, "turns")
    mark = len(client.events[tid])
    await eventually(lambda: len(client.events[tid]) > mark + 30, 20, "more play")

    # With the timers' gRPC API: his presence as the timers see it.
    async with grpc.aio.insecure_channel(timers.address) as channel:
        stub = timers_pb2_grpc.TimersServiceStub(channel)
        ask = timers_pb2.GetPresenceRequest(player_id="alice")
        for refused in ((), ((IDENTITY_METADATA, token("player", "alice")),)):  # no token, a player's
            with pytest.raises(grpc.aio.AioRpcError) as err:
                await stub.GetPresence(ask, metadata=refused, timeout=5)
            assert err.value.code() == grpc.StatusCode.UNAUTHENTICATED
        service_token = ((IDENTITY_METADATA, token("service", "admin")),)
        presence = await stub.GetPresence(ask, metadata=service_token, timeout=5)
        assert not presence.connected
        deadlines = await stub.ListDeadlines(timers_pb2.ListDeadlinesRequest(table_id=tid), timeout=5)
        assert all(d.seat != 0 for d in deadlines.deadlines)

    await client.presence("alice", connected=True)  # he comes back and reclaims his seat
    back = await eventually(
        lambda: [e for e in client.of(tid, "seat_control_changed") if not e.seat_control_changed.bot], 20, "reclaim"
    )
    assert back[0].seat_control_changed.seat == 0
    await eventually(
        lambda: [
            e for e in client.of(tid, "turn_started") if e.sequence > back[0].sequence and 0 in e.turn_started.seats
        ],
        20,
        "a turn of seat 0 again",
    )
    await eventually(lambda: client.of(tid, "game_ended"), 90, "the end of the game")
    await stat_is(timers, "leave_accepted", 1)
    await stat_is(timers, "reclaim_accepted", 1)


async def test_too_many_timeouts_in_a_row_is_a_leave(
    services: tuple[InProcessTable, InProcessTimers], client: Client_
) -> None:
    tid = "sleepy"
    options = fast_options(40, max_timeouts_in_a_row=2, leave_grace_s=0)
    await client.create(tid, PLAYERS, bots=(1, 2, 3), options=options)
    left = await eventually(lambda: client.of(tid, "seat_left"), 20, "the leave")
    assert left[0].seat_left.seat == 0 and left[0].seat_left.reason == LEAVE_REASON_TIMEOUTS
    before = [e for e in decisions_of(client, tid, 0) if e.sequence < left[0].sequence]
    # Two timeouts in a row make the leave; a third deadline may pass while it is in flight.
    assert 2 <= len(before) <= 3 and all(automatic(e) for e in before)


def test_the_table_accepts_the_timers_own_token() -> None:
    caller = verify(KEYS.keys("table"), KEYS.keys("timers").signer("timers").token(1_000.0), 1_000.0)
    assert caller.is_service and caller.name == "timers"
