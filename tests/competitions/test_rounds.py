"""The rounds of a competition (issue 43), example by example: the seating drawn from the
committed seed, the 75 % rule and bot fill at the start, the knockout's winners going on (a
leaver last at his table, with his partner), the points format's table points, standings and
Swiss-like seating, and the run's guards (no round twice, no table ended twice)."""

from __future__ import annotations

import random

import pytest
from competition_support import SEED, humans, options, synthetic_outcome

from trix.competitions import knockout, points
from trix.competitions.model import Entrant, Outcome, Seating, table_order
from trix.competitions.options import CompetitionError
from trix.competitions.run import CompetitionRun
from trix.competitions.seating import draw, first_round, seating_commitment, snake, start
from trix.fairness import commitment, shuffled, shuffled_deck


def test_the_seating_seed_is_committed_by_its_sha256_as_a_table_seed_is() -> None:
    assert seating_commitment(SEED) == commitment(SEED)
    assert len(seating_commitment(SEED)) == 64


def test_the_draw_is_the_rules_shuffle_of_the_entrants_so_the_seed_redraws_it() -> None:
    entrants = humans(16)
    assert draw(SEED, entrants) == draw(SEED, list(entrants))
    assert draw(SEED, entrants) != draw(bytes(32), entrants)
    assert sorted(e.player for e in draw(SEED, entrants)) == [e.player for e in entrants]
    assert shuffled(SEED, "x", 3, 52) == shuffled_deck(SEED, "x", 3)  # one shuffle, docs/rules.md §11


def test_under_75_percent_full_at_the_start_the_competition_is_cancelled() -> None:
    assert start(options(), humans(11)).cancelled.startswith("underfilled: 11 of 16")
    began = start(options(), humans(12))
    assert not began.cancelled
    assert [e.bot for e in began.entrants].count(True) == 4


def test_without_bot_fill_a_table_that_cannot_be_full_cancels() -> None:
    assert "bot fill is off" in start(options(bot_fill=False), humans(15)).cancelled
    assert not start(options(bot_fill=False), humans(16)).cancelled
    assert (
        "do not fill tables of four"
        in start(options(format="points", capacity=20, bot_fill=False), humans(18)).cancelled
    )
    assert len(start(options(format="points", capacity=20, bot_fill=False), humans(16)).entrants) == 16


def test_a_player_id_that_looks_like_a_bot_or_a_double_registration_is_refused() -> None:
    with pytest.raises(CompetitionError, match="may not start with 'bot-'"):
        start(options(), [Entrant("bot-7"), *humans(12)])
    with pytest.raises(CompetitionError, match="registered twice"):
        start(options(), [*humans(12), Entrant("p000")])


def test_partners_sit_opposite_and_a_team_is_one_unit() -> None:
    opts = options(variant="COMPLEX_PARTNERSHIP", capacity=8)
    tables = first_round(opts, SEED, humans(8))
    assert len(tables) == 2
    for table in tables:
        a, b = table.units
        assert table.players == (a[0], b[0], a[1], b[1])
        assert table.seats_of(a) == (0, 2)


def test_rating_seating_deals_the_strongest_to_different_tables() -> None:
    entrants = [Entrant(f"p{i}", rating=float(2000 - i)) for i in range(16)]
    tables = first_round(options(seating="rating"), SEED, entrants)
    tops = [next(i for i, t in enumerate(tables) if (f"p{k}",) in t.units) for k in range(4)]
    assert sorted(tops) == [0, 1, 2, 3]
    assert snake([("a",), ("b",), ("c",), ("d",)], 2) == [("a",), ("d",), ("b",), ("c",)]


def test_a_leaver_is_last_at_his_table_whatever_his_points_with_his_partner() -> None:
    singles = Seating(1, 0, (("a",), ("b",), ("c",), ("d",)))
    order = table_order(singles, Outcome((4, 1, 2, 3), (500, 0, -10, -20), left=0))
    assert [p.unit for p in order] == [("b",), ("c",), ("d",), ("a",)]
    teams = Seating(1, 0, (("a", "c"), ("b", "d")))
    order = table_order(teams, Outcome((2, 1, 2, 1), (0, 0, 0, 0), left=2))
    assert order[-1].unit == ("a", "c") and order[-1].left


def test_a_draw_for_first_goes_to_the_higher_total_then_the_lower_seat() -> None:
    table = Seating(1, 0, (("a",), ("b",), ("c",), ("d",)))
    assert table_order(table, Outcome((1, 1, 3, 4), (0, 0, -5, -9)))[0].unit == ("a",)
    teams = Seating(1, 0, (("a", "c"), ("b", "d")))  # SHARED draw: both teams placed 1
    assert table_order(teams, Outcome((1, 1, 1, 1), (0, 10, 0, -10)))[0].unit == ("a", "c")


def test_knockout_winners_of_four_tables_meet_at_one_table_and_the_final_decides() -> None:
    opts = options()
    run = CompetitionRun("k", opts, SEED, start(opts, humans(16)).entrants)
    first = run.rounds[0]
    assert len(first) == 4
    for table in first[:3]:
        assert run.record(1, table.index, Outcome((2, 1, 3, 4), (0, 9, -1, -2))) == []
    final = run.record(1, 3, Outcome((2, 1, 3, 4), (0, 9, -1, -2)))
    assert [s.units for s in final] == [tuple(t.units[1] for t in first)]  # seat 1 won each table
    assert run.record(2, 0, Outcome((1, 2, 3, 4), (9, 0, -1, -2))) == []
    ranking = run.ranking()
    assert ranking[:4] == list(final[0].units)
    assert len(ranking) == 16 and ranking[4:8] == sorted(ranking[4:8], key=lambda u: run.draw_index[u[0]])


def test_a_round_is_opened_once_and_a_table_ends_once() -> None:
    opts = options()
    run = CompetitionRun("k", opts, SEED, start(opts, humans(16)).entrants)
    run.record(1, 0, Outcome((1, 2, 3, 4), (0, 0, 0, 0)))
    with pytest.raises(CompetitionError, match="already ended"):
        run.record(1, 0, Outcome((1, 2, 3, 4), (0, 0, 0, 0)))
    with pytest.raises(CompetitionError, match="no table 9 in round 1"):
        run.record(1, 9, Outcome((1, 2, 3, 4), (0, 0, 0, 0)))
    with pytest.raises(CompetitionError, match="cannot start after round 1"):
        run._open(run.rounds[0])
    with pytest.raises(CompetitionError, match="has not finished"):
        run.ranking()
    for i in (1, 2, 3):
        run.record(1, i, Outcome((1, 2, 3, 4), (0, 0, 0, 0)))
    with pytest.raises(CompetitionError, match="round 1 is over"):
        run.record(1, 1, Outcome((1, 2, 3, 4), (0, 0, 0, 0)))


def test_points_per_table_place_and_a_leaver_scores_nothing_and_is_out() -> None:
    opts = options(format="points", capacity=8, rounds=2)
    table = Seating(1, 0, (("a",), ("b",), ("c",), ("d",)))
    other = Seating(1, 1, (("e",), ("f",), ("g",), ("h",)))
    outcomes = {(1, 0): Outcome((1, 1, 3, 4), (5, 5, 0, -9)), (1, 1): Outcome((2, 1, 3, 4), (0, 9, -1, -2), left=3)}
    index = {p: i for i, p in enumerate("abcdefgh")}
    rows = {r.unit: r for r in points.standings(opts, [[table, other]], outcomes, index)}
    assert [rows[(p,)].points for p in "abcdefgh"] == [3, 3, 1, 0, 2, 3, 1, 0]
    assert rows[("h",)].out and not rows[("d",)].out
    ranking = [r.unit for r in points.standings(opts, [[table, other]], outcomes, index)]
    assert ranking[-1] == ("h",)  # out: after everyone who did not leave
    assert ranking[:3] == [("f",), ("a",), ("b",)]  # 3 points and a win each: totals (9, 5, 5), then the draw
    nxt = points.next_round(opts, [[table, other]], outcomes, index)
    seated = [p for s in nxt for p in s.players]
    assert "h" not in seated and sum(p.startswith("bot-") for p in seated) == 1


@pytest.mark.parametrize(
    ("capacity", "rounds", "variant"), [(16, 3, "TRIX"), (64, 4, "TRIX"), (16, 4, "TRIX_PARTNERSHIP")]
)
def test_points_later_rounds_avoid_repeat_tablemates_where_the_field_allows(
    capacity: int, rounds: int, variant: str
) -> None:
    opts = options(format="points", capacity=capacity, rounds=rounds, variant=variant)
    for seed in range(5):
        run = CompetitionRun("p", opts, seed.to_bytes(32, "big"), start(opts, humans(capacity)).entrants)
        rng = random.Random(seed)
        for round_ in range(1, rounds + 1):
            for table in run.rounds[round_ - 1]:
                run.record(round_, table.index, synthetic_outcome(table, rng, None, opts.partnership))
        pairs = [frozenset((a, b)) for tables in run.rounds for t in tables for a in t.units for b in t.units if a < b]
        assert len(pairs) == len(set(pairs)), f"seed {seed}: two units met twice where a round without it exists"
        assert len(run.ranking()) == capacity // opts.unit_size


def test_where_every_round_must_repeat_a_meeting_the_greedy_pass_seats_it_anyway() -> None:
    opts = options(format="points", capacity=8, rounds=2)  # two tables of four: round 2 must repeat
    run = CompetitionRun("p", opts, SEED, start(opts, humans(8)).entrants)
    for table in run.rounds[0]:
        run.record(1, table.index, Outcome((1, 2, 3, 4), (9, 5, 0, -9)))
    assert len(run.rounds) == 2 and sorted(p for t in run.rounds[1] for p in t.players) == sorted(
        p for t in run.rounds[0] for p in t.players
    )


def test_knockout_next_round_is_empty_after_the_final() -> None:
    opts = options(rounds=1, capacity=4)
    table = Seating(1, 0, (("a",), ("b",), ("c",), ("d",)))
    assert knockout.next_round(opts, [table], {0: Outcome((1, 2, 3, 4), (0, 0, 0, 0))}) == []
