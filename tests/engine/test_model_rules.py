"""One test per rule of docs/rules.md, run on the Python model and on the C engine
(`impl` is parametrized over both, see conftest.py), with small constructed deals.

A deal is built from the cards that matter (`deal_with`); the other cards are
dealt in id order to seats with room, avoiding the suits a seat must lack.
"""

from __future__ import annotations

import random
from typing import Any

import pytest
from engine_support import EXAMPLES_DIR, Impl

from trix.records import read_record_file, replay
from trix.rules import RANKS, SUITS

KING, QUEENS, DIAMONDS, TRICKS, TRIX, COMPLEX = range(6)
DEAL_STARTED, CONTRACT_CHOSEN, DOUBLE_ANSWERED, DOUBLES_REVEALED, CARD_PLAYED = range(5)
TRICK_TAKEN, SEAT_PASSED, SEAT_OUT, DEAL_SCORED, GAME_ENDED, SEAT_LEFT = range(5, 11)
PHASE_CHOOSE, PHASE_DOUBLING, PHASE_PLAY, PHASE_AWAITING, PHASE_OVER = range(5)


def c(text: str) -> int:
    return SUITS.index(text[1]) * 13 + RANKS.index(text[0])


def deal_with(seats: dict[int, str], voids: dict[int, str] | None = None) -> list[list[int]]:
    """4 hands of 13: the listed cards (space separated) plus fillers."""
    voids = voids or {}
    hands: list[list[int]] = [[c(t) for t in seats.get(s, "").split()] for s in range(4)]
    used = {x for h in hands for x in h}
    for card in range(52):
        if card in used:
            continue
        for s in range(4):
            if len(hands[s]) < 13 and SUITS[card // 13] not in voids.get(s, ""):
                hands[s].append(card)
                break
        else:
            raise AssertionError("cannot place filler card")
    assert all(len(h) == 13 for h in hands)
    return [sorted(h) for h in hands]


def new_game(impl: Impl, variant: int = 0, decks: Any = (), **options: Any) -> Any:
    mod = impl.module
    opts = impl.Options(
        doubling=options.get("doubling", True),
        doubling_reveal=mod.Reveal[options.get("reveal", "SEQUENTIAL")],
        doubling_self_take=mod.SelfTake[options.get("self_take", "NOBODY")],
        team_tiebreak=mod.TeamTiebreak[options.get("tiebreak", "LAST_TRIX")],
        partnership_trix_early_end=options.get("early_end", True),
    )
    return impl.Game(mod.Variant(variant), opts, [list(map(list, d)) for d in decks])


def answer_doubles(impl: Impl, g: Any, doubles: dict[int, str]) -> list[tuple[Any, ...]]:
    events: list[tuple[Any, ...]] = []
    while int(g.phase) == PHASE_DOUBLING:
        seat = g.to_act()[0]
        cards = [c(t) for t in doubles.get(seat, "").split()]
        events += g.apply(seat, impl.module.double(cards))
    return events


def play_cards(g: Any, plays: str) -> list[tuple[Any, ...]]:
    """Plays 'seat:card' items in order."""
    events: list[tuple[Any, ...]] = []
    for item in plays.split():
        seat, card = item.split(":")
        events += g.apply(int(seat), c(card))
    return events


def kinds(events: list[tuple[Any, ...]], kind: int) -> list[tuple[Any, ...]]:
    return [tuple(e) for e in events if e[0] == kind]


def play_lowest_until(g: Any, stop: Any) -> list[tuple[Any, ...]]:
    events: list[tuple[Any, ...]] = []
    while not stop(g):
        seat = g.to_act()[0]
        events += g.apply(seat, g.legal_actions(seat)[0])
    return events


# -- §1 cards, seats, direction ------------------------------------------------


def test_card_id_is_suit_times_13_plus_rank_minus_2_and_text_is_exact(impl: Impl) -> None:
    mod = impl.module
    assert mod.parse_card("2C") == 0 and mod.parse_card("AS") == 51 and mod.parse_card("TD") == 21
    assert mod.card_str(37) == "KH" and mod.card_str(21) == "TD"
    for bad in ("10D", "td", "1C", "KX", "", "QSS"):
        with pytest.raises(ValueError):
            mod.parse_card(bad)


def test_play_moves_to_next_seat_and_owner_leads(impl: Impl) -> None:
    g = new_game(impl, decks=[deal_with({2: "7H"})])
    assert g.owner == 2 and tuple(g.to_act()) == (2,)
    g.apply(2, impl.module.choose(TRICKS))
    assert tuple(g.to_act()) == (2,)
    g.apply(2, g.legal_actions(2)[0])
    assert tuple(g.to_act()) == (3,)
    g.apply(3, g.legal_actions(3)[0])
    assert tuple(g.to_act()) == (0,)


# -- §2 variants ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("variant", "contracts", "deals"),
    [(0, [0, 1, 2, 3, 4], 20), (1, [0, 1, 2, 3, 4], 20), (2, [4, 5], 8), (3, [4, 5], 8)],
)
def test_variant_contracts_and_number_of_deals(impl: Impl, variant: int, contracts: list[int], deals: int) -> None:
    g = new_game(impl, variant, decks=[deal_with({0: "7H"})])
    assert list(g.legal_actions(0)) == [52 + x for x in contracts]
    assert g.num_deals == deals


def test_contract_not_in_variant_is_refused(impl: Impl) -> None:
    g = new_game(impl, 2, decks=[deal_with({0: "7H"})])
    with pytest.raises(impl.module.IllegalAction) as info:
        g.apply(0, impl.module.choose(KING))
    assert info.value.message == "contract not in this variant (KING)"


# -- §3 kingdoms and deals --------------------------------------------------------


def test_holder_of_seven_of_hearts_in_first_deal_owns_first_kingdom(impl: Impl) -> None:
    for seat in range(4):
        g = new_game(impl, decks=[deal_with({seat: "7H"})])
        assert g.owner == seat


def test_each_contract_once_per_kingdom_and_next_kingdom_owned_by_next_seat(impl: Impl) -> None:
    rng = random.Random(3)
    decks = []
    for _ in range(8):
        cards = list(range(52))
        rng.shuffle(cards)
        decks.append([sorted(cards[13 * s : 13 * s + 13]) for s in range(4)])
    g = new_game(impl, 2, decks=decks, doubling=False)
    first = g.owner
    events = play_lowest_until(g, lambda g: int(g.phase) == PHASE_OVER)
    started = [(0, 0, 0, first)] + [(e[1], e[2], e[3]) for e in kinds(events, DEAL_STARTED)]
    owners = [s[-1] for s in started]
    assert owners == [first, first] + [(first + k) % 4 for k in (1, 1, 2, 2, 3, 3)]
    chosen = [e[2] for e in kinds(events, CONTRACT_CHOSEN)]
    assert [sorted(chosen[k : k + 2]) for k in range(0, 8, 2)] == [[4, 5]] * 4
    assert len(kinds(events, GAME_ENDED)) == 1


def test_contract_already_played_in_kingdom_is_refused(impl: Impl) -> None:
    d = deal_with({0: "7H KH AH", 1: "2H"})
    g = new_game(impl, decks=[d, d], doubling=False)
    g.apply(0, impl.module.choose(KING))
    play_cards(g, "0:AH 1:2H")
    play_lowest_until(g, lambda g: g.deal_index == 1)
    assert impl.module.choose(KING) not in g.legal_actions(0)
    with pytest.raises(impl.module.IllegalAction) as info:
        g.apply(0, impl.module.choose(KING))
    assert info.value.message == "contract already played in this kingdom (KING)"


# -- §4 trick play -----------------------------------------------------------------


def test_must_follow_suit_message_names_led_suit(impl: Impl) -> None:
    g = new_game(impl, decks=[deal_with({0: "7H 2C", 1: "3C 4D"})], doubling=False)
    g.apply(0, impl.module.choose(TRICKS))
    g.apply(0, c("2C"))
    with pytest.raises(impl.module.IllegalAction) as info:
        g.apply(1, c("4D"))
    assert info.value.message == "must follow suit (C)"
    assert int(info.value.code) == int(impl.module.IllegalReason.MUST_FOLLOW_SUIT)


def test_leader_may_lead_king_of_hearts_in_king(impl: Impl) -> None:
    g = new_game(impl, decks=[deal_with({0: "7H KH"})], doubling=False)
    g.apply(0, impl.module.choose(KING))
    assert c("KH") in g.legal_actions(0)


def test_void_player_may_discard_anything_and_is_not_forced_to_discard_king(impl: Impl) -> None:
    g = new_game(impl, decks=[deal_with({0: "7H 2C", 1: "KH QS"}, voids={1: "C"})], doubling=False)
    g.apply(0, impl.module.choose(KING))
    g.apply(0, c("2C"))
    assert g.legal_actions(1) == sorted(g.hand(1))  # any card, KH not forced


def test_highest_card_of_led_suit_wins_no_trump(impl: Impl) -> None:
    g = new_game(impl, decks=[deal_with({0: "7H 3C", 1: "5C", 2: "AS", 3: "4C"}, voids={2: "C"})], doubling=False)
    g.apply(0, impl.module.choose(TRICKS))
    events = play_cards(g, "0:3C 1:5C 2:AS 3:4C")
    assert kinds(events, TRICK_TAKEN) == [(TRICK_TAKEN, 1, 0, (0, -15, 0, 0))]
    assert tuple(g.to_act()) == (1,)  # the winner leads the next trick


def test_king_deal_ends_after_trick_that_takes_king_of_hearts(impl: Impl) -> None:
    g = new_game(impl, decks=[deal_with({0: "7H AH", 1: "KH", 2: "2H", 3: "3H"}), deal_with({})], doubling=False)
    g.apply(0, impl.module.choose(KING))
    events = play_cards(g, "0:AH 1:KH 2:2H 3:3H")
    assert kinds(events, DEAL_SCORED) == [(DEAL_SCORED, 0, (-75, 0, 0, 0))]
    assert g.deal_index == 1


@pytest.mark.parametrize(
    ("contract", "scoring"),
    [(KING, {37}), (QUEENS, {10, 23, 36, 49}), (DIAMONDS, set(range(13, 26)))],
)
def test_deal_ends_after_trick_taking_last_scoring_card(impl: Impl, contract: int, scoring: set[int]) -> None:
    """§4: KING after KH, QUEENS after the fourth queen, DIAMONDS after the 13th diamond."""
    rng = random.Random(contract)
    early = 0
    for _ in range(20):
        cards = list(range(52))
        rng.shuffle(cards)
        d = [sorted(cards[13 * s : 13 * s + 13]) for s in range(4)]
        g = new_game(impl, decks=[d, d], doubling=False)
        g.apply(g.owner, impl.module.choose(contract))
        events: list[tuple[Any, ...]] = []
        while g.deal_index == 0:
            seat = g.to_act()[0]
            events += g.apply(seat, rng.choice(g.legal_actions(seat)))
        played = [e[2] for e in kinds(events, CARD_PLAYED)]
        tricks = len(kinds(events, TRICK_TAKEN))
        assert len(played) == 4 * tricks
        last_needed = max(played.index(x) for x in scoring)
        assert tricks == last_needed // 4 + 1
        early += tricks < 13
    assert early > 0


@pytest.mark.parametrize("contract", [TRICKS, COMPLEX])
def test_tricks_and_complex_always_play_all_13_tricks(impl: Impl, contract: int) -> None:
    d = deal_with({0: "7H KH QC QD QH QS"})
    variant = 0 if contract == TRICKS else 2
    g = new_game(impl, variant, decks=[d, d], doubling=False)
    g.apply(0, impl.module.choose(contract))
    events = play_lowest_until(g, lambda g: g.deal_index == 1)
    assert len(kinds(events, TRICK_TAKEN)) == 13


# -- §5 penalties -------------------------------------------------------------------


def test_undoubled_complex_deal_sums_to_minus_500(impl: Impl) -> None:
    rng = random.Random(5)
    for _ in range(5):
        cards = list(range(52))
        rng.shuffle(cards)
        d = [sorted(cards[13 * s : 13 * s + 13]) for s in range(4)]
        g = new_game(impl, 2, decks=[d, d], doubling=False)
        g.apply(g.owner, impl.module.choose(COMPLEX))
        events = play_lowest_until(g, lambda g: g.deal_index == 1)
        assert sum(kinds(events, DEAL_SCORED)[0][2]) == -500


def test_queen_of_diamonds_counts_as_queen_and_diamond_in_complex(impl: Impl) -> None:
    g = new_game(impl, 2, decks=[deal_with({0: "7H AD", 1: "QD", 2: "2D", 3: "3D"})], doubling=False)
    g.apply(0, impl.module.choose(COMPLEX))
    events = play_cards(g, "0:AD 1:QD 2:2D 3:3D")
    # -15 trick, -25 queen, 4 diamonds x -10
    assert kinds(events, TRICK_TAKEN) == [(TRICK_TAKEN, 0, 0, (-80, 0, 0, 0))]


def test_diamond_penalty_is_10_each_in_diamonds(impl: Impl) -> None:
    g = new_game(impl, decks=[deal_with({0: "7H AD", 1: "QD", 2: "2D", 3: "3D"})], doubling=False)
    g.apply(0, impl.module.choose(DIAMONDS))
    events = play_cards(g, "0:AD 1:QD 2:2D 3:3D")
    assert kinds(events, TRICK_TAKEN) == [(TRICK_TAKEN, 0, 0, (-40, 0, 0, 0))]


# -- §6 TRIX layout -------------------------------------------------------------------


def test_trix_row_starts_with_its_jack_and_grows_one_up_or_down(impl: Impl) -> None:
    g = new_game(impl, decks=[deal_with({0: "7H JC TC QC 9C"})], doubling=False)
    g.apply(0, impl.module.choose(TRIX))
    assert g.legal_actions(0) == [c("JC")]  # only a jack starts a row
    g.apply(0, c("JC"))
    while tuple(g.to_act()) != (0,):
        seat = g.to_act()[0]
        g.apply(seat, g.legal_actions(seat)[0])
    legal = g.legal_actions(0)
    assert c("TC") in legal and c("QC") in legal and c("9C") not in legal
    with pytest.raises(impl.module.IllegalAction) as info:
        g.apply(0, c("9C"))
    assert info.value.message == "not playable on the layout (9C)"


def test_trix_owner_without_jack_passes_and_first_card_comes_from_another_seat(impl: Impl) -> None:
    g = new_game(impl, decks=[deal_with({0: "7H", 1: "JC JD JH JS"}, voids={})], doubling=False)
    assert not any(c(j) in g.hand(0) for j in ("JC", "JD", "JH", "JS"))
    events = g.apply(0, impl.module.choose(TRIX))
    assert kinds(events, SEAT_PASSED) == [(SEAT_PASSED, 0)]
    assert tuple(g.to_act()) == (1,)


def _random_trix_deals(impl: Impl, variant: int, n: int, seed: int, **options: Any) -> list[Any]:
    """Play n random TRIX deals; returns (events, hand counts before the end) per deal."""
    rng = random.Random(seed)
    results = []
    for _ in range(n):
        cards = list(range(52))
        rng.shuffle(cards)
        d = [sorted(cards[13 * s : 13 * s + 13]) for s in range(4)]
        g = new_game(impl, variant, decks=[d, d], doubling=False, **options)
        events = list(g.apply(g.owner, impl.module.choose(TRIX)))
        counts = [13] * 4
        while g.deal_index == 0:
            seat = g.to_act()[0]
            counts = [len(g.hand(s)) for s in range(4)]
            counts[seat] -= 1
            events += g.apply(seat, rng.choice(g.legal_actions(seat)))
        results.append((events, counts))
    return results


def test_trix_places_get_200_150_100_50_and_kingdom_sums_to_zero(impl: Impl) -> None:
    for events, _ in _random_trix_deals(impl, 0, 10, seed=1):
        outs = kinds(events, SEAT_OUT)
        assert [(e[2], e[3]) for e in outs] == [(1, 200), (2, 150), (3, 100), (4, 50)]
        assert sum(kinds(events, DEAL_SCORED)[0][2]) == 500


def test_partnership_trix_early_end_unequal_counts_fewer_cards_gets_100(impl: Impl) -> None:
    _check_partnership_early_end(impl, want_equal=False)


def test_partnership_trix_early_end_equal_counts_next_of_second_out_gets_100(impl: Impl) -> None:
    _check_partnership_early_end(impl, want_equal=True)


def _check_partnership_early_end(impl: Impl, *, want_equal: bool) -> None:
    seen = 0
    for events, counts in _random_trix_deals(impl, 1, 150, seed=11):
        outs = [e[1] for e in kinds(events, SEAT_OUT)]
        first, second = outs[0], outs[1]
        if second != (first + 2) % 4:
            continue
        a, b = sorted({0, 1, 2, 3} - {first, second})
        if (counts[a] == counts[b]) != want_equal:
            continue
        seen += 1
        third = (second + 1) % 4 if want_equal else (a if counts[a] < counts[b] else b)
        assert outs == [first, second, third, a + b - third]
        assert [e[3] for e in kinds(events, SEAT_OUT)] == [200, 150, 100, 50]
        # the deal ended at once: the second out's card is the last one played
        assert kinds(events, CARD_PLAYED)[-1][1] == second
    assert seen > 0


def test_partnership_trix_early_end_off_plays_on_until_three_out(impl: Impl) -> None:
    seen = 0
    for events, _ in _random_trix_deals(impl, 1, 80, seed=11, early_end=False):
        outs = [e[1] for e in kinds(events, SEAT_OUT)]
        if outs[1] == (outs[0] + 2) % 4:
            seen += 1
            assert kinds(events, CARD_PLAYED)[-1][1] == outs[2]
    assert seen > 0


def test_singles_trix_partners_first_out_do_not_end_the_deal(impl: Impl) -> None:
    for events, _ in _random_trix_deals(impl, 0, 40, seed=11):
        outs = [e[1] for e in kinds(events, SEAT_OUT)]
        assert kinds(events, CARD_PLAYED)[-1][1] == outs[2]


# -- §7 doubling ------------------------------------------------------------------------


def _king_trick(impl: Impl, hands: dict[int, str], doubles: dict[int, str], plays: str, **opts: Any) -> Any:
    g = new_game(impl, decks=[deal_with(hands)], **opts)
    g.apply(0, impl.module.choose(KING))
    answer_doubles(impl, g, doubles)
    return kinds(play_cards(g, plays), TRICK_TAKEN)[0][3]


def test_doubled_king_taken_by_other_seat_costs_150(impl: Impl) -> None:
    points = _king_trick(impl, {0: "7H AH", 1: "KH", 2: "2H", 3: "3H"}, {1: "KH"}, "0:AH 1:KH 2:2H 3:3H")
    assert tuple(points) == (-150, 75, 0, 0)


@pytest.mark.parametrize(("self_take", "expected"), [("NOBODY", (0, -150, 0, 0)), ("LEADER", (75, -150, 0, 0))])
def test_doubled_king_taken_by_its_doubler_other_seat_led(
    impl: Impl, self_take: str, expected: tuple[int, ...]
) -> None:
    points = _king_trick(
        impl, {0: "7H 2H", 1: "KH", 2: "4H", 3: "3H"}, {1: "KH"}, "0:2H 1:KH 2:4H 3:3H", self_take=self_take
    )
    assert tuple(points) == expected


def test_doubled_king_taken_by_its_doubler_who_led_nobody_gains_under_leader(impl: Impl) -> None:
    hands = {0: "7H KH", 1: "2H", 2: "4H", 3: "3H"}
    points = _king_trick(impl, hands, {0: "KH"}, "0:KH 1:2H 2:4H 3:3H", self_take="LEADER")
    assert tuple(points) == (-150, 0, 0, 0)


@pytest.mark.parametrize(
    ("self_take", "expected"),
    [("NOBODY", (0, -100, 25, 0)), ("LEADER", (25, -100, 25, 0))],
)
def test_two_doubled_queens_in_one_trick_scored_separately(
    impl: Impl, self_take: str, expected: tuple[int, ...]
) -> None:
    # seat 1 takes its own doubled QS and seat 2's doubled QH: two applications.
    d = deal_with({0: "7H 2S", 1: "QS", 2: "QH", 3: "3S"}, voids={2: "S"})
    g = new_game(impl, decks=[d], self_take=self_take)
    g.apply(0, impl.module.choose(QUEENS))
    answer_doubles(impl, g, {1: "QS", 2: "QH"})
    points = kinds(play_cards(g, "0:2S 1:QS 2:QH 3:3S"), TRICK_TAKEN)[0][3]
    assert tuple(points) == expected


def test_every_seat_answers_once_and_seat_without_eligible_card_can_only_say_no(impl: Impl) -> None:
    g = new_game(impl, decks=[deal_with({0: "7H", 2: "KH"})])
    g.apply(0, impl.module.choose(KING))
    assert int(g.phase) == PHASE_DOUBLING
    assert g.legal_actions(0) == [64]
    events = g.apply(0, 64)
    assert kinds(events, DOUBLE_ANSWERED) == [(DOUBLE_ANSWERED, 0, ())]
    assert tuple(g.to_act()) == (1,)  # SEQUENTIAL: in turn from the owner
    g.apply(1, 64)
    assert g.legal_actions(2) == [64, impl.module.double([c("KH")])]
    with pytest.raises(impl.module.IllegalAction) as info:
        g.apply(0, 64)
    assert info.value.message == "seat already answered"
    g.apply(2, impl.module.double([c("KH")]))
    g.apply(3, 64)
    assert int(g.phase) == PHASE_PLAY


def test_simultaneous_answers_any_order_revealed_together_and_hidden_until_then(impl: Impl) -> None:
    g = new_game(impl, decks=[deal_with({0: "7H", 2: "KH"})], reveal="SIMULTANEOUS")
    g.apply(0, impl.module.choose(KING))
    assert tuple(g.to_act()) == (0, 1, 2, 3)
    events = g.apply(2, impl.module.double([c("KH")]))
    assert g.visible_events(events, 1) == [] and len(g.visible_events(events, 2)) == 1
    view1, spectator = g.view(1), g.view(None)
    assert list(view1["to_act"]) == [1] and list(spectator["to_act"]) == []
    assert list(view1["answered"]) == [] and list(view1["doubled"]) == []
    assert list(g.view(2)["to_act"]) == []
    g.apply(3, 64)
    g.apply(0, 64)
    events = g.apply(1, 64)
    revealed = kinds(events, DOUBLES_REVEALED)
    assert revealed == [(DOUBLES_REVEALED, ((0, ()), (1, ()), (2, (c("KH"),)), (3, ())))]
    assert [tuple(x) for x in g.view(None)["doubled"]] == [(2, c("KH"))]


def test_sequential_answer_is_public_at_once(impl: Impl) -> None:
    g = new_game(impl, decks=[deal_with({0: "7H KH"})])
    g.apply(0, impl.module.choose(KING))
    events = g.apply(0, impl.module.double([c("KH")]))
    assert len(g.visible_events(events, None)) == 1
    assert [tuple(x) for x in g.view(None)["doubled"]] == [(0, c("KH"))]


@pytest.mark.parametrize(("variant", "contract"), [(0, DIAMONDS), (0, TRICKS), (0, TRIX), (2, TRIX)])
def test_no_doubling_in_diamonds_tricks_trix(impl: Impl, variant: int, contract: int) -> None:
    g = new_game(impl, variant, decks=[deal_with({0: "7H KH JC"})])
    g.apply(0, impl.module.choose(contract))
    assert int(g.phase) == PHASE_PLAY


@pytest.mark.parametrize(("variant", "contract"), [(0, KING), (0, QUEENS), (2, COMPLEX)])
def test_doubling_off_skips_the_doubling_phase(impl: Impl, variant: int, contract: int) -> None:
    g = new_game(impl, variant, decks=[deal_with({0: "7H KH QS"})], doubling=False)
    g.apply(0, impl.module.choose(contract))
    assert int(g.phase) == PHASE_PLAY


def test_card_that_cannot_be_doubled_is_refused(impl: Impl) -> None:
    g = new_game(impl, decks=[deal_with({0: "7H KH QS"})])
    g.apply(0, impl.module.choose(KING))
    with pytest.raises(impl.module.IllegalAction) as info:
        g.apply(0, impl.module.double([c("QS")]))
    assert info.value.message == "card cannot be doubled (QS)"


# -- §8 end of the game (tie rules checked on example games) -----------------------------


@pytest.mark.parametrize(
    ("name", "ranking"),
    [
        ("game_0020", [1, 2, 2, 4]),  # singles: equal totals share a place
        ("game_0021", [3, 4, 1, 1]),  # singles: shared first place, both win
        ("game_0022", [1, 2, 1, 2]),  # partnership tie, LAST_TRIX
        ("game_0023", [1, 1, 1, 1]),  # partnership tie, SHARED: both teams win
    ],
)
def test_ranking_ties_singles_share_places_partnership_by_team_tiebreak(
    impl: Impl, name: str, ranking: list[int]
) -> None:
    record = read_record_file(str(EXAMPLES_DIR / f"{name}.json"))
    result = replay(record, impl.Game, impl.Options)
    assert result.record["ranking"] == ranking
    totals = result.record["totals"]
    if record["variant"].endswith("PARTNERSHIP"):
        assert totals[0] + totals[2] == totals[1] + totals[3]


def test_partnership_tie_last_trix_goes_to_team_first_out_in_last_trix_deal(impl: Impl) -> None:
    record = read_record_file(str(EXAMPLES_DIR / "game_0022.json"))
    last_trix = [d for d in record["deals"] if d["contract"] == "TRIX"][-1]
    hands = [set(h) for h in last_trix["hands"]]
    first_out = None
    for play in last_trix["plays"]:
        hands[play["seat"]].discard(play["card"])
        if not hands[play["seat"]]:
            first_out = play["seat"]
            break
    assert first_out is not None
    ranking = replay(record, impl.Game, impl.Options).record["ranking"]
    assert ranking[first_out] == 1 and ranking[(first_out + 2) % 4] == 1


# -- §10 leaving ----------------------------------------------------------------------------


def _two_deals_then(impl: Impl, variant: int) -> Any:
    rng = random.Random(9)
    decks = []
    for _ in range(3):
        cards = list(range(52))
        rng.shuffle(cards)
        decks.append([sorted(cards[13 * s : 13 * s + 13]) for s in range(4)])
    g = new_game(impl, variant, decks=decks, doubling=False)
    play_lowest_until(g, lambda g: g.deal_index == 2)
    g.apply(g.owner, g.legal_actions(g.owner)[0])  # the third deal is under way
    return g


def test_leave_singles_leaver_last_others_ranked_by_finished_deals(impl: Impl) -> None:
    g = _two_deals_then(impl, 0)
    totals = g.totals()
    leaver = max(range(4), key=lambda s: totals[s])
    events = g.leave(leaver)
    assert tuple(events[0]) == (SEAT_LEFT, leaver)
    assert tuple(events[1][1]) == tuple(totals)  # the unfinished deal does not count
    ranking = list(g.ranking())
    assert ranking[leaver] == 4
    others = [s for s in range(4) if s != leaver]
    for s in others:
        assert ranking[s] == 1 + sum(1 for o in others if totals[o] > totals[s])
    assert int(g.phase) == PHASE_OVER
    assert g.record()["left"] == leaver


def test_leave_partnership_leaver_team_ranked_second(impl: Impl) -> None:
    g = _two_deals_then(impl, 3)
    g.leave(1)
    assert list(g.ranking()) == [1, 2, 1, 2]


def test_leave_after_game_over_is_refused(impl: Impl) -> None:
    g = _two_deals_then(impl, 0)
    g.leave(0)
    with pytest.raises(impl.module.IllegalAction) as info:
        g.leave(1)
    assert info.value.message == "game is over"


# -- §12 / §14 ------------------------------------------------------------------------------


def test_record_of_running_deal_has_null_scores(impl: Impl) -> None:
    g = new_game(impl, decks=[deal_with({0: "7H"})], doubling=False)
    g.apply(0, impl.module.choose(TRICKS))
    record = g.record()
    assert record["deals"][0]["scores"] is None and record["ranking"] is None


def test_view_shows_own_hand_only_and_spectators_none(impl: Impl) -> None:
    g = new_game(impl, decks=[deal_with({0: "7H"})])
    assert list(g.view(0)["hand"]) == list(g.hand(0))
    assert "hand" not in g.view(None)
    assert list(g.view(1)["hand_counts"]) == [13, 13, 13, 13]
    text = repr(g.view(None))
    assert "hand" not in {k for k in g.view(None)} and text
