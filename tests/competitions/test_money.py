"""A competition's coins (issue 43), example by example: half back for leaving before the
start, full refunds when cancelled, the pool after the documented house fee, a fixed prize the
house tops up, a place a bot would take paid to the next human, partners splitting a place,
and one idempotency key per entrant and kind."""

from __future__ import annotations

import pytest
from competition_support import options

from trix.competitions.money import HOUSE, PRIZE, REFUND, LedgerEntry, check_conserved, entry_key, plan
from trix.competitions.options import CompetitionError, FixedPrize, PoolPrize

PAID = [f"p{i}" for i in range(16)]
RANKING = [(p,) for p in PAID]


def amounts(entries: list[LedgerEntry], kind: str) -> dict[str, int]:
    return {e.player: e.coins for e in entries if e.kind == kind}


def test_leaving_before_the_start_gives_half_the_fee_back_rounded_down() -> None:
    entries = plan("c", options(entry_fee=101), PAID, ["p3"], RANKING[:3] + RANKING[4:])
    assert amounts(entries, REFUND) == {"p3": 50}


def test_a_cancelled_competition_gives_everyone_still_in_the_full_fee_back_and_no_prize() -> None:
    entries = plan("c", options(), PAID, ["p0"], None)
    refunds = amounts(entries, REFUND)
    assert refunds["p0"] == 50 and all(refunds[p] == 100 for p in PAID[1:])
    assert not amounts(entries, PRIZE)
    assert amounts(entries, HOUSE) == {"house": 50}  # the half p0 left behind


def test_a_pool_prize_shares_the_pool_after_the_house_fee() -> None:
    entries = plan("c", options(prize=PoolPrize((50, 30, 20), house_fee_percent=10)), PAID, [], RANKING)
    # pool 1600, house 160, shared 1440: 720, 432, 288
    assert amounts(entries, PRIZE) == {"p0": 720, "p1": 432, "p2": 288}
    assert amounts(entries, HOUSE) == {"house": 160}


def test_the_rounding_remainder_of_the_pool_goes_to_the_first_place() -> None:
    entries = plan("c", options(entry_fee=7, prize=PoolPrize((50, 30, 20), house_fee_percent=10)), PAID, [], RANKING)
    # pool 112, house 11, shared 101: 50 + 30 + 20 = 100, the 1 left to first place
    assert amounts(entries, PRIZE) == {"p0": 51, "p1": 30, "p2": 20}


def test_a_place_a_bot_would_take_goes_to_the_next_human() -> None:
    ranking = [("bot-1",), ("p5",), ("bot-2",), ("p2",), ("p9",)]
    entries = plan("c", options(entry_fee=0, prize=FixedPrize((300, 200, 100))), ["p5", "p2", "p9"], [], ranking)
    assert amounts(entries, PRIZE) == {"p5": 300, "p2": 200, "p9": 100}
    assert amounts(entries, HOUSE) == {"house": -600}  # a free competition's fixed prize: the house pays


def test_a_pool_share_no_human_can_take_goes_to_the_house() -> None:
    ranking = [("p0",), ("bot-1",), ("bot-2",), ("bot-3",)]
    entries = plan(
        "c", options(rounds=1, capacity=4, prize=PoolPrize((60, 40), house_fee_percent=0)), ["p0"], [], ranking
    )
    assert amounts(entries, PRIZE) == {"p0": 60}
    assert amounts(entries, HOUSE) == {"house": 40}


def test_partners_split_their_place_the_odd_coin_to_the_first_and_a_bot_partner_takes_nothing() -> None:
    opts = options(variant="COMPLEX_PARTNERSHIP", capacity=8, entry_fee=0, prize=FixedPrize((301, 100)))
    entries = plan("c", opts, ["a", "b", "c"], [], [("a", "b"), ("c", "bot-1"), ("bot-2", "bot-3")])
    assert amounts(entries, PRIZE) == {"a": 151, "b": 150, "c": 100}


def test_each_entrant_has_one_key_per_kind() -> None:
    entries = plan("c9", options(), PAID, ["p1"], [u for u in RANKING if u != ("p1",)])
    assert {e.key for e in entries if e.player == "p1"} == {
        entry_key("c9", "hold", "p1"),
        entry_key("c9", "refund", "p1"),
    }
    assert entry_key("c9", "prize", "p0") == "competition.c9.prize.p0"
    assert len({e.key for e in entries}) == len(entries)


def test_a_plan_that_makes_or_loses_a_coin_or_pays_a_bot_is_refused() -> None:
    good = plan("c", options(), PAID, [], RANKING)
    with pytest.raises(CompetitionError, match="not conserved: 1600 held, 1601 paid out"):
        check_conserved([*good[:-1], LedgerEntry(good[-1].key, HOUSE, "house", good[-1].coins + 1)])
    with pytest.raises(CompetitionError, match="prize is paid to a bot"):
        check_conserved([*good, LedgerEntry("k", PRIZE, "bot-1", 0)])
    with pytest.raises(CompetitionError, match="share an idempotency key"):
        check_conserved([*good, good[0]])
    with pytest.raises(CompetitionError, match="a bot pays no fee"):
        plan("c", options(), ["bot-1"], [], [])
