"""The timers and a competition's seat handed to auto-play by its player (docs/rules.md §10): the
bot answers for him from then on, so a leave pending for his timeouts or his disconnection is
dropped (else it would fire and rank him last, out of the competition), and his coming back to a
seat handed over is not a free table's reclaim; a leaver's seat taken by the bot keeps its state."""

from __future__ import annotations

from trix.timers.document import SeatDoc, Slot, TableDoc
from trix.timers.folding import LEAVE_REASON_TIMEOUTS, apply_event, apply_presence
from trix.v1 import events_pb2


def _control(seq: int, bot: bool) -> events_pb2.Event:
    change = events_pb2.SeatControlChanged(seat=0, bot=bot, player_id="p0")
    return events_pb2.Event(table_id="t1", sequence=seq, seat_control_changed=change)


def test_a_seat_handed_to_auto_play_drops_his_pending_leave_and_is_not_reclaimed_on_presence() -> None:
    doc = TableDoc(table_id="t1", created=True)
    doc.seats[0] = SeatDoc(player="p0", control_seq=5, autos=[7, 8])
    doc.seats[0].away = Slot(due=100.0, reason=LEAVE_REASON_TIMEOUTS, action_id="leave-0-t8")
    assert apply_event(doc, _control(9, bot=True), now=50.0)
    seat = doc.seats[0]
    assert seat.bot and not seat.left and seat.away is None and seat.autos == []
    apply_presence(doc, "p0", connected=True, presence_seq=3, now=60.0)
    assert seat.reclaim is None  # only he takes it back (ReclaimSeat), never the timers


def test_a_free_tables_leaver_keeps_his_reclaim_on_presence() -> None:
    doc = TableDoc(table_id="t1", created=True)
    doc.seats[0] = SeatDoc(player="p0", control_seq=5, left=True)
    assert apply_event(doc, _control(9, bot=True), now=50.0)
    apply_presence(doc, "p0", connected=True, presence_seq=3, now=60.0)
    assert doc.seats[0].reclaim is not None
