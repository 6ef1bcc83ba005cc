"""How the timers' document of a table changes (pure: no I/O).

Owns `apply_event` (a public table event folded in: TableCreated, TurnStarted, SeatLeft,
SeatControlChanged, GameEnded, the `WATCHED_EVENTS`; every field guarded by the sequence
that set it, so redeliveries and out-of-order events are harmless) and `apply_presence`
(PlayerConnected / PlayerDisconnected: a disconnected player's grace, docs/rules.md §10).
"""

from __future__ import annotations

from google.protobuf.timestamp_pb2 import Timestamp

from trix.rules import DEFAULT_LEAVE_GRACE_S, DEFAULT_MAX_TIMEOUTS_IN_A_ROW, decision_timeout_s  # docs/rules.md §9, §10
from trix.timers.document import PENDING, REFUSED, Slot, TableDoc, TurnDoc
from trix.v1 import common_pb2, events_pb2

WATCHED_EVENTS = frozenset({"table_created", "turn_started", "seat_left", "seat_control_changed", "game_ended"})
"""The public table events that change a timers document; the others are acked unread."""

LEAVE_REASON_GRACE_EXPIRED = 2  # trix.v1.LeaveReason
LEAVE_REASON_TIMEOUTS = 3


def unix_s(timestamp: Timestamp) -> float:
    """A protobuf Timestamp as unix seconds. Not `ToDatetime().timestamp()`: that datetime is
    naive UTC, and `timestamp()` reads a naive datetime as local time (a deadline an hour
    early on a machine whose zone is an hour east of UTC)."""
    return timestamp.seconds + timestamp.nanos / 1e9


def _timeout_s(doc: TableDoc, decision: int) -> float:
    if decision == common_pb2.DECISION_DOUBLE:
        return doc.timeouts_s[1]
    if decision == common_pb2.DECISION_CARD:
        return doc.timeouts_s[2]
    return doc.timeouts_s[0]


def start_away(doc: TableDoc, seat: int, reason: int, key: str, now: float) -> None:
    """§10: the seat has `leave_grace_s` to come back, then it has left for good."""
    s = doc.seats[seat]
    if doc.finished or s.bot or s.left or not s.player:
        return
    due = now + doc.leave_grace_s
    if s.away is not None and s.away.due <= due:
        return
    s.away = Slot(due=due, reason=reason, action_id=key)


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
        elif not s.left:  # handed to auto-play (§10): the bot answers, nothing is pending for him
            s.away, s.autos = None, []
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
            start_away(doc, seat, LEAVE_REASON_GRACE_EXPIRED, f"leave-{seat}-p{presence_seq}", now)
    return changed
