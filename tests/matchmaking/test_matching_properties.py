"""Properties of the pure matching (trix.matchmaking.matching: build_units, form_groups,
assign_seats), over queues hypothesis draws: no ticket is matched twice, no table holds
more than four, partners always sit opposite (docs/rules.md §1), every anchor's table is
within its rating window, bots fill only where allowed and after the wait.

Pure functions, no I/O: 200 queues a property in a few seconds (fixed seed, derandomized).
"""

from __future__ import annotations

import random

from hypothesis import given, settings
from hypothesis import strategies as st

from trix.matchmaking.matching import RatingWindow, assign_seats, build_units, form_groups
from trix.matchmaking.records import Ticket
from trix.matchmaking.wishes import Wish

WISH = Wish(variant=2, options=(), stake=0)
NOW = 10_000.0


@st.composite
def queues(draw: st.DrawFn) -> list[Ticket]:
    """Up to 24 tickets of one queue: solos, mutual partner pairs and partners not queued."""
    n = draw(st.integers(min_value=0, max_value=24))
    tickets = [
        Ticket(
            ticket_id=f"00-{i:03d}",
            player_id=f"p{i}",
            wish=WISH,
            rating=draw(st.floats(min_value=0, max_value=3000, allow_nan=False)),
            created_at=NOW - draw(st.floats(min_value=0, max_value=120, allow_nan=False)),
        )
        for i in range(n)
    ]
    for i in range(0, n - 1, 2):
        kind = draw(st.sampled_from(["solo", "pair", "one-sided", "absent"]))
        if kind == "pair":
            tickets[i].partner_id, tickets[i + 1].partner_id = tickets[i + 1].player_id, tickets[i].player_id
        elif kind == "one-sided":
            tickets[i].partner_id = tickets[i + 1].player_id
        elif kind == "absent":
            tickets[i].partner_id = "nobody-queued"
    return tickets


WINDOWS = st.builds(
    RatingWindow,
    base=st.floats(min_value=0, max_value=500, allow_nan=False),
    growth_per_s=st.floats(min_value=0, max_value=50, allow_nan=False),
    maximum=st.floats(min_value=0, max_value=3000, allow_nan=False),
)

SETTINGS = settings(max_examples=200, deadline=None, derandomize=True, database=None)


@SETTINGS
@given(queues(), WINDOWS, st.floats(min_value=0, max_value=60), st.booleans())
def test_no_ticket_is_matched_twice_and_no_table_holds_more_than_four(
    tickets: list[Ticket], window: RatingWindow, bot_fill_after_s: float, bots_allowed: bool
) -> None:
    groups = form_groups(tickets, NOW, window, bot_fill_after_s, bots_allowed)
    matched = [t.ticket_id for g in groups for u in g.units for t in u.tickets]
    assert len(matched) == len(set(matched))
    queued = {t.ticket_id for t in tickets}
    assert set(matched) <= queued
    for group in groups:
        assert 1 <= group.humans <= 4


@SETTINGS
@given(queues(), WINDOWS, st.floats(min_value=0, max_value=60), st.booleans())
def test_a_short_table_is_bot_filled_only_when_bots_are_allowed_after_the_wait(
    tickets: list[Ticket], window: RatingWindow, bot_fill_after_s: float, bots_allowed: bool
) -> None:
    for group in form_groups(tickets, NOW, window, bot_fill_after_s, bots_allowed):
        if group.humans < 4:
            anchor = group.units[0]
            assert bots_allowed
            assert NOW - anchor.created_at >= bot_fill_after_s


@SETTINGS
@given(queues(), WINDOWS)
def test_every_unit_of_a_table_is_within_the_anchors_rating_window(tickets: list[Ticket], window: RatingWindow) -> None:
    for group in form_groups(tickets, NOW, window, bot_fill_after_s=30.0, bots_allowed=True):
        anchor, *others = group.units
        width = window.at(NOW - anchor.created_at)
        for unit in others:
            assert abs(unit.rating - anchor.rating) <= width


@SETTINGS
@given(queues())
def test_only_mutual_partners_form_a_pair_and_a_ticket_is_in_one_unit(tickets: list[Ticket]) -> None:
    units = build_units(tickets)
    players = [t.player_id for u in units for t in u.tickets]
    assert len(players) == len(set(players))
    for unit in units:
        assert unit.size in (1, 2)
        if unit.size == 2:
            a, b = unit.tickets
            assert (a.partner_id, b.partner_id) == (b.player_id, a.player_id)
        else:
            assert not unit.tickets[0].partner_id


@SETTINGS
@given(queues(), WINDOWS, st.integers(min_value=0, max_value=2**32 - 1))
def test_partners_sit_opposite_and_every_ticket_gets_one_seat(
    tickets: list[Ticket], window: RatingWindow, seed: int
) -> None:
    rng = random.Random(seed)
    for group in form_groups(tickets, NOW, window, bot_fill_after_s=0.0, bots_allowed=True):
        seats = assign_seats(group, rng)
        assert len(seats) == 4
        seated = [t.ticket_id for t in seats if t is not None]
        assert sorted(seated) == sorted(t.ticket_id for u in group.units for t in u.tickets)
        where = {t.player_id: s for s, t in enumerate(seats) if t is not None}
        for unit in group.units:
            if unit.size == 2:
                a, b = unit.tickets
                assert (where[a.player_id] - where[b.player_id]) % 4 == 2  # docs/rules.md §1: partners opposite
