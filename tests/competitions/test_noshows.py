"""Repeated no-shows (issue 43, docs/adr/0026): who never took his auto-played seat, counted once
per competition, and the documented growing wait before registering again."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from trix.competitions.noshows import HOUR_MS, WINDOW_MS, NoShows, no_show_wait_message, no_shows, wait_ms
from trix.v1 import common_pb2, events_pb2


def _created(*seats: tuple[str, bool]) -> events_pb2.Event:
    created = events_pb2.TableCreated(
        seats=[common_pb2.Seat(index=i, player_id=p, bot=bot) for i, (p, bot) in enumerate(seats)]
    )
    return events_pb2.Event(table_created=created)


def _control(seat: int, player: str, bot: bool) -> events_pb2.Event:
    return events_pb2.Event(seat_control_changed=events_pb2.SeatControlChanged(seat=seat, player_id=player, bot=bot))


def test_a_no_show_is_a_human_whose_auto_played_seat_he_never_took() -> None:
    events = [
        _created(("ann", True), ("bot-1", True), ("cy", True), ("dee", False)),
        _control(2, "cy", False),  # cy came, took his seat,
        _control(2, "cy", True),  # left it to the bot again: he showed up
        _control(1, "bot-1", False),
        events_pb2.Event(game_ended=events_pb2.GameEnded()),
    ]
    assert no_shows(events) == ["ann"]  # a bot is never one; dee sat from the start


def test_the_wait_grows_with_the_no_shows_of_the_last_seven_days() -> None:
    assert [wait_ms(n) for n in range(6)] == [0, 0, HOUR_MS, 24 * HOUR_MS, 7 * 24 * HOUR_MS, 7 * 24 * HOUR_MS]
    record = NoShows()
    record.record("ann", "c1", 0)
    assert record.opens_at_ms("ann", 10) == 10 - 10  # one no-show: at once (opens at the latest)
    record.record("ann", "c2", 1_000)
    assert record.opens_at_ms("ann", 1_000) == 1_000 + HOUR_MS
    record.record("ann", "c2", 5_000)  # the same competition again: still two
    assert record.opens_at_ms("ann", 1_000) == 1_000 + HOUR_MS
    record.record("ann", "c3", WINDOW_MS + 500)  # c1 is out of the window: two again
    assert record.opens_at_ms("ann", WINDOW_MS + 500) == WINDOW_MS + 500 + HOUR_MS
    assert record.opens_at_ms("bob", 42) == 42


def test_the_refusal_names_when_registration_opens_again() -> None:
    assert no_show_wait_message(HOUR_MS) == (
        "you missed your table in recent competitions: you may register again from 1970-01-01 01:00 UTC"
    )


@given(st.lists(st.integers(0, 30 * 24 * HOUR_MS), min_size=1, max_size=12), st.integers(0, 30 * 24 * HOUR_MS))
def test_registration_opens_after_the_latest_no_show_and_a_quicker_repeat_waits_longer(
    times: list[int], extra: int
) -> None:
    times = sorted(times)
    record = NoShows()
    for i, t in enumerate(times):
        record.record("ann", f"c{i}", t)
    opens = record.opens_at_ms("ann", times[-1])
    assert opens >= times[-1]
    soon = NoShows({p: dict(c) for p, c in record.seen.items()})
    late = NoShows({p: dict(c) for p, c in record.seen.items()})
    soon.record("ann", "again", opens)  # missed again as soon as he could register
    late.record("ann", "again", opens + extra)
    assert soon.opens_at_ms("ann", opens) - opens >= late.opens_at_ms("ann", opens + extra) - (opens + extra)


@pytest.mark.parametrize("count", [1, 2, 3, 4])
def test_no_shows_spread_beyond_seven_days_never_wait(count: int) -> None:
    record = NoShows()
    for i in range(count):
        record.record("ann", f"c{i}", i * WINDOW_MS)
    latest = (count - 1) * WINDOW_MS
    assert record.opens_at_ms("ann", latest) == latest
