"""Properties of the timers' firing (docs/rules.md §9, §10) over runs hypothesis draws: turns
started with deadlines, the clock moved, players disconnecting and coming back, `fire` called
at any moment, the table accepting or refusing each command. Each deadline fires once: no
AutoAct of a (turn, seat) and no Leave or ReclaimSeat of an action id is sent twice, none is
sent before it is due, and every seat of a turn whose deadline passed while it was the turn
is sent once a `fire` comes after the deadline.

The service runs on its ports in memory (a compare-and-set document store, a table that
records what it is sent) and a manual clock: no I/O, no sleeping, 200 runs in seconds (fixed
seed, derandomized).
"""

from __future__ import annotations

import asyncio
import copy
from dataclasses import dataclass, field
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from support.clock import ManualClock
from support.keys import SuiteKeys
from trix.timers.config import TimersConfig
from trix.timers.ports import CasConflict, Outcome
from trix.timers.service import TimersService
from trix.v1 import common_pb2, events_pb2

TIMERS_KEYS = SuiteKeys("timers-tests").env("timers")

TABLE = "prop-table"
PLAYERS = ("p0", "p1", "p2", "p3")
CONFIG = TimersConfig.from_env({"TRIX_NATS_URL": "none", **TIMERS_KEYS})


class MemoryStore:
    """`DocStore` in memory: compare-and-set by revision, as the KV bucket."""

    def __init__(self) -> None:
        self.docs: dict[str, tuple[dict[str, Any], int]] = {}
        self.revision = 0

    async def get(self, key: str) -> tuple[dict[str, Any] | None, int]:
        doc, revision = self.docs.get(key, (None, 0))
        return copy.deepcopy(doc), revision

    async def put(self, key: str, doc: dict[str, Any], revision: int, ttl_s: float = 0.0) -> int:
        if self.docs.get(key, (None, 0))[1] != revision:
            raise CasConflict(key)
        self.revision += 1
        self.docs[key] = (copy.deepcopy(doc), self.revision)
        return self.revision


@dataclass
class RecordingTable:
    """`TableCommands` that writes down every command and when, answering from `answers`."""

    clock: ManualClock
    answers: list[bool]
    sent: list[tuple[str, Any, float]] = field(default_factory=list)

    def _answer(self, what: str, key: Any) -> Outcome:
        self.sent.append((what, key, self.clock.now()))
        accepted = self.answers[len(self.sent) % len(self.answers)] if self.answers else True
        return Outcome.ACCEPTED if accepted else Outcome.REFUSED

    async def auto_act(self, table_id: str, seat: int, turn_seq: int) -> Outcome:
        return self._answer("auto", (turn_seq, seat))

    async def leave(self, table_id: str, seat: int, reason: int, action_id: str) -> Outcome:
        return self._answer("leave", action_id)

    async def reclaim(self, table_id: str, seat: int, action_id: str) -> Outcome:
        return self._answer("reclaim", action_id)


OPS = st.lists(
    st.one_of(
        st.tuples(st.just("turn"), st.sets(st.integers(0, 3), min_size=1), st.integers(0, 20_000)),
        st.tuples(st.just("advance"), st.integers(0, 30_000)),
        st.tuples(st.just("fire")),
        st.tuples(st.just("presence"), st.integers(0, 3), st.booleans()),
    ),
    max_size=40,
)


@dataclass
class Turn:
    seq: int
    seats: frozenset[int]
    deadline: float
    fired_after_deadline: bool = False
    """A `fire` came at or after the deadline while this was the table's turn."""


def _created() -> events_pb2.Event:
    event = events_pb2.Event(table_id=TABLE, sequence=1)
    for seat, player in enumerate(PLAYERS):
        event.table_created.seats.add(index=seat, player_id=player, bot=False)
    return event


def _turn(seq: int, seats: frozenset[int], deadline: float) -> events_pb2.Event:
    event = events_pb2.Event(table_id=TABLE, sequence=seq)
    event.turn_started.turn_seq = seq
    event.turn_started.decision = common_pb2.DECISION_CARD
    event.turn_started.seats.extend(sorted(seats))
    event.turn_started.deadline.FromMilliseconds(round(deadline * 1000))
    return event


def _presence(seat: int, connected: bool) -> events_pb2.Event:
    player = PLAYERS[seat]
    if connected:
        return events_pb2.Event(player_connected=events_pb2.PlayerConnected(player_id=player, session_id="s"))
    return events_pb2.Event(player_disconnected=events_pb2.PlayerDisconnected(player_id=player, session_id="s"))


async def _run(ops: list[tuple[Any, ...]], answers: list[bool]) -> tuple[list[Turn], RecordingTable]:
    clock = ManualClock()
    table = RecordingTable(clock, answers)
    service = TimersService(CONFIG, MemoryStore(), table, clock=clock, replica_id="r1")
    await service.on_events([_created()])
    turns: list[Turn] = []
    sequence, presence_seq = 1, 0
    for op in [*ops, ("advance", 3_600_000), ("fire",)]:  # in the end, everything is due
        if op[0] == "turn":
            sequence += 1
            deadline = round((clock.now() + op[2] / 1000) * 1000) / 1000
            turns.append(Turn(sequence, frozenset(op[1]), deadline))
            await service.on_events([_turn(sequence, turns[-1].seats, deadline)])
        elif op[0] == "advance":
            clock.advance(op[1] / 1000)
        elif op[0] == "presence":
            presence_seq += 1
            await service.on_presence(_presence(op[1], op[2]), presence_seq)
        else:
            if turns and clock.now() >= turns[-1].deadline:
                turns[-1].fired_after_deadline = True
            await service.fire(TABLE)
    return turns, table


@settings(max_examples=200, deadline=None, derandomize=True, database=None)
@given(OPS, st.lists(st.booleans(), max_size=8))
def test_each_deadline_fires_once_never_early_and_always_once_due(
    ops: list[tuple[Any, ...]], answers: list[bool]
) -> None:
    turns, table = asyncio.run(_run(ops, answers))
    autos = [key for what, key, _ in table.sent if what == "auto"]
    assert len(autos) == len(set(autos)), "an AutoAct was sent twice"
    others = [key for what, key, _ in table.sent if what != "auto"]
    assert len(others) == len(set(others)), "a Leave or ReclaimSeat was sent twice"
    deadline = {(t.seq, seat): t.deadline for t in turns for seat in t.seats}
    for what, key, at in table.sent:
        if what == "auto":
            assert key in deadline, f"an AutoAct of no turn: {key}"
            assert at >= deadline[key], f"AutoAct {key} sent at {at}, before its deadline {deadline[key]}"
    for turn in turns:
        if turn.fired_after_deadline:
            assert {(turn.seq, seat) for seat in turn.seats} <= set(autos), f"turn {turn.seq} was due and not fired"


async def _run_twins(ops: list[tuple[Any, ...]], answers: list[bool]) -> None:
    """Two replicas-to-be on the same ops: one folds a batch in memory whenever
    `fold_in_memory` takes it (the steady path, issue 16), the other only through
    `on_events`; after every op their documents, their stores and what they sent agree."""
    clock = ManualClock()
    twins = []
    for _ in range(2):
        table = RecordingTable(clock, answers)
        store = MemoryStore()
        twins.append((TimersService(CONFIG, store, table, clock=clock, replica_id="r1"), store, table))
    (fast, fast_store, fast_table), (slow, slow_store, slow_table) = twins
    for service in (fast, slow):
        await service.on_events([_created()])
    sequence, presence_seq = 1, 0
    for op in [*ops, ("advance", 3_600_000), ("fire",)]:
        if op[0] == "turn":
            sequence += 1
            deadline = round((clock.now() + op[2] / 1000) * 1000) / 1000
            batch = [_turn(sequence, frozenset(op[1]), deadline)]
            if not fast.fold_in_memory(batch):
                await fast.on_events(batch)
            await slow.on_events(batch)
        elif op[0] == "advance":
            clock.advance(op[1] / 1000)
        elif op[0] == "presence":
            presence_seq += 1
            for service in (fast, slow):
                await service.on_presence(_presence(op[1], op[2]), presence_seq)
        else:
            for service in (fast, slow):
                await service.fire(TABLE)
        assert (await fast.table_doc(TABLE)).to_json() == (await slow.table_doc(TABLE)).to_json()
        assert fast_store.docs == slow_store.docs
        assert fast_table.sent == slow_table.sent


@settings(max_examples=200, deadline=None, derandomize=True, database=None)
@given(OPS, st.lists(st.booleans(), max_size=8))
def test_a_turn_folded_in_memory_is_the_turn_folded_through_the_store(
    ops: list[tuple[Any, ...]], answers: list[bool]
) -> None:
    asyncio.run(_run_twins(ops, answers))


def test_the_turns_of_a_table_answered_in_time_are_folded_in_memory_and_write_nothing() -> None:
    async def run() -> tuple[TimersService, MemoryStore, int]:
        clock = ManualClock()
        store = MemoryStore()
        service = TimersService(CONFIG, store, RecordingTable(clock, []), clock=clock, replica_id="r1")
        await service.on_events([_created()])
        written = store.revision
        for seq in range(2, 30):
            assert service.fold_in_memory([_turn(seq, frozenset({seq % 4}), clock.now() + 12)])
            clock.advance(2.5)
        return service, store, written

    service, store, written = asyncio.run(run())
    assert store.revision == written
    assert service.stats["turns_in_memory"] == 28
    doc = asyncio.run(service.table_doc(TABLE))
    assert doc.turn is not None and doc.turn.seq == 29
