"""Rule tests of the C engine through its Python API (trix.engine, docs/rules.md).

Illegal actions raise IllegalAction with the reason code and exact message and
leave the state unchanged; scoring invariants hold over many random games;
§10 leave ranking. The C-level twin of these tests is engine/tests/test_engine.c.
"""

from __future__ import annotations

import random

import pytest

import trix.engine as E
from trix.engine import (
    ACTION_NO_DOUBLE,
    Contract,
    Game,
    IllegalAction,
    IllegalReason,
    Options,
    Phase,
    Variant,
    choose,
    double,
    parse_card,
)


def cards(text: str) -> list[int]:
    return [parse_card(t) for t in text.split()]


def deck(*specs: str) -> list[list[int]]:
    """Hands from card lists; the rest filled in id order, seat 0 first."""
    hands = [cards(s) for s in specs] + [[] for _ in range(4 - len(specs))]
    used = {c for h in hands for c in h}
    rest = [c for c in range(52) if c not in used]
    for h in hands:
        while len(h) < 13:
            h.append(rest.pop(0))
    return hands


def random_decks(rng: random.Random, n: int) -> list[list[list[int]]]:
    out = []
    for _ in range(n):
        d = list(range(52))
        rng.shuffle(d)
        out.append([d[13 * s : 13 * s + 13] for s in range(4)])
    return out


def refused(g: Game, seat: int, action: int, code: IllegalReason, message: str | None = None) -> None:
    before = g.snapshot()
    with pytest.raises(IllegalAction) as ei:
        g.apply(seat, action)
    assert ei.value.code == code
    assert isinstance(ei.value.code, IllegalReason)
    if message is not None:
        assert ei.value.message == message
    assert g.snapshot() == before  # the state is unchanged


NO_DOUBLING = Options(doubling=False)


def test_first_kingdom_owner_is_7h_holder_and_owner_chooses() -> None:
    g = Game(Variant.TRIX, Options(), [deck("", "", "7H")])
    assert g.owner == 2 and g.phase == Phase.CHOOSE_CONTRACT and g.to_act() == (2,)
    assert g.legal_actions(2) == [choose(c) for c in (0, 1, 2, 3, 4)]
    assert g.legal_actions(0) == []
    refused(g, 0, choose(Contract.KING), IllegalReason.NOT_YOUR_TURN, "not your turn (seat 2 to act)")


def test_contract_not_in_variant_and_already_played() -> None:
    g = Game(Variant.COMPLEX, NO_DOUBLING, [deck("7H"), deck("7H")])
    refused(g, 0, choose(Contract.KING), IllegalReason.CONTRACT_NOT_IN_VARIANT, "contract not in this variant (KING)")
    g.apply(0, choose(Contract.TRIX))
    while g.phase == Phase.PLAY:
        s = g.to_act()[0]
        g.apply(s, g.legal_actions(s)[0])
    assert g.deal_index == 1 and g.owner == 0
    refused(
        g,
        0,
        choose(Contract.TRIX),
        IllegalReason.CONTRACT_ALREADY_PLAYED,
        "contract already played in this kingdom (TRIX)",
    )
    assert g.legal_actions(0) == [choose(Contract.COMPLEX)]


def test_must_follow_suit_not_in_hand_and_wrong_phase() -> None:
    g = Game(Variant.TRIX, NO_DOUBLING, [deck("7H 2C", "3C 4D")])
    refused(g, 0, parse_card("2C"), IllegalReason.WRONG_PHASE)
    g.apply(0, choose(Contract.TRICKS))
    refused(g, 0, ACTION_NO_DOUBLE, IllegalReason.WRONG_PHASE)
    g.apply(0, parse_card("2C"))
    refused(g, 1, parse_card("4D"), IllegalReason.MUST_FOLLOW_SUIT, "must follow suit (C)")
    refused(g, 1, parse_card("AS"), IllegalReason.NOT_IN_HAND, "card not in hand (AS)")
    refused(g, 1, 58, IllegalReason.BAD_ACTION)
    refused(g, 1, 96, IllegalReason.BAD_ACTION)
    refused(g, 1, -1, IllegalReason.BAD_ACTION)
    refused(g, 1, 10**30, IllegalReason.BAD_ACTION)
    refused(g, 7, parse_card("3C"), IllegalReason.BAD_SEAT)
    with pytest.raises(IllegalAction) as ei:
        g.legal_actions(4)
    assert ei.value.code == IllegalReason.BAD_SEAT


def test_king_taken_by_other_seat_of_doubler_costs_150_and_ends_the_deal() -> None:
    g = Game(Variant.TRIX, Options(), [deck("7H 2H", "AH", "KH", "3H")])
    g.apply(0, choose(Contract.KING))
    assert g.phase == Phase.DOUBLING and g.to_act() == (0,)
    assert g.legal_actions(0) == [ACTION_NO_DOUBLE]
    assert g.legal_actions(2) == []  # SEQUENTIAL: not his turn yet
    g.apply(0, ACTION_NO_DOUBLE)
    g.apply(1, ACTION_NO_DOUBLE)
    refused(g, 2, double([parse_card("QS")]), IllegalReason.NOT_ELIGIBLE_TO_DOUBLE, "card cannot be doubled (QS)")
    assert g.legal_actions(2) == [ACTION_NO_DOUBLE, double([parse_card("KH")])]
    ev = g.apply(2, double([parse_card("KH")]))
    assert ev == [(E.DOUBLE_ANSWERED, 2, (parse_card("KH"),))]
    refused(g, 2, ACTION_NO_DOUBLE, IllegalReason.ALREADY_ANSWERED, "seat already answered")
    g.apply(3, ACTION_NO_DOUBLE)
    g.apply(0, parse_card("2H"))
    g.apply(1, parse_card("AH"))
    g.apply(2, parse_card("KH"))
    ev = g.apply(3, parse_card("3H"))
    kinds = [e[0] for e in ev]
    assert kinds[:4] == [E.CARD_PLAYED, E.TRICK_TAKEN, E.DEAL_SCORED, E.DEAL_STARTED][: len(kinds[:4])]
    assert ev[1] == (E.TRICK_TAKEN, 1, 0, (0, -150, 75, 0))
    assert ev[2] == (E.DEAL_SCORED, 0, (0, -150, 75, 0))
    assert g.totals() == (0, -150, 75, 0)
    assert g.phase == Phase.AWAITING_DEAL and g.deal_index == 1


def test_doubled_king_self_take_leader_option() -> None:
    for self_take, expected in ((E.SelfTake.NOBODY, (0, 0, -150, 0)), (E.SelfTake.LEADER, (75, 0, -150, 0))):
        g = Game(Variant.TRIX, Options(doubling_self_take=self_take), [deck("7H 2H", "4H", "KH", "3H")])
        g.apply(0, choose(Contract.KING))
        for s in range(4):
            g.apply(s, double([parse_card("KH")]) if s == 2 else ACTION_NO_DOUBLE)
        for s, c in enumerate(("2H", "4H", "KH", "3H")):
            g.apply(s, parse_card(c))
        assert g.totals() == expected


def test_trix_layout_jack_first_and_not_playable_message() -> None:
    g = Game(Variant.TRIX, Options(), [deck("7H JC TC", "QC")])
    g.apply(0, choose(Contract.TRIX))
    refused(g, 0, parse_card("TC"), IllegalReason.NOT_PLAYABLE_ON_LAYOUT, "not playable on the layout (TC)")
    g.apply(0, parse_card("JC"))
    assert g.view(None)["layout"][0] == (parse_card("JC"), parse_card("JC"))


def test_trix_owner_without_legal_card_passes_automatically() -> None:
    g = Game(Variant.TRIX, Options(), [deck("7H 2C 3C", "JC JD JH JS")])
    ev = g.apply(0, choose(Contract.TRIX))
    assert ev == [(E.CONTRACT_CHOSEN, 0, Contract.TRIX), (E.SEAT_PASSED, 0)]
    assert g.to_act() == (1,)


def test_game_over_refuses_everything_and_ranking_set() -> None:
    _totals, ranking, moves = E.playout(Variant.COMPLEX, Options(), 7, (E.RANDOM,) * 4)
    assert sorted(ranking)[0] == 1 and moves > 8 * 52
    g = Game(Variant.COMPLEX, Options())
    rng = random.Random(3)
    for d in random_decks(rng, 8):
        g.provide_deal(d)
    while g.phase != Phase.GAME_OVER:
        s = g.to_act()[0]
        g.apply(s, rng.choice(g.legal_actions(s)))
    refused(g, 0, 0, IllegalReason.GAME_OVER, "game is over")
    r = g.ranking()
    assert r is not None
    t = g.totals()
    assert all(r[s] == 1 + sum(t[o] > t[s] for o in range(4)) for s in range(4))


def run_random(variant: Variant, options: Options, seed: int) -> Game:
    rng = random.Random(seed)
    n = 20 if variant in (Variant.TRIX, Variant.TRIX_PARTNERSHIP) else 8
    g = Game(variant, options, random_decks(rng, n))
    while g.phase != Phase.GAME_OVER:
        s = rng.choice(g.to_act())
        g.apply(s, rng.choice(g.legal_actions(s)))
    return g


@pytest.mark.parametrize("variant", list(Variant))
def test_undoubled_deal_and_kingdom_sums(variant: Variant) -> None:
    partnership = variant in (Variant.TRIX_PARTNERSHIP, Variant.COMPLEX_PARTNERSHIP)
    for seed in range(40):
        g = run_random(variant, Options(doubling=False, partnership_trix_early_end=seed % 2 == 0), seed)
        deals = g.record()["deals"]
        per_kingdom = len(deals) // 4
        for k in range(4):
            assert sum(sum(d["scores"]) for d in deals[k * per_kingdom : (k + 1) * per_kingdom]) == 0
        for d in deals:
            if d["contract"] == "COMPLEX":
                assert sum(d["scores"]) == -500
            elif d["contract"] == "TRIX":
                # §6: places (or the partnership early end) are always 200/150/100/50
                assert sorted(d["scores"]) == [50, 100, 150, 200]
                if partnership and seed % 2 == 0:
                    first = d["scores"].index(200)
                    if d["scores"][(first + 2) % 4] == 150:
                        assert len(d["plays"]) <= 52


def test_doubled_game_totals_equal_sum_of_deal_scores() -> None:
    for seed in range(20):
        g = run_random(Variant(seed % 4), Options(doubling_self_take=E.SelfTake(seed % 2)), seed)
        rec = g.record()
        assert [sum(d["scores"][s] for d in rec["deals"]) for s in range(4)] == list(g.totals())


def test_leave_singles_ranks_leaver_last_and_ignores_unfinished_deal() -> None:
    rng = random.Random(11)
    g = Game(Variant.TRIX, Options(doubling=False), random_decks(rng, 3))
    while g.deal_index < 2:
        s = g.to_act()[0]
        g.apply(s, rng.choice(g.legal_actions(s)))
    g.apply(g.owner or 0, g.legal_actions(g.owner or 0)[0])
    for _ in range(5):  # part of deal 2: its points must not count
        s = g.to_act()[0]
        g.apply(s, g.legal_actions(s)[0])
    t = g.totals()
    ev = g.leave(1)
    assert ev[0] == (E.SEAT_LEFT, 1)
    assert ev[1][0] == E.GAME_ENDED and ev[1][1] == t
    r = g.ranking()
    assert r is not None and r[1] == 4
    for s in (0, 2, 3):
        assert r[s] == 1 + sum(t[o] > t[s] for o in (0, 2, 3) if o != s)
    assert g.phase == Phase.GAME_OVER
    assert g.record()["left"] == 1
    assert g.record()["deals"][2]["scores"] is None
    with pytest.raises(IllegalAction) as ei:
        g.leave(0)
    assert ei.value.code == IllegalReason.GAME_OVER


def test_leave_partnership_leaver_team_second() -> None:
    g = Game(Variant.COMPLEX_PARTNERSHIP, Options(), [deck("7H")])
    g.leave(2)
    assert g.ranking() == (2, 1, 2, 1)


@pytest.mark.parametrize("variant", list(Variant), ids=lambda v: v.name)
@pytest.mark.parametrize("moment", ["contract", "first_card_due"])
def test_leave_after_the_deal_before_the_first_card_is_ranked_by_section_10(variant: Variant, moment: str) -> None:
    """docs/rules.md §10 and §13 (issue 42): once the cards are dealt, a leaver has seen his
    hand; he is placed last (partnership: with his partner), the others by the finished
    deals' totals (none: 0, so they share place 1), before any card is played. The record
    keeps the dealt deal (its hands, no play, no score), so scoring does not refund it."""
    g = Game(variant, Options(doubling=False), random_decks(random.Random(42), 1))
    assert g.phase == Phase.CHOOSE_CONTRACT
    owner = g.owner
    assert owner is not None
    if moment == "first_card_due":  # the contract named, nobody has played yet
        g.apply(owner, g.legal_actions(owner)[0])
        assert g.phase == Phase.PLAY
    leaver = (owner + 1) % 4
    events = g.leave(leaver)
    assert events[0] == (E.SEAT_LEFT, leaver)
    assert events[1][0] == E.GAME_ENDED and events[1][1] == (0, 0, 0, 0)
    partnership = variant in (Variant.TRIX_PARTNERSHIP, Variant.COMPLEX_PARTNERSHIP)
    losers = {leaver, (leaver + 2) % 4} if partnership else {leaver}
    last = 2 if partnership else 4
    assert g.ranking() == tuple(last if s in losers else 1 for s in range(4))
    assert g.phase == Phase.GAME_OVER
    record = g.record()
    assert record["left"] == leaver and record["ranking"] == list(g.ranking() or ())
    (deal,) = record["deals"]
    assert deal["plays"] == [] and deal["scores"] is None and all(len(h) == 13 for h in deal["hands"])


def test_awaiting_deal_and_provide_deal_validation() -> None:
    g = Game(Variant.TRIX)
    assert g.phase == Phase.AWAITING_DEAL and g.to_act() == () and g.owner is None
    with pytest.raises(ValueError):
        g.provide_deal([list(range(13))] * 4)
    with pytest.raises(ValueError):
        g.provide_deal([[0] * 13])
    ev = g.provide_deal(deck("", "7H"))
    assert ev == [(E.DEAL_STARTED, 0, 0, 1)]
    with pytest.raises(ValueError):
        Game(Variant.TRIX, Options(), [[list(range(12))]])


def test_bot_action_is_legal_and_playouts_leave_game_unchanged() -> None:
    g = Game(Variant.TRIX_PARTNERSHIP, Options(), random_decks(random.Random(2), 1))
    s = g.to_act()[0]
    assert g.bot_action(s) in g.legal_actions(s)
    before = g.snapshot()
    _totals, ranking, moves = E.playout_from(g, 5, (E.BOT, E.RANDOM, E.LOWEST, E.RANDOM))
    assert g.snapshot() == before and moves > 0 and sorted(ranking) in ([1, 1, 2, 2],)
    assert E.playout(Variant.TRIX, Options(), 1) == E.playout(Variant.TRIX, Options(), 1)


def test_helpers() -> None:
    assert E.card_str(49) == "QS" and parse_card("TD") == 21
    for bad in ("10D", "qs", "Q", "QSS", "1C"):
        with pytest.raises(ValueError):
            parse_card(bad)
    assert E.action_str(double(cards("KH QS"))) == "double KH QS"
    assert E.action_str(64) == "no double" and E.action_str(52) == "choose KING"
    assert E.action_str(E.play(49)) == "play QS"
