"""The timers service's logic: a deadline for every pending decision (docs/rules.md §9),
disconnect grace, timeouts in a row and leaving (§10).

Owns:
- `TableDoc`, the timers' state of one table: the current turn with one slot per pending
  seat, kept in memory (issue 16: fed by the public event batches every replica takes,
  rebuilt from the table owners after a restart), and per seat its presence, timeouts in
  a row and a pending leave or reclaim, the durable part (`durable_part`), written to one
  JSON document per table in the `timer_deadlines` KV bucket, key `t.<table>`, only when
  it changes. The pure functions `apply_event`, `apply_presence`, `due_jobs`, `claim` and
  `record` are the whole policy; they never do I/O.
- `TimersService`, which runs that policy against two ports: `DocStore` (get and
  compare-and-set put of documents: JetStream KV in production) and `TableCommands`
  (AutoAct, Leave, ReclaimSeat requests to the table's owner).

Applying is exactly once: the table applies an AutoAct at most once (it carries the
turn's sequence: a second one is a stale turn), a Leave or ReclaimSeat at most once (a
fixed action id). A Leave or ReclaimSeat is also claimed first, by a compare-and-set of
the document's revision, so two replicas do not both send it; a replica that dies after
its claim leaves a claim that goes stale after `claim_timeout_s`, and another sends the
same command again. An AutoAct's claim stays in memory (no write per turn): work is shared
by rendezvous hashing of the table id over the live replicas, the preferred replica fires
at the deadline, the others only `takeover_s` later, and a second AutoAct of the same turn
is refused by the table.

Must not import grpc or nats: adapters (`grpc_api`, `subscribers`) translate to and
from this module.
"""

from __future__ import annotations

import asyncio
import heapq
import uuid
import zlib
from collections import Counter, deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from enum import Enum
from typing import Any, Protocol

import structlog
from google.protobuf.timestamp_pb2 import Timestamp

from trix.errors import NotFound
from trix.natsio.subjects import token
from trix.rules import (  # docs/rules.md §9, §10
    DEFAULT_LEAVE_GRACE_S,
    DEFAULT_MAX_TIMEOUTS_IN_A_ROW,
    DEFAULT_TIMEOUT_S,
    TIMED_DECISIONS,
    decision_timeout_s,
)
from trix.runtime.tasks import cancel_and_wait, start_kept
from trix.timers.clock import Clock, SystemClock
from trix.timers.config import TimersConfig
from trix.v1 import common_pb2, events_pb2

log = structlog.get_logger("trix.timers")


PENDING = "pending"
CLAIMED = "claimed"
FIRED = "fired"
REFUSED = "refused"

AUTO = "auto"
LEAVE = "leave"
RECLAIM = "reclaim"

RETRY_UNAVAILABLE_S = 0.2
"""Pause before a job the table did not answer is sent again."""

STATS_KEPT = 100_000
"""Lateness and ingest-lag samples kept (the last ones): bounded in a long-running replica."""

WATCHED_EVENTS = frozenset({"table_created", "turn_started", "seat_left", "seat_control_changed", "game_ended"})
"""The public table events that change a timers document; the others are acked unread."""

LEAVE_REASON_GRACE_EXPIRED = 2  # trix.v1.LeaveReason
LEAVE_REASON_TIMEOUTS = 3


def table_key(table_id: str) -> str:
    return f"t.{token(table_id, 'table id')}"


def player_key(player_id: str) -> str:
    return f"p.{token(player_id, 'player id')}"


class Outcome(Enum):
    """The table's answer to a command of the timers."""

    ACCEPTED = "accepted"
    REFUSED = "refused"
    """The table said no for good: the turn moved on (a human move won), the seat already left..."""
    UNAVAILABLE = "unavailable"
    """No answer (owner down, handover): the claim goes stale and the command is sent again."""


class CasConflict(Exception):
    """The document changed since it was read (another replica wrote it)."""


class DocStore(Protocol):
    """Durable JSON documents with compare-and-set (JetStream KV)."""

    async def get(self, key: str) -> tuple[dict[str, Any] | None, int]:
        """The document and its revision; (None, 0) if missing."""
        ...

    async def put(self, key: str, doc: dict[str, Any], revision: int, ttl_s: float = 0.0) -> int:
        """Write if the stored revision is still `revision` (0: the key must not exist); CasConflict if not.
        `ttl_s` > 0: the document is removed that long after this write (a finished table's)."""
        ...


class TableCommands(Protocol):
    """The commands the timers send to a table's owner (docs/rules.md §9, §10)."""

    async def auto_act(self, table_id: str, seat: int, turn_seq: int) -> Outcome: ...

    async def leave(self, table_id: str, seat: int, reason: int, action_id: str) -> Outcome: ...

    async def reclaim(self, table_id: str, seat: int, action_id: str) -> Outcome: ...


# -- the durable document ------------------------------------------------------------------


@dataclass
class Slot:
    """One thing to do at `due`: an AutoAct for a seat, a Leave, a ReclaimSeat."""

    due: float
    state: str = PENDING
    claimed_at: float = 0.0
    claimed_by: str = ""
    reason: int = 0
    """Leave: the LeaveReason."""
    action_id: str = ""
    """Leave, ReclaimSeat: the fixed action id that makes a re-send idempotent at the table."""


@dataclass
class TurnDoc:
    """The decision now due (from TurnStarted)."""

    seq: int
    decision: int
    deadline: float
    client_seeds: bool
    slots: dict[str, Slot]
    """Seat (as text, JSON keys) -> its AutoAct slot."""


@dataclass
class SeatDoc:
    """What the timers know of one seat."""

    player: str = ""
    bot: bool = False
    left: bool = False
    control_seq: int = 0
    """Sequence of the last SeatLeft/SeatControlChanged applied (out-of-order guard)."""
    human_seq: int = 0
    """The last turn the seat answered itself."""
    autos: list[int] = field(default_factory=list)
    """Turns timed out and auto-played since `human_seq` (docs/rules.md §10 timeouts in a row)."""
    disconnected: bool = False
    presence_seq: int = 0
    away: Slot | None = None
    """A pending Leave: disconnected or too many timeouts, grace running (§10)."""
    reclaim: Slot | None = None
    """A pending ReclaimSeat: the player came back to his free-table seat (§10)."""

    def timeouts_in_a_row(self) -> int:
        return sum(1 for t in self.autos if t > self.human_seq)


@dataclass
class TableDoc:
    """The timers' state of one table (see the module docstring)."""

    table_id: str
    created: bool = False
    paid: bool = False
    finished: bool = False
    leave_grace_s: float = DEFAULT_LEAVE_GRACE_S
    max_timeouts: int = DEFAULT_MAX_TIMEOUTS_IN_A_ROW
    timeouts_s: list[float] = field(default_factory=lambda: [DEFAULT_TIMEOUT_S[d] for d in TIMED_DECISIONS])
    """Contract, doubling, card: used only if a TurnStarted carries no deadline."""
    turn: TurnDoc | None = None
    seats: list[SeatDoc] = field(default_factory=lambda: [SeatDoc() for _ in range(4)])

    def to_json(self) -> dict[str, Any]:
        """The JSON document (same shape as `dataclasses.asdict`, built by hand: asdict's
        deep recursion was ~7 % of the timers' CPU under load, issue 10)."""
        turn = self.turn
        return {
            "table_id": self.table_id,
            "created": self.created,
            "paid": self.paid,
            "finished": self.finished,
            "leave_grace_s": self.leave_grace_s,
            "max_timeouts": self.max_timeouts,
            "timeouts_s": list(self.timeouts_s),
            "turn": None
            if turn is None
            else {
                "seq": turn.seq,
                "decision": turn.decision,
                "deadline": turn.deadline,
                "client_seeds": turn.client_seeds,
                "slots": {k: _slot_json(v) for k, v in turn.slots.items()},
            },
            "seats": [
                {
                    "player": s.player,
                    "bot": s.bot,
                    "left": s.left,
                    "control_seq": s.control_seq,
                    "human_seq": s.human_seq,
                    "autos": list(s.autos),
                    "disconnected": s.disconnected,
                    "presence_seq": s.presence_seq,
                    "away": None if s.away is None else _slot_json(s.away),
                    "reclaim": None if s.reclaim is None else _slot_json(s.reclaim),
                }
                for s in self.seats
            ],
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> TableDoc:
        turn = data.get("turn")
        return cls(
            table_id=data["table_id"],
            created=data["created"],
            paid=data["paid"],
            finished=data["finished"],
            leave_grace_s=data["leave_grace_s"],
            max_timeouts=data["max_timeouts"],
            timeouts_s=list(data["timeouts_s"]),
            turn=None
            if turn is None
            else TurnDoc(
                seq=turn["seq"],
                decision=turn["decision"],
                deadline=turn["deadline"],
                client_seeds=turn["client_seeds"],
                slots={k: Slot(**v) for k, v in turn["slots"].items()},
            ),
            seats=[
                SeatDoc(
                    **{
                        **s,
                        "autos": list(s["autos"]),
                        "away": None if s["away"] is None else Slot(**s["away"]),
                        "reclaim": None if s["reclaim"] is None else Slot(**s["reclaim"]),
                    }
                )
                for s in data["seats"]
            ],
        )


def copy_doc(doc: TableDoc) -> TableDoc:
    """A deep copy (what `TableDoc.from_json(doc.to_json())` gives, without the dicts: the
    timers copy a document per action, issue 16)."""
    turn = doc.turn
    return TableDoc(
        table_id=doc.table_id,
        created=doc.created,
        paid=doc.paid,
        finished=doc.finished,
        leave_grace_s=doc.leave_grace_s,
        max_timeouts=doc.max_timeouts,
        timeouts_s=list(doc.timeouts_s),
        turn=None
        if turn is None
        else TurnDoc(
            turn.seq, turn.decision, turn.deadline, turn.client_seeds, {k: _copy_slot(v) for k, v in turn.slots.items()}
        ),
        seats=[
            SeatDoc(
                player=x.player,
                bot=x.bot,
                left=x.left,
                control_seq=x.control_seq,
                human_seq=x.human_seq,
                autos=list(x.autos),
                disconnected=x.disconnected,
                presence_seq=x.presence_seq,
                away=None if x.away is None else _copy_slot(x.away),
                reclaim=None if x.reclaim is None else _copy_slot(x.reclaim),
            )
            for x in doc.seats
        ],
    )


def _copy_slot(slot: Slot) -> Slot:
    return Slot(slot.due, slot.state, slot.claimed_at, slot.claimed_by, slot.reason, slot.action_id)


def _slot_key(slot: Slot | None) -> tuple[Any, ...] | None:
    if slot is None:
        return None
    return (slot.due, slot.state, slot.claimed_at, slot.claimed_by, slot.reason, slot.action_id)


def durable_key(doc: TableDoc) -> tuple[Any, ...]:
    """`durable_part(doc.to_json())` as a tuple built from the document itself: two documents
    have equal keys exactly when their durable parts are equal (a turn writes nothing)."""
    seats = []
    for x in doc.seats:
        autos = tuple(t for t in x.autos if t > x.human_seq)
        seats.append(
            (
                x.player,
                x.bot,
                x.left,
                x.control_seq,
                x.human_seq if autos else 0,
                autos,
                x.disconnected,
                x.presence_seq,
                _slot_key(x.away),
                _slot_key(x.reclaim),
            )
        )
    return (
        doc.table_id,
        doc.created,
        doc.paid,
        doc.finished,
        doc.leave_grace_s,
        doc.max_timeouts,
        tuple(doc.timeouts_s),
        tuple(seats),
    )


def _slot_json(slot: Slot) -> dict[str, Any]:
    return {
        "due": slot.due,
        "state": slot.state,
        "claimed_at": slot.claimed_at,
        "claimed_by": slot.claimed_by,
        "reason": slot.reason,
        "action_id": slot.action_id,
    }


@dataclass(frozen=True)
class Job:
    """A due slot of a table: what to send, and which slot it is."""

    kind: str
    table_id: str
    seat: int
    due: float
    turn_seq: int = 0
    counts: bool = False
    """AutoAct of a real decision (not the seed turn): counts towards timeouts in a row."""
    reason: int = 0
    action_id: str = ""


# -- the policy (pure) -----------------------------------------------------------------------


def _timeout_s(doc: TableDoc, decision: int) -> float:
    if decision == common_pb2.DECISION_DOUBLE:
        return doc.timeouts_s[1]
    if decision == common_pb2.DECISION_CARD:
        return doc.timeouts_s[2]
    return doc.timeouts_s[0]


def _start_away(doc: TableDoc, seat: int, reason: int, key: str, now: float) -> None:
    """§10: the seat has `leave_grace_s` to come back, then it has left for good."""
    s = doc.seats[seat]
    if doc.finished or s.bot or s.left or not s.player:
        return
    due = now + doc.leave_grace_s
    if s.away is not None and s.away.due <= due:
        return
    s.away = Slot(due=due, reason=reason, action_id=key)


def durable_part(data: dict[str, Any]) -> dict[str, Any]:
    """What of a document (`TableDoc.to_json`) must survive a restart: all but the turn (it
    lives in memory, issue 16), and of each seat's timeouts only those since its last own
    answer (docs/rules.md §10 "timeouts in a row"), so a turn answered in time writes nothing."""
    out = {k: v for k, v in data.items() if k != "turn"}
    seats = []
    for seat in data["seats"]:
        seat = dict(seat)
        seat["autos"] = [t for t in seat["autos"] if t > seat["human_seq"]]
        if not seat["autos"]:
            seat["human_seq"] = 0
        seats.append(seat)
    out["seats"] = seats
    return out


def _keep_newer_turn(doc: TableDoc, memory: TableDoc | None) -> None:
    """The turn (and the seats' last own answers) folded in memory, where newer than `doc`'s."""
    if memory is None:
        return
    for mine, theirs in zip(doc.seats, memory.seats, strict=True):
        mine.human_seq = max(mine.human_seq, theirs.human_seq)
    turn = memory.turn
    if turn is None or doc.finished or (doc.turn is not None and doc.turn.seq >= turn.seq):
        return
    doc.turn = TurnDoc(
        seq=turn.seq,
        decision=turn.decision,
        deadline=turn.deadline,
        client_seeds=turn.client_seeds,
        slots={k: Slot(**vars(v)) for k, v in turn.slots.items()},
    )


def unix_s(timestamp: Timestamp) -> float:
    """A protobuf Timestamp as unix seconds. Not `ToDatetime().timestamp()`: that datetime is
    naive UTC, and `timestamp()` reads a naive datetime as local time (a deadline an hour
    early on a machine whose zone is an hour east of UTC)."""
    return timestamp.seconds + timestamp.nanos / 1e9


def quiet(doc: TableDoc) -> bool:
    """True if no TurnStarted can change the durable part of `doc` (`durable_key`): no seat
    has a timeout since its last own answer, a pending leave or a pending reclaim; a turn
    then changes only the turn and the seats' last own answers, which count only next to
    such timeouts (`durable_part`). The usual table: its players answer in time."""
    for s in doc.seats:
        if s.away is not None or s.reclaim is not None:
            return False
        for t in s.autos:
            if t > s.human_seq:
                return False
    return True


def apply_event(doc: TableDoc, event: events_pb2.Event, now: float) -> bool:
    """Fold one public table event into the document; True if it changed.

    Tolerates redeliveries and events of one table handled out of order by different
    replicas: every field is guarded by the sequence that set it.
    """
    which = event.WhichOneof("body")
    seq = event.sequence
    if which == "table_created":
        if doc.created:
            return False
        created = event.table_created
        o = created.options
        doc.created = True
        doc.paid = created.HasField("stake")
        doc.leave_grace_s = float(o.leave_grace_s) if o.HasField("leave_grace_s") else DEFAULT_LEAVE_GRACE_S
        doc.max_timeouts = (
            int(o.max_timeouts_in_a_row) if o.HasField("max_timeouts_in_a_row") else DEFAULT_MAX_TIMEOUTS_IN_A_ROW
        )
        doc.timeouts_s = [
            decision_timeout_s(o, d)
            for d in (common_pb2.DECISION_CONTRACT, common_pb2.DECISION_DOUBLE, common_pb2.DECISION_CARD)
        ]
        for pb_seat in created.seats:
            if 0 <= pb_seat.index <= 3:
                s = doc.seats[pb_seat.index]
                s.player = pb_seat.player_id
                if s.control_seq == 0:
                    s.bot = pb_seat.bot
        return True
    if which == "turn_started":
        ts = event.turn_started
        if doc.finished or (doc.turn is not None and doc.turn.seq >= ts.turn_seq):
            return False
        _end_turn(doc)
        deadline = unix_s(ts.deadline) if ts.HasField("deadline") else now + _timeout_s(doc, int(ts.decision))
        doc.turn = TurnDoc(
            seq=ts.turn_seq,
            decision=int(ts.decision),
            deadline=deadline,
            client_seeds=ts.client_seeds,
            slots={str(s): Slot(due=deadline) for s in ts.seats if 0 <= s <= 3},
        )
        return True
    if which == "seat_left":
        seat = event.seat_left.seat
        if not 0 <= seat <= 3 or seq <= doc.seats[seat].control_seq:
            return False
        s = doc.seats[seat]
        s.control_seq, s.left, s.away = seq, True, None
        return True
    if which == "seat_control_changed":
        change = event.seat_control_changed
        seat = change.seat
        if not 0 <= seat <= 3 or seq <= doc.seats[seat].control_seq:
            return False
        s = doc.seats[seat]
        s.control_seq, s.bot = seq, change.bot
        if not change.bot:  # reclaimed: the player is back (§10), his count starts again
            s.left, s.reclaim, s.away, s.autos, s.human_seq = False, None, None, [], seq
        return True
    if which == "game_ended":
        if doc.finished:
            return False
        _end_turn(doc)
        doc.finished, doc.turn = True, None
        for s in doc.seats:
            s.away = s.reclaim = None
        return True
    return False


def _end_turn(doc: TableDoc) -> None:
    """A turn is over: a seat whose slot we never fired (or the table refused) answered itself."""
    turn = doc.turn
    if turn is None or turn.client_seeds:
        return
    for seat_text, slot in turn.slots.items():
        if slot.state in (PENDING, REFUSED):
            s = doc.seats[int(seat_text)]
            s.human_seq = max(s.human_seq, turn.seq)
            if s.away is not None and s.away.reason == LEAVE_REASON_TIMEOUTS and s.away.state == PENDING:
                s.away = None  # §10: he answers again, he is not treated as disconnected any more


def apply_presence(doc: TableDoc, player_id: str, connected: bool, presence_seq: int, now: float) -> bool:
    """PlayerConnected / PlayerDisconnected for a player seated at this table (§10)."""
    changed = False
    for seat, s in enumerate(doc.seats):
        if s.player != player_id or presence_seq <= s.presence_seq:
            continue
        s.presence_seq = presence_seq
        s.disconnected = not connected
        changed = True
        if connected:
            s.away = None if s.away is None or s.away.state == PENDING else s.away
            s.autos = []
            if s.bot and s.left and not doc.paid and not doc.finished:
                # §10 "On a free table ... the player may reclaim it while the game lasts."
                s.reclaim = Slot(due=now, action_id=f"reclaim-{seat}-p{presence_seq}")
        else:
            _start_away(doc, seat, LEAVE_REASON_GRACE_EXPIRED, f"leave-{seat}-p{presence_seq}", now)
    return changed


def _slot_due(slot: Slot, claim_timeout_s: float) -> float | None:
    if slot.state == PENDING:
        return slot.due
    if slot.state == CLAIMED:
        return slot.claimed_at + claim_timeout_s  # the claimer died: claim again
    return None


def all_jobs(doc: TableDoc, claim_timeout_s: float) -> list[Job]:
    """Every slot still to send, with the time it is due."""
    if doc.finished:
        return []
    jobs: list[Job] = []
    turn = doc.turn
    if turn is not None:
        for seat_text, slot in turn.slots.items():
            due = _slot_due(slot, claim_timeout_s)
            if due is not None:
                counts = not turn.client_seeds and turn.decision != common_pb2.DECISION_UNSPECIFIED
                jobs.append(Job(AUTO, doc.table_id, int(seat_text), due, turn_seq=turn.seq, counts=counts))
    for seat, s in enumerate(doc.seats):
        for kind, other in ((LEAVE, s.away), (RECLAIM, s.reclaim)):
            if other is not None and (due := _slot_due(other, claim_timeout_s)) is not None:
                jobs.append(Job(kind, doc.table_id, seat, due, reason=other.reason, action_id=other.action_id))
    return jobs


def _slot_of(doc: TableDoc, job: Job) -> Slot | None:
    if job.kind == AUTO:
        if doc.turn is None or doc.turn.seq != job.turn_seq:
            return None
        return doc.turn.slots.get(str(job.seat))
    s = doc.seats[job.seat]
    slot = s.away if job.kind == LEAVE else s.reclaim
    return slot if slot is not None and slot.action_id == job.action_id else None


def claim(doc: TableDoc, job: Job, replica: str, now: float, claim_timeout_s: float) -> bool:
    """Take the job if it is still due and nobody holds a live claim on it."""
    slot = _slot_of(doc, job)
    if slot is None or doc.finished:
        return False
    due = _slot_due(slot, claim_timeout_s)
    if due is None or due > now:
        return False
    slot.state, slot.claimed_at, slot.claimed_by = CLAIMED, now, replica
    return True


def record(doc: TableDoc, job: Job, outcome: Outcome, now: float) -> bool:
    """Write down what the table answered."""
    slot = _slot_of(doc, job)
    if outcome is Outcome.UNAVAILABLE:
        # No answer (owner handover, lazy load): release the claim, the job is due again at once.
        # (A replica that dies instead leaves its claim to go stale after claim_timeout_s.)
        if slot is None or slot.state != CLAIMED:
            return False
        slot.state, slot.claimed_at, slot.claimed_by = PENDING, 0.0, ""
        return True
    s = doc.seats[job.seat]
    if job.kind == AUTO:
        if slot is not None:
            slot.state = FIRED if outcome is Outcome.ACCEPTED else REFUSED
        if outcome is Outcome.ACCEPTED and job.counts and job.turn_seq > s.human_seq:
            if job.turn_seq not in s.autos:
                s.autos.append(job.turn_seq)
            # §10 "a connected player who lets that many decisions in a row time out is
            # treated as disconnected": his grace period starts now.
            if s.timeouts_in_a_row() >= doc.max_timeouts:
                _start_away(doc, job.seat, LEAVE_REASON_TIMEOUTS, f"leave-{job.seat}-t{job.turn_seq}", now)
        return True
    if slot is None:
        return False
    if outcome is Outcome.ACCEPTED:
        slot.state = FIRED
    elif job.kind == LEAVE:
        s.away = None
    else:
        s.reclaim = None
    return True


def next_due(doc: TableDoc, claim_timeout_s: float) -> float | None:
    """The earliest due time of `all_jobs(doc, claim_timeout_s)` (None: nothing to send),
    without building the jobs: the timers index a table at every turn."""
    if doc.finished:
        return None
    best: float | None = None
    turn = doc.turn
    if turn is not None:
        for slot in turn.slots.values():
            due = _slot_due(slot, claim_timeout_s)
            if due is not None and (best is None or due < best):
                best = due
    for s in doc.seats:
        for other in (s.away, s.reclaim):
            if other is not None:
                due = _slot_due(other, claim_timeout_s)
                if due is not None and (best is None or due < best):
                    best = due
    return best


def rendezvous(table_id: str, replicas: set[str]) -> str:
    """The replica preferred for a table: highest hash of (table, replica)."""
    return max(replicas, key=lambda r: (zlib.crc32(f"{table_id}|{r}".encode()), r))


# -- the service -------------------------------------------------------------------------------


class TimersService:
    """The timers's domain logic (see the module docstring)."""

    _sleeping_until = float("-inf")
    """When the runner wakes by itself (-inf while it works): a new due time wakes it early only
    if it comes before (a turn's deadline rarely does: no runner round per action, issue 16)."""

    def __init__(
        self,
        config: TimersConfig,
        store: DocStore,
        table: TableCommands,
        *,
        clock: Clock | None = None,
        replica_id: str | None = None,
    ) -> None:
        self.config = config
        self.store = store
        self.table = table
        self.clock: Clock = clock or SystemClock()
        self.replica_id = replica_id or f"{config.runtime.instance}-{uuid.uuid4().hex[:8]}"
        self.stats: Counter[str] = Counter()
        self.lateness_s: deque[float] = deque(maxlen=STATS_KEPT)
        """How late each command was sent after its due time (for the bench; the last STATS_KEPT)."""
        self.ingest_lag_s: deque[float] = deque(maxlen=STATS_KEPT)
        """How long after the table started a turn the timers received it (for the bench; the last STATS_KEPT)."""
        self._docs: dict[str, TableDoc] = {}
        self._known: dict[str, tuple[dict[str, Any], int]] = {}
        """Table id -> the newest document and KV revision this replica has seen (its own
        writes and the watch): `_mutate` compare-and-sets against it without reading the
        store first; a conflict (another replica wrote) drops it and reads again."""
        self._due: dict[str, float] = {}
        self._heap: list[tuple[float, str]] = []
        self._members: set[str] = set()
        self._owners: dict[str, str] = {}
        """Table id -> its rendezvous owner among the live replicas (emptied when they change)."""
        self._firing: set[str] = set()
        self._tasks: set[asyncio.Task[None]] = set()
        self._wake = asyncio.Event()
        self._stopping = False
        self._runner: asyncio.Task[None] | None = None

    # -- documents -----------------------------------------------------------------------

    async def _mutate(self, table_id: str, change: Callable[[TableDoc], bool]) -> tuple[bool, TableDoc]:
        """Change a table's document; written (compare-and-set, retried on conflict) only
        when what must survive a restart changed (`durable_part`). Returns (changed, document).

        The document starts from this replica's copy in memory (its own writes, the watch,
        and the turns it folded) with the last known revision: no read before a write. A
        turn changes nothing durable (issue 16, ADR 0012): deadlines live in memory, fed by
        the public batches every replica takes, rebuilt from the table owners after a
        restart or a reconnect (`subscribers.TimersNats.catch_up`); AutoAct is idempotent
        per turn at the table, so a turn needs no claim to be applied once. Presence, timeouts
        in a row, leaving and reclaiming (docs/rules.md §10) are written, their claims exclusive."""
        key = table_key(table_id)
        known = self._known.get(table_id)
        memory = self._docs.get(table_id)
        data: dict[str, Any] | None
        while True:
            if known is not None:
                data, revision = known
                known = None
                # This replica's copy is the newest it knows: copied, not rebuilt from JSON.
                doc = TableDoc.from_json(data) if memory is None else copy_doc(memory)
            else:
                data, revision = await self.store.get(key)
                doc = TableDoc(table_id=table_id) if data is None else TableDoc.from_json(data)
            _keep_newer_turn(doc, memory)
            before = None if data is None else durable_key(doc)
            if not change(doc):
                return False, doc
            if before is not None and durable_key(doc) == before:
                self.stats["turns_in_memory"] += 1
                self._index(doc)
                return True, doc
            written = doc.to_json()
            # A finished table's document is kept a while, for events that come late (they read
            # that it is finished and change nothing), then removed by the store itself: the
            # bucket does not grow by a document per game forever.
            ttl_s = self.config.finished_doc_ttl_s if doc.finished else 0.0
            try:
                new_revision = await self.store.put(key, written, revision, ttl_s)
            except CasConflict:
                self.stats["cas_conflicts"] += 1
                self._known.pop(table_id, None)
                memory = self._docs.get(table_id)
                continue
            self._remember(table_id, written, new_revision)
            # A turn folded in memory while the write was on its way is newer than this one.
            _keep_newer_turn(doc, self._docs.get(table_id))
            self._index(doc)
            return True, doc

    def _remember(self, table_id: str, data: dict[str, Any], revision: int) -> bool:
        """Keep (data, revision) if newer than what is known; True if it was."""
        known = self._known.get(table_id)
        if known is not None and known[1] >= revision:
            return False
        self._known[table_id] = (data, revision)
        return True

    def known_sequence(self, table_id: str) -> int:
        """The latest table sequence this replica's document of a table reflects (0: none): a
        replica catching up reads the table's public events after it (issue 16)."""
        doc = self._docs.get(table_id)
        if doc is None:
            return 0
        seqs = [s.control_seq for s in doc.seats]
        if doc.turn is not None:
            seqs.append(doc.turn.seq)
        return max(seqs)

    def knows(self, table_id: str, revision: int) -> bool:
        """True if this revision of the table's document (or a newer one) is known and indexed."""
        known = self._known.get(table_id)
        return known is not None and revision > 0 and known[1] >= revision

    # -- inputs ------------------------------------------------------------------------------

    async def on_event(self, event: events_pb2.Event) -> None:
        """A public table event (durable consumer)."""
        await self.on_events([event])

    def fold_in_memory(self, events: Sequence[events_pb2.Event]) -> bool:
        """One table's batch of public events folded into its document in memory, when nothing
        of it can need the store: the table's document is known (in memory, with its
        revision), it is `quiet` and the batch's watched events are all TurnStarted. That is
        what `on_events` would do (a turn changes nothing durable, so it writes nothing), on
        the document itself instead of a copy, without a task or an await (issue 16: the
        steady path, one call per action). False, with nothing changed, when the batch needs
        `on_events`."""
        if not events:
            return True
        table_id = events[0].table_id
        doc = self._docs.get(table_id)  # its id was checked (`token`) when the document was made
        if doc is None or table_id not in self._known or not quiet(doc):
            return False
        turns = []
        for event in events:
            which = event.WhichOneof("body")
            if which == "turn_started":
                if event.table_id != table_id:
                    return False
                turns.append(event)
            elif which in WATCHED_EVENTS:
                return False
        if not turns:
            return True
        now = self.clock.now()
        changed = False
        for event in turns:  # a quiet document stays quiet through a turn: same test for each
            if event.HasField("time"):
                self.ingest_lag_s.append(now - unix_s(event.time))
            changed = apply_event(doc, event, now) or changed
        if changed:
            self.stats["turns_in_memory"] += 1
            self._index(doc)
        return True

    async def on_events(self, events: list[events_pb2.Event]) -> None:
        """Public table events in stream order (one fetched batch of one table's subject):
        every event of a table folded into its document, then ONE compare-and-set write
        per table (not one per event: issue 10). Redelivered or out-of-order events are
        harmless (`apply_event` guards every field by sequence)."""
        by_table: dict[str, list[events_pb2.Event]] = {}
        for event in events:
            which = event.WhichOneof("body")
            if which not in WATCHED_EVENTS:
                continue
            by_table.setdefault(token(event.table_id, "table id"), []).append(event)
        for table_id, batch in by_table.items():
            now = self.clock.now()
            for event in batch:
                if event.HasField("turn_started") and event.HasField("time"):
                    self.ingest_lag_s.append(now - unix_s(event.time))

            def fold(doc: TableDoc, batch: list[events_pb2.Event] = batch, now: float = now) -> bool:
                changed = [apply_event(doc, event, now) for event in batch]  # all of them, no short cut
                return any(changed)

            await self._mutate(table_id, fold)
            for event in batch:
                if event.HasField("table_created"):
                    for s in event.table_created.seats:
                        if s.player_id and not s.bot:
                            await self._index_player(s.player_id, table_id)

    async def _index_player(self, player_id: str, table_id: str) -> None:
        """p.<player> -> current table, keeping the presence already known."""
        key = player_key(player_id)
        while True:
            data, revision = await self.store.get(key)
            doc = dict(data or {"connected": True, "seq": 0})
            if doc.get("table") == table_id:
                return
            doc["table"] = table_id
            try:
                await self.store.put(key, doc, revision)
            except CasConflict:
                continue
            if not doc["connected"]:  # disconnected before the table was known
                await self._disconnected_early(table_id, player_id, int(doc["seq"]))
            return

    async def _disconnected_early(self, table_id: str, player_id: str, presence_seq: int) -> None:
        now = self.clock.now()
        await self._mutate(table_id, lambda d: apply_presence(d, player_id, False, presence_seq, now))

    async def on_presence(self, event: events_pb2.Event, presence_seq: int) -> None:
        """PlayerConnected / PlayerDisconnected from the gateway; `presence_seq` orders them."""
        if event.HasField("player_connected"):
            player_id, connected = event.player_connected.player_id, True
        elif event.HasField("player_disconnected"):
            player_id, connected = event.player_disconnected.player_id, False
        else:
            return
        key = player_key(player_id)
        now = self.clock.now()
        while True:
            data, revision = await self.store.get(key)
            doc = dict(data or {"seq": 0})
            if presence_seq <= int(doc.get("seq", 0)):
                return
            doc.update(connected=connected, seq=presence_seq, since=now)
            try:
                await self.store.put(key, doc, revision)
            except CasConflict:
                continue
            break
        table_id = doc.get("table")
        if table_id:
            await self._mutate(str(table_id), lambda d: apply_presence(d, player_id, connected, presence_seq, now))

    def on_doc(self, table_id: str, data: dict[str, Any] | None, revision: int = 0) -> None:
        """A document changed in the store (the KV watch): reschedule the table (the turn this
        replica folded stays if it is newer than the written one)."""
        if data is None:
            self._forget(table_id)
            return
        if revision:
            if self.knows(table_id, revision):
                return  # this replica's own write, indexed when it was written
            self._remember(table_id, data, revision)
        doc = TableDoc.from_json(data)
        _keep_newer_turn(doc, self._docs.get(table_id))
        self._index(doc)

    def _forget(self, table_id: str) -> None:
        self._docs.pop(table_id, None)
        self._due.pop(table_id, None)
        self._known.pop(table_id, None)
        self._owners.pop(table_id, None)

    def tables_in_memory(self) -> int:
        """Tables this replica holds a document of (the unfinished ones it has heard of)."""
        return len(self._docs)

    def on_members(self, members: set[str]) -> None:
        """The live replicas changed (heartbeats): recompute who fires what."""
        if members == self._members:
            return
        self._members = set(members)
        self._owners.clear()
        for doc in list(self._docs.values()):
            self._index(doc)

    def _index(self, doc: TableDoc) -> None:
        if doc.finished:
            # A finished table has no deadline left (docs/rules.md §9, §10): nothing of it stays
            # in memory, or a long-running replica would hold every table it ever timed. Its
            # stored document says it is finished; an event that comes late for it reads that
            # (`_mutate`) and changes nothing.
            self._forget(doc.table_id)
            return
        self._docs[doc.table_id] = doc
        due = next_due(doc, self.config.claim_timeout_s)
        if due is None:
            self._due.pop(doc.table_id, None)
            return
        if self.rendezvous_owner(doc.table_id) != self.replica_id:
            due += self.config.takeover_s
        if self._due.get(doc.table_id) != due:
            self._due[doc.table_id] = due
            heapq.heappush(self._heap, (due, doc.table_id))
            if due < self._sleeping_until:
                self._wake.set()

    def rendezvous_owner(self, table_id: str) -> str:
        owner = self._owners.get(table_id)
        if owner is None:
            owner = self._owners[table_id] = rendezvous(table_id, self._members | {self.replica_id})
        return owner

    # -- firing -------------------------------------------------------------------------------

    def start(self) -> None:
        if self._runner is None:
            self._stopping = False
            self._runner = asyncio.ensure_future(self._run())

    async def stop(self) -> None:
        self._stopping = True
        self._wake.set()
        if self._runner is not None:
            await cancel_and_wait([self._runner])
            self._runner = None
        await cancel_and_wait(list(self._tasks))

    async def _run(self) -> None:
        """Fire what is due, then sleep until the earliest due time still valid (or until
        `_index` wakes it for an earlier one), `tick_s` at most. Each table has one due time
        (`_due`); the heap keeps every due time pushed, and those a newer one replaced are
        dropped when they reach its top, due or not, so the runner never wakes for a turn
        that was answered (issue 16: it ticked every 50 ms in `trix up`, and woke for every
        answered turn's old deadline). The `tick_s` bound (1 s) only limits how late a
        deadline fires after the wall clock steps forward (waits run on the monotonic clock)."""
        heap, due_of = self._heap, self._due
        while not self._stopping:
            now = self.clock.now()
            while heap and (heap[0][0] <= now or due_of.get(heap[0][1]) != heap[0][0]):
                due, table_id = heapq.heappop(heap)
                if due_of.get(table_id) != due or table_id in self._firing:
                    continue  # replaced by a newer due time; or firing: `_fire_guarded` pushes it again
                del due_of[table_id]
                self._firing.add(table_id)
                start_kept(self._tasks, self._fire_guarded(table_id))
            self._wake.clear()
            wake_at = min(heap[0][0], now + self.config.tick_s) if heap else now + self.config.tick_s
            self._sleeping_until = wake_at
            sleeper = asyncio.ensure_future(self.clock.sleep_until(wake_at))
            waker = asyncio.ensure_future(self._wake.wait())
            try:
                await asyncio.wait({sleeper, waker}, timeout=self.config.tick_s, return_when=asyncio.FIRST_COMPLETED)
            finally:
                self._sleeping_until = float("-inf")
                sleeper.cancel()
                waker.cancel()

    async def _fire_guarded(self, table_id: str) -> None:
        try:
            await self.fire(table_id)
        except Exception as exc:  # noqa: BLE001 - one table's failure must not stop the scheduler
            log.warning("firing failed, will retry", table_id=table_id, error=repr(exc))
            self.stats["fire_errors"] += 1
            self._due[table_id] = self.clock.now() + self.config.tick_s
            heapq.heappush(self._heap, (self._due[table_id], table_id))
        finally:
            self._firing.discard(table_id)
            due = self._due.get(table_id)
            if due is not None:  # rescheduled while firing: its heap entry was skipped
                heapq.heappush(self._heap, (due, table_id))
            self._wake.set()

    async def fire(self, table_id: str) -> int:
        """Claim and send every due job of a table; returns how many were sent."""
        doc = self._docs.get(table_id)
        if doc is None:
            data, revision = await self.store.get(table_key(table_id))
            if data is None:
                return 0
            self._remember(table_id, data, revision)
            doc = TableDoc.from_json(data)
        now = self.clock.now()
        sent = 0
        for job in all_jobs(doc, self.config.claim_timeout_s):
            if job.due > now:
                continue
            won, doc = await self._mutate(table_id, self._claimer(job, now))
            if not won:
                self.stats["claims_lost"] += 1
                continue
            self.lateness_s.append(self.clock.now() - job.due)
            outcome = await self._send(job)
            sent += 1
            self.stats[f"{job.kind}_{outcome.value}"] += 1
            log.info("timer fired", table_id=table_id, kind=job.kind, seat=job.seat, outcome=outcome.value)
            _, doc = await self._mutate(table_id, self._recorder(job, outcome))
            if outcome is Outcome.UNAVAILABLE:
                await asyncio.sleep(RETRY_UNAVAILABLE_S)  # real time: the owner is changing hands
        _keep_newer_turn(doc, self._docs.get(table_id))  # a turn folded in while it slept
        self._index(doc)
        return sent

    def _claimer(self, job: Job, now: float) -> Callable[[TableDoc], bool]:
        return lambda d: claim(d, job, self.replica_id, now, self.config.claim_timeout_s)

    def _recorder(self, job: Job, outcome: Outcome) -> Callable[[TableDoc], bool]:
        return lambda d: record(d, job, outcome, self.clock.now())

    async def _send(self, job: Job) -> Outcome:
        if job.kind == AUTO:
            return await self.table.auto_act(job.table_id, job.seat, job.turn_seq)
        if job.kind == LEAVE:
            return await self.table.leave(job.table_id, job.seat, job.reason, job.action_id)
        return await self.table.reclaim(job.table_id, job.seat, job.action_id)

    # -- reads (gRPC) ------------------------------------------------------------------------------

    async def table_doc(self, table_id: str) -> TableDoc:
        """This replica's view of a table (its turn in memory), else the stored document."""
        doc = self._docs.get(table_id)
        if doc is not None:
            return TableDoc.from_json(doc.to_json())
        data, _ = await self.store.get(table_key(table_id))
        if data is None:
            raise NotFound(f"no timers for table {table_id!r}")
        return TableDoc.from_json(data)

    async def pending_deadlines(self, table_id: str) -> list[tuple[int, int, int, float]]:
        """(seat, decision, turn_seq, deadline) of the seats whose decision is pending, earliest first."""
        doc = await self.table_doc(table_id)
        turn = doc.turn
        if turn is None or doc.finished:
            return []
        out = [
            (int(s), turn.decision, turn.seq, turn.deadline) for s, slot in turn.slots.items() if slot.state == PENDING
        ]
        return sorted(out, key=lambda d: (d[3], d[0]))

    async def presence(self, player_id: str) -> tuple[bool, int, float | None]:
        """(connected, timeouts in a row, leave_at) of a player, as the timers see it (§10)."""
        data, _ = await self.store.get(player_key(player_id))
        if data is None:
            raise NotFound(f"unknown player {player_id!r}")
        connected = bool(data.get("connected", True))
        table_id = data.get("table")
        if not table_id:
            return connected, 0, None
        try:
            doc = await self.table_doc(str(table_id))
        except NotFound:
            return connected, 0, None
        for s in doc.seats:
            if s.player == player_id:
                leave_at = s.away.due if s.away is not None and s.away.state == PENDING else None
                return connected, s.timeouts_in_a_row(), leave_at
        return connected, 0, None
