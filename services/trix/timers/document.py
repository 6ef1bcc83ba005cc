"""The timers' document of one table and its JSON (pure: no I/O).

Owns `TableDoc`: the current turn with one slot per pending seat (kept in memory only), and
per seat its presence, timeouts in a row and a pending leave or reclaim (`SeatDoc`, `Slot`).
Its durable part (`durable_part`, compared by `durable_key`) is written to one JSON document
per table in the `timer_deadlines` KV bucket, key `t.<table>` (`table_key`); a player's
presence and current table under `p.<player>` (`player_key`). `quiet` says when a turn
cannot change the durable part (the steady path writes nothing).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from trix.natsio.subjects import token
from trix.rules import (  # docs/rules.md §9, §10
    DEFAULT_LEAVE_GRACE_S,
    DEFAULT_MAX_TIMEOUTS_IN_A_ROW,
    DEFAULT_TIMEOUT_S,
    TIMED_DECISIONS,
)

PENDING = "pending"
CLAIMED = "claimed"
FIRED = "fired"
REFUSED = "refused"


def table_key(table_id: str) -> str:
    return f"t.{token(table_id, 'table id')}"


def player_key(player_id: str) -> str:
    return f"p.{token(player_id, 'player id')}"


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
        deep recursion was ~7 % of the timers' CPU under load)."""
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
    timers copy a document per action)."""
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


def durable_part(data: dict[str, Any]) -> dict[str, Any]:
    """What of a document (`TableDoc.to_json`) must survive a restart: all but the turn (it
    lives in memory), and of each seat's timeouts only those since its last own
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


def keep_newer_turn(doc: TableDoc, memory: TableDoc | None) -> None:
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
