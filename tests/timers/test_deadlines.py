"""Deadlines on an injected clock (docs/rules.md §9): the table and the timers share one
`ManualClock`, real NATS and the real table service with the C engine. Each kind of
decision fires at its deadline and not a millisecond before, exactly once; a human
move just before the deadline wins; a restart across a deadline fires once; two
replicas never fire the same deadline twice."""

from __future__ import annotations

import asyncio
import random
from datetime import UTC
from typing import Any

import pytest
from timers_support import Client_, InProcessTable, InProcessTimers, legal_move, token

from support.clock import ManualClock
from support.nats import AuthNats
from support.waiting import eventually
from trix.timers.ports import TableCommands
from trix.v1 import common_pb2, events_pb2, table_pb2

PLAYERS = ("alice", "bob", "carol", "dave")
TIMEOUT_S = {common_pb2.DECISION_CONTRACT: 15.0, common_pb2.DECISION_DOUBLE: 8.0, common_pb2.DECISION_CARD: 12.0}
NO_LEAVES = common_pb2.TableOptions(max_timeouts_in_a_row=1000)


async def turn_event(client: Client_, view: table_pb2.SeatView) -> events_pb2.Event:
    """The TurnStarted event of the view's current turn (it carries the deadline, docs/rules.md §9)."""

    def find() -> events_pb2.Event | None:
        for e in client.of(view.table_id, "turn_started"):
            if e.sequence == view.turn.turn_seq:
                return e
        return None

    found: events_pb2.Event = await eventually(find, 10, "the TurnStarted event")
    return found


def deadline_of(event: events_pb2.Event) -> float:
    return event.turn_started.deadline.ToDatetime(tzinfo=UTC).timestamp()


async def started(auth_nats: AuthNats, clock: ManualClock, *names: str, **env: str) -> tuple[InProcessTable, list[Any]]:
    table = InProcessTable(auth_nats.url("table"), clock)
    await table.start()
    replicas = [InProcessTimers(auth_nats.url("timers"), clock, name, **env) for name in names]
    for r in replicas:
        await r.start()
    return table, replicas


async def stop_all(table: InProcessTable, replicas: list[Any]) -> None:
    for r in replicas:
        await r.stop()
    await table.stop()


async def timers_know(timers: InProcessTimers, table_id: str, turn_seq: int) -> None:
    assert timers.service is not None
    service = timers.service

    async def seen() -> bool:
        try:
            pending = await service.pending_deadlines(table_id)
        except Exception:  # noqa: BLE001 - not created yet
            return False
        return any(d[2] == turn_seq for d in pending)

    await eventually(seen, 10, f"timers to see turn {turn_seq}")


@pytest.mark.parametrize("reveal", [common_pb2.DOUBLING_REVEAL_SEQUENTIAL, common_pb2.DOUBLING_REVEAL_SIMULTANEOUS])
async def test_every_decision_kind_fires_at_its_deadline_exactly_once(
    auth_nats: AuthNats, client: Client_, reveal: int
) -> None:
    clock = ManualClock()
    table, (timers,) = await started(auth_nats, clock, "solo")
    try:
        tid = f"kinds-{reveal}"
        options = common_pb2.TableOptions(doubling_reveal=reveal, max_timeouts_in_a_row=1000)
        await client.create(tid, PLAYERS, variant=common_pb2.VARIANT_COMPLEX, options=options)
        kinds: set[int] = set()
        several_at_once = False
        fired = 0
        for _ in range(200):
            view = await client.view(tid)
            turn = view.turn
            # The turn event carries the deadline (the client's countdown), docs/rules.md §9 defaults.
            ev = await turn_event(client, view)
            started_at = ev.time.ToDatetime(tzinfo=UTC).timestamp()
            assert deadline_of(ev) == pytest.approx(started_at + TIMEOUT_S[turn.decision], abs=1e-3)
            await timers_know(timers, tid, turn.turn_seq)
            clock.set(deadline_of(ev) - 0.005)
            await asyncio.sleep(0.05)
            assert (await client.view(tid)).sequence == view.sequence, "fired before the deadline"
            clock.set(deadline_of(ev) + 0.001)
            fired += len(turn.seats)

            async def moved(v: table_pb2.SeatView = view) -> bool:
                return (await client.view(tid)).turn.turn_seq != v.turn.turn_seq

            await eventually(moved, 10, "the auto-action")
            await eventually(lambda f=fired: _stat(timers, "auto_accepted", f), 10, "the recorded outcome")
            kinds.add(turn.decision)
            several_at_once |= turn.decision == common_pb2.DECISION_DOUBLE and len(turn.seats) > 1
            want_several = reveal == common_pb2.DOUBLING_REVEAL_SIMULTANEOUS
            if len(kinds) == 3 and (several_at_once or not want_several):
                break
        assert kinds == set(TIMEOUT_S)
        assert several_at_once == (reveal == common_pb2.DOUBLING_REVEAL_SIMULTANEOUS)
        await asyncio.sleep(0.2)
        assert timers.stats["auto_accepted"] == fired  # nothing fired twice
        assert timers.stats["auto_refused"] == 0
        autos = [
            e
            for kind in ("contract_chosen", "double_answered", "card_played")
            for e in client.of(tid, kind)
            if getattr(e, kind).automatic
        ]
        if reveal == common_pb2.DOUBLING_REVEAL_SEQUENTIAL:
            assert len(autos) == fired  # every timed-out decision was played once, by the engine's bot
    finally:
        await stop_all(table, [timers])


async def test_move_just_before_the_deadline_wins(auth_nats: AuthNats, client: Client_) -> None:
    clock = ManualClock()
    table, (timers,) = await started(auth_nats, clock, "solo")
    rng = random.Random(3)
    try:
        tid = "race"
        await client.create(tid, PLAYERS, options=NO_LEAVES)

        async def human_move(view: table_pb2.SeatView) -> None:
            seat = view.turn.seats[0]
            mine = await client.view(tid, seat, PLAYERS[seat])
            await client.request(tid, legal_move(mine, rng), token("player", PLAYERS[seat]))

        # 1. The timers have not seen the move yet when the deadline passes: the table refuses.
        view = await client.view(tid)
        deadline = deadline_of(await turn_event(client, view))
        await timers_know(timers, tid, view.turn.turn_seq)
        timers.running.flowing.clear()  # hold the timers' event consumer
        clock.set(deadline - 0.001)
        await human_move(view)
        clock.set(deadline + 0.001)
        await eventually(lambda: _stat(timers, "auto_refused", 1), 10, "the refused auto-action")
        assert timers.stats["auto_accepted"] == 0
        after = await client.view(tid)
        assert after.turn.turn_seq > view.turn.turn_seq
        timers.running.flowing.set()

        # 2. The timers saw the move first: nothing is sent at the old deadline.
        view = after
        deadline = deadline_of(await turn_event(client, view))
        await timers_know(timers, tid, view.turn.turn_seq)
        clock.set(deadline - 0.001)
        await human_move(view)
        moved = await client.view(tid)
        await timers_know(timers, tid, moved.turn.turn_seq)
        clock.set(deadline + 0.001)
        await asyncio.sleep(0.2)
        assert timers.stats["auto_accepted"] == 0 and timers.stats["auto_refused"] == 1
        assert (await client.view(tid)).sequence == moved.sequence
        # Both moves are the humans' own (automatic = false), each applied once.
        plays = [e for k in ("contract_chosen", "double_answered", "card_played") for e in client.of(tid, k)]
        assert plays and not any(getattr(e, e.WhichOneof("body")).automatic for e in plays)
    finally:
        await stop_all(table, [timers])


async def _stat(timers: InProcessTimers, name: str, value: int) -> bool:
    return bool(timers.stats[name] == value)


class HangingTable:
    """A TableCommands port that passes commands to the table until `hanging` is set, then never
    answers (the replica dies between claim and send)."""

    def __init__(self, table: TableCommands) -> None:
        self.table = table
        self.hanging = False

    async def _hang(self) -> None:
        if self.hanging:
            await asyncio.Event().wait()

    async def auto_act(self, table_id: str, seat: int, turn_seq: int) -> Any:
        await self._hang()
        return await self.table.auto_act(table_id, seat, turn_seq)

    async def leave(self, table_id: str, seat: int, reason: int, action_id: str) -> Any:
        await self._hang()
        return await self.table.leave(table_id, seat, reason, action_id)

    async def reclaim(self, table_id: str, seat: int, action_id: str) -> Any:
        await self._hang()
        return await self.table.reclaim(table_id, seat, action_id)


async def test_restart_across_a_deadline_fires_once(auth_nats: AuthNats, client: Client_) -> None:
    clock = ManualClock()
    table, (first,) = await started(auth_nats, clock, "first")
    replicas: list[Any] = [first]
    try:
        tid = "restart"
        await client.create(tid, PLAYERS, options=NO_LEAVES)
        view = await client.view(tid)
        await timers_know(first, tid, view.turn.turn_seq)
        await first.stop()  # down before the deadline
        clock.set(deadline_of(await turn_event(client, view)) + 5)
        second = InProcessTimers(auth_nats.url("timers"), clock, "second")
        replicas.append(second)
        await second.start()  # the deadline expired while no timers ran: it fires once now
        await eventually(lambda: _stat(second, "auto_accepted", 1), 10, "the expired deadline")
        await second.stop()
        third = InProcessTimers(auth_nats.url("timers"), clock, "third", commands=HangingTable)
        replicas.append(third)
        await third.start()  # and never again after another restart
        now = await client.view(tid)
        await timers_know(third, tid, now.turn.turn_seq)
        await asyncio.sleep(0.2)
        assert dict(third.stats) == {} or third.stats["auto_accepted"] == 0
        assert now.turn.turn_seq > view.turn.turn_seq

        # A replica that takes a deadline and dies before the table answers: the next replica
        # sends the same AutoAct{table, seat, turn_seq} at once (an AutoAct's claim is not
        # written, issue 16: the table applies a turn's AutoAct once), and it is applied once.
        assert third.service is not None
        assert isinstance(third.service.table, HangingTable)
        third.service.table.hanging = True
        clock.set(deadline_of(await turn_event(client, now)) + 0.001)
        await eventually(lambda: _claimed(third, tid), 10, "the claim")
        await third.stop()
        fourth = InProcessTimers(auth_nats.url("timers"), clock, "fourth", TRIX_TIMERS_CLAIM_TIMEOUT_S="5")
        replicas.append(fourth)
        await fourth.start()
        await eventually(lambda: _stat(fourth, "auto_accepted", 1), 10, "the re-sent AutoAct")
        after = await client.view(tid)
        assert after.turn.turn_seq > now.turn.turn_seq
        kinds = ("contract_chosen", "double_answered", "card_played")
        autos = [e for k in kinds for e in client.of(tid, k) if getattr(e, k).automatic]
        assert len(autos) == 2  # the first deadline and the re-sent one, each applied once
    finally:
        await stop_all(table, replicas)


async def test_a_turn_started_while_no_timers_ran_is_read_from_the_owner_and_fires(
    auth_nats: AuthNats, client: Client_
) -> None:
    """The table events travel unstored (issue 16): a turn that started while every timers
    replica was down reaches none of them live; a replica that starts asks the table replicas
    for their unfinished tables and the owner for the events it missed, and the deadline of
    that turn fires once."""
    clock = ManualClock()
    table, (first,) = await started(auth_nats, clock, "before")
    replicas: list[Any] = [first]
    rng = random.Random(5)
    try:
        tid = "missed"
        await client.create(tid, PLAYERS, options=NO_LEAVES)
        view = await client.view(tid)
        await timers_know(first, tid, view.turn.turn_seq)
        await first.stop()  # no timers run from here
        seat = view.turn.seats[0]
        mine = await client.view(tid, seat, PLAYERS[seat])
        await client.request(tid, legal_move(mine, rng), token("player", PLAYERS[seat]))
        moved = await client.view(tid)
        assert moved.turn.turn_seq > view.turn.turn_seq  # a new turn nobody's timers saw
        clock.set(deadline_of(await turn_event(client, moved)) + 1)
        second = InProcessTimers(auth_nats.url("timers"), clock, "after")
        replicas.append(second)
        await second.start()  # catches up from the owner: the expired deadline fires at once
        await eventually(lambda: _stat(second, "auto_accepted", 1), 10, "the missed turn's deadline")
        after = await client.view(tid)
        assert after.turn.turn_seq > moved.turn.turn_seq
    finally:
        await stop_all(table, replicas)


async def _claimed(timers: InProcessTimers, table_id: str) -> bool:
    assert timers.service is not None
    doc = await timers.service.table_doc(table_id)
    return doc.turn is not None and any(s.state == "claimed" for s in doc.turn.slots.values())


async def test_two_replicas_share_the_work_and_never_fire_twice(auth_nats: AuthNats, client: Client_) -> None:
    clock = ManualClock()
    table, replicas = await started(auth_nats, clock, "left", "right")
    try:
        tables = [f"pair-{i}" for i in range(8)]
        for tid in tables:
            await client.create(tid, PLAYERS, options=NO_LEAVES)
        for r in replicas:  # both replicas see each other's heartbeat
            await eventually(lambda r=r: _members(r, 2), 10, "the heartbeats")
        expected = 0
        for _ in range(6):
            views = [await client.view(tid) for tid in tables]
            for tid, v in zip(tables, views, strict=True):
                for r in replicas:
                    await timers_know(r, tid, v.turn.turn_seq)
            # Every deadline passes at once; the preferred replica of each table fires it, the other
            # would take over a second later.
            deadlines = [deadline_of(await turn_event(client, v)) for v in views]
            clock.set(max(deadlines) + 0.001)
            expected += sum(len(v.turn.seats) for v in views)

            async def all_moved(views: list[table_pb2.SeatView] = views) -> bool:
                now = [await client.view(tid) for tid in tables]
                return all(n.turn.turn_seq != v.turn.turn_seq for n, v in zip(now, views, strict=True))

            await eventually(all_moved, 20, "every table's auto-action")
            await eventually(lambda e=expected: _total(replicas, e), 10, "the recorded outcomes")
        await asyncio.sleep(0.2)
        sent = [r.stats["auto_accepted"] + r.stats["auto_refused"] for r in replicas]
        assert sum(sent) == expected  # no deadline sent twice
        assert all(n > 0 for n in sent), sent  # both replicas did part of the work
    finally:
        await stop_all(table, replicas)


async def _total(replicas: list[InProcessTimers], expected: int) -> bool:
    return sum(r.stats["auto_accepted"] for r in replicas) == expected


async def _members(timers: InProcessTimers, n: int) -> bool:
    assert timers.service is not None
    return len(timers.service._members) >= n
