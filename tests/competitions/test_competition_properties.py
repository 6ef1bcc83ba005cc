"""Properties of a whole competition (issue 43's first proof), over competitions hypothesis
draws: any format, variant, number of rounds and entrants, leavers at any table and bot fill
on or off. Each yields one final ranking holding every unit once; nobody is seated twice in a
round; every round is opened once, in order; a knockout's later tables hold only winners,
never a leaver; a points round seats every unit still in; no prize goes to a bot; coins are
conserved (fees = prizes + refunds + the house's share).

Pure functions over synthetic table outcomes (no engine): fixed seed, derandomized.
"""

from __future__ import annotations

import random

from competition_support import NOW_MS, humans, options, synthetic_outcome
from hypothesis import given, settings
from hypothesis import strategies as st

from trix.competitions.model import Outcome, table_order
from trix.competitions.money import HOLD, HOUSE, PRIZE, REFUND, plan
from trix.competitions.options import CompetitionOptions, FixedPrize, PoolPrize, knockout_capacity, validate_options
from trix.competitions.run import CompetitionRun
from trix.competitions.seating import start

SETTINGS = settings(max_examples=150, deadline=None, derandomize=True, database=None)


@st.composite
def competitions(draw: st.DrawFn) -> tuple[CompetitionOptions, int, float, int, list[int]]:
    """Options, the humans at the start, the leave rate per table, a seed for the outcomes, and
    which humans left before the start (indexes)."""
    variant = draw(st.sampled_from(["TRIX", "COMPLEX", "TRIX_PARTNERSHIP", "COMPLEX_PARTNERSHIP"]))
    fmt = draw(st.sampled_from(["knockout", "points"]))
    rounds = draw(st.integers(min_value=1, max_value=4 if fmt == "points" else 3))
    partnership = variant.endswith("PARTNERSHIP")
    if fmt == "knockout":
        capacity = knockout_capacity(rounds, partnership)
    else:
        capacity = 4 * draw(st.integers(min_value=1, max_value=16))
    prize = draw(
        st.sampled_from([PoolPrize((100,)), PoolPrize((50, 30, 20), house_fee_percent=0), FixedPrize((300, 100))])
    )
    paid_places = len(prize.coins) if isinstance(prize, FixedPrize) else len(prize.shares_percent)
    if paid_places > capacity // (2 if partnership else 1):
        prize = PoolPrize((100,))
    opts = options(
        variant=variant,
        format=fmt,
        rounds=rounds,
        capacity=capacity,
        prize=prize,
        entry_fee=draw(st.sampled_from([1, 7, 100])),
        bot_fill=draw(st.booleans()),
        seating=draw(st.sampled_from(["random", "rating"])),
    )
    validate_options(opts, NOW_MS)
    # Mostly around the 75 % line and above, where the competition starts.
    n = draw(st.one_of(st.integers(min_value=capacity * 3 // 4 - 1, max_value=capacity), st.integers(0, capacity)))
    rate = draw(st.sampled_from([0.0, 0.2, 0.6]))
    gone = draw(st.lists(st.integers(min_value=0, max_value=capacity + 3), max_size=4, unique=True))
    return opts, n, rate, draw(st.integers(min_value=0, max_value=2**32)), gone


def play(opts: CompetitionOptions, n: int, rate: float, seed: int) -> CompetitionRun | None:
    began = start(opts, humans(n))
    if began.cancelled:
        return None
    rng = random.Random(seed)
    run = CompetitionRun("c", opts, seed.to_bytes(32, "big"), began.entrants)
    tables = list(run.rounds[0])
    for _ in range(opts.rounds):
        opened = []
        for table in tables:
            human_seats = [s for s, p in enumerate(table.players) if not p.startswith("bot-")]
            leaver = rng.choice(human_seats) if human_seats and rng.random() < rate else None
            opened += run.record(table.round, table.index, synthetic_outcome(table, rng, leaver, opts.partnership))
        tables = opened
    assert not tables, "a round opened after the last one"
    return run


Played = tuple[CompetitionOptions, int, CompetitionRun | None]


@st.composite
def played(draw: st.DrawFn) -> Played:
    """A competition drawn and played to its end (None: cancelled at the start)."""
    opts, n, rate, seed, _ = draw(competitions())
    return opts, n, play(opts, n, rate, seed)


@SETTINGS
@given(played())
def test_any_competition_yields_one_final_ranking_of_every_unit(case: Played) -> None:
    opts, n, run = case
    if run is None:
        assert n < opts.capacity
        return
    assert run.finished
    ranking = run.ranking()
    seated = {u for tables in run.rounds for t in tables for u in t.units}
    assert sorted(ranking) == sorted(seated), "every unit that sat is ranked exactly once"
    players = [p for u in ranking for p in u]
    assert len(players) == len(set(players))
    assert {e.player for e in humans(n)} <= set(players)


@SETTINGS
@given(played())
def test_nobody_is_seated_twice_in_a_round_and_every_round_opens_once_in_order(case: Played) -> None:
    opts, _, run = case
    if run is None:
        return
    assert [t.round for tables in run.rounds for t in tables[:1]] == list(range(1, opts.rounds + 1))
    for number, tables in enumerate(run.rounds, start=1):
        seated = [p for t in tables for p in t.players]
        assert len(seated) == len(set(seated)), f"round {number}"
        assert all(t.round == number for t in tables)
        assert [t.index for t in tables] == list(range(len(tables)))
        assert all((number, t.index) in run.outcomes for t in tables)


@SETTINGS
@given(played())
def test_knockout_tables_hold_only_winners_and_points_rounds_seat_everyone_still_in(case: Played) -> None:
    opts, _, run = case
    if run is None:
        return
    left = set()
    for tables in run.rounds[:-1]:
        later = {u for t in run.rounds[tables[0].round] for u in t.units}
        winners = set()
        for t in tables:
            order = table_order(t, run.outcomes[t.round, t.index])
            winners.add(order[0].unit)
            left |= {p.unit for p in order if p.left}
            assert not order[0].left
        if opts.format == "knockout":
            assert later == winners
            assert not later & left, "a leaver is out"
        else:
            still_in = {u for t in tables for u in t.units} - left
            assert still_in <= later and not later & left
    if opts.format == "knockout":
        final = run.rounds[-1][0]
        assert run.ranking()[0] == table_order(final, run.outcomes[final.round, 0])[0].unit


@SETTINGS
@given(competitions())
def test_no_prize_goes_to_a_bot_and_coins_are_conserved(
    case: tuple[CompetitionOptions, int, float, int, list[int]],
) -> None:
    opts, n, rate, seed, gone_indexes = case
    paid = [e.player for e in humans(n + len(gone_indexes))]
    gone = [paid[i] for i in gone_indexes if i < len(paid)]
    stayed = [p for p in paid if p not in gone]
    run = play(opts, len(stayed), rate, seed)
    ranking = None if run is None else run.ranking()
    if ranking is not None:  # play() seated humans(len(stayed)): rename to the players who stayed
        rename = {f"p{i:03d}": p for i, p in enumerate(stayed)}
        ranking = [tuple(rename.get(p, p) for p in u) for u in ranking]
    entries = plan("c", opts, paid, gone, ranking)
    held = sum(e.coins for e in entries if e.kind == HOLD)
    assert held == opts.entry_fee * len(paid)
    assert held == sum(e.coins for e in entries if e.kind in (PRIZE, REFUND, HOUSE))
    assert not [e for e in entries if e.kind == PRIZE and e.player.startswith("bot-")]
    refunds = {e.player: e.coins for e in entries if e.kind == REFUND}
    for player in gone:
        assert refunds.get(player, 0) == opts.entry_fee // 2, "half back before the start"
    if ranking is None:
        assert all(refunds[p] == opts.entry_fee for p in stayed), "cancelled: the full fee back"
    else:
        assert not set(refunds) & set(stayed), "nothing back after the start"
        human_units = [u for u in ranking if any(not p.startswith("bot-") for p in u)]
        prized = {e.player for e in entries if e.kind == PRIZE}
        assert prized <= {p for u in human_units[:3] for p in u}
    assert len({e.key for e in entries}) == len(entries)


def test_outcome_of_a_record_reads_its_ranking_totals_and_leaver() -> None:
    record = {"ranking": [1, 2, 1, 2], "totals": [5, -5, 5, -5], "left": 1}
    assert Outcome.from_record(record) == Outcome((1, 2, 1, 2), (5, -5, 5, -5), 1)
