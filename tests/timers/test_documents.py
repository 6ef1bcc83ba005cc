"""Pure tests of the timers' documents (no NATS): the hand-built JSON of `TableDoc` equals
`dataclasses.asdict` field for field (a field added to the dataclasses and forgotten in
`to_json` would silently not be stored), and `_mutate` writes against the last revision it
knows, reading the store again only after a compare-and-set conflict (issue 10)."""

from __future__ import annotations

import copy
from dataclasses import asdict
from typing import Any

import pytest

from support.clock import ManualClock
from support.keys import SuiteKeys
from trix.runtime.config import ConfigError
from trix.timers.config import TimersConfig
from trix.timers.document import SeatDoc, Slot, TableDoc, TurnDoc, copy_doc, durable_key, durable_part, table_key
from trix.timers.ports import CasConflict
from trix.timers.service import TimersService
from trix.v1 import common_pb2, events_pb2

TIMERS_KEYS = SuiteKeys("timers-tests").env("timers")


def _full_doc() -> TableDoc:
    doc = TableDoc(table_id="t1", created=True, paid=True, leave_grace_s=30.0, max_timeouts=2)
    doc.turn = TurnDoc(
        seq=7,
        decision=common_pb2.DECISION_CARD,
        deadline=12.5,
        client_seeds=False,
        slots={"0": Slot(due=12.5), "2": Slot(due=12.5, state="claimed", claimed_at=12.6, claimed_by="r1")},
    )
    doc.seats[1] = SeatDoc(
        player="p1",
        bot=True,
        left=True,
        control_seq=5,
        human_seq=3,
        autos=[4, 6],
        disconnected=True,
        presence_seq=9,
        away=Slot(due=40.0, reason=2, action_id="leave-1-p9"),
        reclaim=Slot(due=41.0, action_id="reclaim-1-p10"),
    )
    return doc


def test_to_json_is_asdict_and_round_trips() -> None:
    doc = _full_doc()
    assert doc.to_json() == asdict(doc)
    assert TableDoc.from_json(doc.to_json()) == doc
    empty = TableDoc(table_id="t2")
    assert empty.to_json() == asdict(empty)


def test_from_json_shares_no_list_with_its_input() -> None:
    data = _full_doc().to_json()
    kept = copy.deepcopy(data)
    doc = TableDoc.from_json(data)
    doc.seats[1].autos.append(8)
    doc.timeouts_s[0] = 1.0
    assert data == kept


def test_a_copy_is_the_json_round_trip_and_shares_nothing() -> None:
    """`copy_doc` (issue 16: a document is copied per action, no JSON in between) gives what
    `from_json(to_json())` gives, and changing the copy leaves the original as it was."""
    doc = _full_doc()
    twin = copy_doc(doc)
    assert twin == TableDoc.from_json(doc.to_json()) == doc
    assert asdict(copy_doc(TableDoc(table_id="t2"))) == asdict(TableDoc(table_id="t2"))
    kept = doc.to_json()
    assert twin.turn is not None and twin.seats[1].away is not None
    twin.turn.slots["0"].state = "claimed"
    twin.seats[1].autos.append(8)
    twin.seats[1].away.due = 1.0
    twin.timeouts_s[0] = 1.0
    assert doc.to_json() == kept


def test_the_durable_key_tells_what_the_durable_part_tells() -> None:
    """Two documents have equal `durable_key`s exactly when their `durable_part`s are equal:
    the turn and the timeouts before a seat's last own answer do not count, everything else
    does (docs/rules.md §10 timeouts in a row), so a turn answered in time writes nothing."""
    base = _full_doc()
    changes: list[Any] = [
        lambda d: setattr(d.turn, "seq", 99),  # the turn: not durable
        lambda d: d.turn.slots.clear(),
        lambda d: setattr(d.seats[1], "autos", [2, 4, 6]),  # 2 < human_seq 3: not durable
        lambda d: setattr(d.seats[1], "human_seq", 4),  # leaves autos 6: durable
        lambda d: setattr(d.seats[1], "autos", []),
        lambda d: setattr(d.seats[2], "human_seq", 5),  # no autos: human_seq does not count
        lambda d: setattr(d.seats[0], "player", "p0"),
        lambda d: setattr(d.seats[1].away, "due", 41.0),
        lambda d: setattr(d.seats[1], "reclaim", None),
        lambda d: setattr(d, "finished", True),
        lambda d: d.timeouts_s.__setitem__(2, 9.0),
        lambda d: setattr(d, "max_timeouts", 3),
    ]
    for change in changes:
        other = copy_doc(base)
        change(other)
        same_part = durable_part(other.to_json()) == durable_part(base.to_json())
        assert (durable_key(other) == durable_key(base)) == same_part, change


class CountingStore:
    """A DocStore in memory that counts reads and can be changed behind the service's back."""

    def __init__(self) -> None:
        self.docs: dict[str, tuple[dict[str, Any], int]] = {}
        self.revision = 0
        self.gets = 0
        self.puts = 0
        self.conflicts = 0
        self.ttls: dict[str, float] = {}
        """Each key's TTL of its last write (0: none)."""

    async def get(self, key: str) -> tuple[dict[str, Any] | None, int]:
        self.gets += 1
        doc, rev = self.docs.get(key, (None, 0))
        return copy.deepcopy(doc), rev

    async def put(self, key: str, doc: dict[str, Any], revision: int, ttl_s: float = 0.0) -> int:
        if self.docs.get(key, (None, 0))[1] != revision:
            self.conflicts += 1
            raise CasConflict(key)
        self.revision += 1
        self.puts += 1
        self.docs[key] = (copy.deepcopy(doc), self.revision)
        self.ttls[key] = ttl_s
        return self.revision


class NoTable:
    async def auto_act(self, table_id: str, seat: int, turn_seq: int) -> Any:
        raise AssertionError("no command expected")

    async def leave(self, table_id: str, seat: int, reason: int, action_id: str) -> Any:
        raise AssertionError("no command expected")

    async def reclaim(self, table_id: str, seat: int, action_id: str) -> Any:
        raise AssertionError("no command expected")


def _turn(table_id: str, seq: int) -> events_pb2.Event:
    event = events_pb2.Event(table_id=table_id, sequence=seq)
    event.turn_started.turn_seq = seq
    event.turn_started.decision = common_pb2.DECISION_CARD
    event.turn_started.seats.append(seq % 4)
    return event


async def test_a_turn_writes_nothing_a_seat_change_writes_against_the_known_revision() -> None:
    """Issue 16: deadlines live in memory, so a turn is no KV write; what docs/rules.md §10 needs
    after a restart (seats, presence, timeouts in a row) is written when it changes, against
    the known revision, and read again after a conflict (another replica wrote)."""
    config = TimersConfig.from_env({"TRIX_NATS_URL": "none", **TIMERS_KEYS})
    store = CountingStore()
    service = TimersService(config, store, NoTable(), clock=ManualClock(), replica_id="r1")
    created = events_pb2.Event(table_id="t1", sequence=1)
    created.table_created.seats.add(index=0, player_id="", bot=True)

    # a new table: one read (nothing known yet), ONE write
    await service.on_events([created, _turn("t1", 2), _turn("t1", 3)])
    assert (store.gets, store.puts) == (1, 1)
    # the next turns: no read, no write; this replica knows them
    await service.on_events([_turn("t1", 4)])
    await service.on_events([_turn("t1", 5)])
    assert (store.gets, store.puts, store.conflicts) == (1, 1, 0)
    mine = await service.table_doc("t1")
    assert mine.turn is not None and mine.turn.seq == 5
    # a seat change is durable: written against the known revision, no read
    left = events_pb2.Event(table_id="t1", sequence=6)
    left.seat_left.seat = 0
    await service.on_events([left])
    assert (store.gets, store.puts, store.conflicts) == (1, 2, 0)

    # another replica writes: the known revision is stale, the write conflicts, the store is read
    doc, _ = store.docs[table_key("t1")]
    store.revision += 1
    store.docs[table_key("t1")] = (doc, store.revision)
    control = events_pb2.Event(table_id="t1", sequence=7)
    control.seat_control_changed.seat = 1
    control.seat_control_changed.bot = True
    await service.on_events([control])
    assert (store.gets, store.puts, store.conflicts) == (2, 3, 1)
    stored = TableDoc.from_json(store.docs[table_key("t1")][0])
    assert stored.seats[0].left and stored.seats[1].bot
    mine = await service.table_doc("t1")
    assert mine.turn is not None and mine.turn.seq == 5  # the turn folded in memory is kept

    # an event that changes nothing (already applied) writes nothing
    await service.on_events([control, _turn("t1", 5)])
    assert store.puts == 3
    # the watch echoing this replica's own write is skipped; a newer revision is taken
    assert service.knows("t1", store.revision)
    assert not service.knows("t1", store.revision + 1)


def test_a_turn_deadline_is_read_as_utc_whatever_the_local_time_zone() -> None:
    """docs/rules.md §9: the deadline in TurnStarted is an instant; read as local time (a
    naive datetime's `timestamp()`), it moved by the zone's offset off UTC."""
    import os
    import time

    from trix.timers.folding import apply_event

    event = events_pb2.Event(table_id="t1", sequence=2)
    event.turn_started.turn_seq = 2
    event.turn_started.seats.append(1)
    event.turn_started.decision = common_pb2.DECISION_CARD
    event.turn_started.deadline.FromMilliseconds(1_800_000_012_500)
    before = os.environ.get("TZ")
    os.environ["TZ"] = "XXX-03:00"  # three hours east of UTC (POSIX form: no zone files needed)
    time.tzset()
    try:
        doc = TableDoc(table_id="t1", created=True)
        assert apply_event(doc, event, now=1_800_000_000.0)
    finally:
        if before is None:
            del os.environ["TZ"]
        else:
            os.environ["TZ"] = before
        time.tzset()
    assert doc.turn is not None and doc.turn.deadline == 1_800_000_012.5
    assert doc.turn.slots["1"].due == 1_800_000_012.5


async def test_a_finished_table_leaves_memory_and_a_late_event_for_it_changes_nothing() -> None:
    """docs/rules.md §9-§10: a finished table has no deadline left, so a replica does not keep
    its document in memory (one that ran for weeks held every table it ever timed); the stored
    document says it is finished, and an event that comes late for it (a redelivery) is read
    against that: no write, no deadline, nothing held again."""
    config = TimersConfig.from_env({"TRIX_NATS_URL": "none", **TIMERS_KEYS})
    store = CountingStore()
    service = TimersService(config, store, NoTable(), clock=ManualClock(), replica_id="r1")
    for table_id in ("t1", "t2"):
        created = events_pb2.Event(table_id=table_id, sequence=1)
        created.table_created.seats.add(index=0, player_id="p0")
        await service.on_events([created, _turn(table_id, 2)])
    assert service.tables_in_memory() == 2 and service.known_sequence("t1") == 2

    ended = events_pb2.Event(table_id="t1", sequence=3)
    ended.game_ended.ranking.extend([1, 2, 3, 4])
    await service.on_events([ended])
    assert service.tables_in_memory() == 1  # t2 still plays
    assert service.known_sequence("t1") == 0
    assert TableDoc.from_json(store.docs[table_key("t1")][0]).finished
    assert (await service.table_doc("t1")).finished  # read from the store

    puts = store.puts
    await service.on_events([_turn("t1", 2)])  # late: before the end
    service.on_doc("t1", store.docs[table_key("t1")][0], store.docs[table_key("t1")][1] + 1)  # a watch echo
    assert store.puts == puts
    assert service.tables_in_memory() == 1
    assert await service.pending_deadlines("t1") == []


async def test_only_the_write_that_finishes_a_table_gives_its_document_a_ttl() -> None:
    """A finished table's document expires a day after (TRIX_TIMERS_FINISHED_DOC_TTL_S): the
    bucket does not keep a document per game for ever; while the game runs, none expires."""
    config = TimersConfig.from_env({"TRIX_NATS_URL": "none", **TIMERS_KEYS})
    assert config.finished_doc_ttl_s == 24 * 3600
    store = CountingStore()
    service = TimersService(config, store, NoTable(), clock=ManualClock(), replica_id="r1")
    created = events_pb2.Event(table_id="t1", sequence=1)
    created.table_created.seats.add(index=0, player_id="p1")
    await service.on_events([created, _turn("t1", 2)])
    left = events_pb2.Event(table_id="t1", sequence=3)
    left.seat_left.seat = 0
    await service.on_events([left])
    assert store.ttls[table_key("t1")] == 0.0  # running: kept
    puts = store.puts
    ended = events_pb2.Event(table_id="t1", sequence=4)
    ended.game_ended.SetInParent()
    await service.on_events([ended])
    assert store.puts == puts + 1
    assert TableDoc.from_json(store.docs[table_key("t1")][0]).finished
    assert store.ttls[table_key("t1")] == 24 * 3600
    assert all(ttl == 0.0 for key, ttl in store.ttls.items() if key != table_key("t1"))  # the player's index


def test_the_finished_document_ttl_is_zero_or_whole_seconds() -> None:
    env = {"TRIX_NATS_URL": "none", **TIMERS_KEYS}
    assert TimersConfig.from_env({**env, "TRIX_TIMERS_FINISHED_DOC_TTL_S": "0"}).finished_doc_ttl_s == 0
    assert TimersConfig.from_env({**env, "TRIX_TIMERS_FINISHED_DOC_TTL_S": "60"}).finished_doc_ttl_s == 60
    for bad in ("0.5", "2.5", "-1", "inf"):
        with pytest.raises(ConfigError, match="TRIX_TIMERS_FINISHED_DOC_TTL_S"):
            TimersConfig.from_env({**env, "TRIX_TIMERS_FINISHED_DOC_TTL_S": bad})
