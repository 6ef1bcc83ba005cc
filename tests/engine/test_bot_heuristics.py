"""The C bot's heuristics, one behaviour per test (issue 2: "a real player, not random").

Each test deals a first deal with the cards that matter fixed (the 7H holder,
seat 0, owns the first kingdom and leads: docs/rules.md §3), plays the public
moves, then asks the bot of one seat for its action.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import Any

import pytest

from trix.rules import SUITS

engine = pytest.importorskip("trix.engine", exc_type=ImportError)

C = engine.parse_card
NO_DOUBLING = engine.Options(doubling=False)


def deal(fixed: dict[int, Sequence[str]], voids: dict[int, str] | None = None, seed: int = 0) -> list[list[int]]:
    """Four hands: `fixed` cards where given, the rest dealt at random, keeping
    each seat in `voids` void in the listed suits."""
    voids = voids or {}
    rng = random.Random(seed)
    base = {s: [C(c) for c in fixed.get(s, ())] for s in range(4)}
    used = {c for h in base.values() for c in h}
    assert len(used) == sum(len(h) for h in base.values()), "a card is fixed twice"
    rest = [c for c in range(52) if c not in used]
    for _ in range(200):
        rng.shuffle(rest)
        hands = {s: list(h) for s, h in base.items()}
        ok = True
        for c in rest:
            room = [s for s in range(4) if len(hands[s]) < 13 and SUITS[c // 13] not in voids.get(s, "")]
            if not room:
                ok = False
                break
            most = max(13 - len(hands[s]) for s in room)
            hands[rng.choice([s for s in room if 13 - len(hands[s]) == most])].append(c)
        if ok:
            return [sorted(hands[s]) for s in range(4)]
    raise AssertionError("could not deal with these constraints")


def start(
    variant: Any, contract: Any, hands: list[list[int]], options: Any = NO_DOUBLING, plays: Sequence[str] = ()
) -> Any:
    assert C("7H") in hands[0]
    game = engine.Game(variant, options, [hands])
    game.apply(0, engine.choose(contract))
    for card in plays:
        seat = game.to_act()[0]
        game.apply(seat, C(card))
    return game


def bot_card(game: Any) -> str:
    seat = game.to_act()[0]
    action = game.bot_action(seat)
    assert action in game.legal_actions(seat)
    return str(engine.card_str(action))


# ---- trick play (§4, §5) ---------------------------------------------------------


@pytest.mark.parametrize("seed", range(5))
def test_bot_dumps_king_of_hearts_when_void_in_led_suit_in_king(seed: int) -> None:
    hands = deal({0: ["7H", "5C"], 1: ["KH"]}, voids={1: "C"}, seed=seed)
    game = start(engine.Variant.TRIX, engine.Contract.KING, hands, plays=["5C"])
    assert bot_card(game) == "KH"


@pytest.mark.parametrize("seed", range(5))
def test_bot_plays_under_winner_in_queens(seed: int) -> None:
    hands = deal(
        {0: ["7H", "KS"], 1: ["AS", "9S", "3S", "2C", "3C", "4C", "5C", "6C", "7C", "8C", "2D", "3D", "4D"]},
        seed=seed,
    )
    game = start(engine.Variant.TRIX, engine.Contract.QUEENS, hands, plays=["KS"])
    assert bot_card(game) == "9S"  # the highest card that still loses, never the ace


@pytest.mark.parametrize("seed", range(5))
def test_bot_gives_its_queen_under_a_higher_card_in_queens(seed: int) -> None:
    hands = deal(
        {0: ["7H", "KS"], 1: ["AS", "QS", "3S", "2C", "3C", "4C", "5C", "6C", "7C", "8C", "2D", "3D", "4D"]},
        seed=seed,
    )
    game = start(engine.Variant.TRIX, engine.Contract.QUEENS, hands, plays=["KS"])
    assert bot_card(game) == "QS"


@pytest.mark.parametrize("seed", range(5))
def test_bot_dumps_a_queen_on_an_opponent_when_void_in_queens(seed: int) -> None:
    hands = deal({0: ["7H", "AS"], 1: ["QH", "QC"]}, voids={1: "S"}, seed=seed)
    game = start(engine.Variant.TRIX, engine.Contract.QUEENS, hands, plays=["AS"])
    assert bot_card(game) in ("QH", "QC")


@pytest.mark.parametrize("seed", range(5))
def test_bot_does_not_dump_a_queen_on_its_partner_in_partnership(seed: int) -> None:
    # §1: partners sit opposite; seat 0's AS wins the trick, seat 2 is its partner
    hands = deal({0: ["7H", "AS"], 1: ["3S"], 2: ["QH", "QC"]}, voids={2: "S"}, seed=seed)
    game = start(engine.Variant.TRIX_PARTNERSHIP, engine.Contract.QUEENS, hands, plays=["AS", "3S"])
    assert bot_card(game) not in ("QH", "QC")


@pytest.mark.parametrize("seed", range(5))
def test_bot_sheds_ace_not_king_when_it_must_win_hearts_in_king(seed: int) -> None:
    hands = deal({0: ["7H", "5H"], 1: ["9H"], 2: ["TH"], 3: ["AH", "KH"]}, voids={3: "H"}, seed=seed)
    game = start(engine.Variant.TRIX, engine.Contract.KING, hands, plays=["5H", "9H", "TH"])
    assert bot_card(game) == "AH"


def test_bot_leads_low_from_a_short_suit_in_tricks() -> None:
    mine = ["7H", "2C", "AS", "KS", "QS", "JS", "TS", "9S", "AD", "KD", "QD", "8H", "9H"]
    hands = deal({0: mine})
    game = start(engine.Variant.TRIX, engine.Contract.TRICKS, hands)
    assert bot_card(game) == "2C"


@pytest.mark.parametrize("seed", range(5))
def test_bot_does_not_lead_a_sure_winner_with_the_queen_of_spades_out_in_queens(seed: int) -> None:
    # AS would win the trick and could catch QS; a low club loses
    mine = ["7H", "AS", "2C", "3C", "4C", "5C", "6C", "2D", "3D", "4D", "5D", "6D", "2H"]
    game = start(engine.Variant.TRIX, engine.Contract.QUEENS, deal({0: mine}, seed=seed))
    assert bot_card(game) != "AS"


# ---- doubling (§7) -----------------------------------------------------------------


def answer(game: Any) -> int:
    seat = game.to_act()[0]
    a = game.bot_action(seat)
    assert a in game.legal_actions(seat)
    return int(a)


def test_bot_does_not_double_unprotected_king() -> None:
    mine = ["KH", "7H", "AC", "KC", "QC", "JC", "AD", "KD", "QD", "JD", "AS", "KS", "QS"]
    game = engine.Game(engine.Variant.TRIX, engine.Options(), [deal({0: mine})])
    game.apply(0, engine.choose(engine.Contract.KING))
    assert answer(game) == engine.ACTION_NO_DOUBLE


def test_bot_doubles_king_protected_by_low_hearts_with_a_short_suit() -> None:
    mine = ["KH", "2H", "3H", "5H", "7H", "2C", "AD", "KD", "9D", "AS", "KS", "8S", "4S"]
    game = engine.Game(engine.Variant.TRIX, engine.Options(), [deal({0: mine})])
    game.apply(0, engine.choose(engine.Contract.KING))
    assert answer(game) == engine.double([C("KH")])


def test_bot_does_not_double_unprotected_queen() -> None:
    mine = ["QS", "AS", "7H", "AC", "KC", "JC", "AD", "KD", "JD", "AH", "KH", "JH", "TH"]
    game = engine.Game(engine.Variant.TRIX, engine.Options(), [deal({0: mine})])
    game.apply(0, engine.choose(engine.Contract.QUEENS))
    assert answer(game) == engine.ACTION_NO_DOUBLE


def test_bot_doubles_a_well_protected_queen_only() -> None:
    # QC protected by 2C 3C 4C 5C; QD bare with the ace: double QC, not QD
    mine = ["QC", "2C", "3C", "4C", "5C", "QD", "AD", "7H", "8H", "9S", "TS", "JS", "KS"]
    game = engine.Game(engine.Variant.TRIX, engine.Options(), [deal({0: mine})])
    game.apply(0, engine.choose(engine.Contract.QUEENS))
    assert answer(game) == engine.double([C("QC")])


# ---- contract choice (§3) -----------------------------------------------------------


def choice(mine: Sequence[str], variant: Any = engine.Variant.TRIX) -> Any:
    game = engine.Game(variant, engine.Options(), [deal({0: mine})])
    a = game.bot_action(0)
    assert a in game.legal_actions(0)
    return engine.Contract(a - 52)


def test_bot_chooses_trix_with_four_jacks_and_their_neighbours() -> None:
    assert (
        choice(["JC", "JD", "JH", "JS", "TC", "QC", "TD", "QD", "TH", "QH", "TS", "QS", "7H"]) == engine.Contract.TRIX
    )


def test_bot_does_not_choose_diamonds_with_many_high_diamonds() -> None:
    mine = ["AD", "KD", "QD", "JD", "TD", "9D", "8D", "7H", "2C", "3C", "2S", "3S", "4S"]
    assert choice(mine) != engine.Contract.DIAMONDS


def test_bot_does_not_choose_king_holding_a_bare_king_of_hearts() -> None:
    mine = ["KH", "7H", "AC", "KC", "QC", "2D", "3D", "4D", "5D", "2S", "3S", "4S", "5S"]
    assert choice(mine) != engine.Contract.KING


def test_bot_plays_the_last_contract_of_the_kingdom_when_forced() -> None:
    # §3: each contract is played exactly once per kingdom, so the fifth deal has one choice
    rng = random.Random(9)
    decks = []
    for _ in range(5):
        cards = list(range(52))
        rng.shuffle(cards)
        decks.append([sorted(cards[13 * s : 13 * s + 13]) for s in range(4)])
    game = engine.Game(engine.Variant.TRIX, NO_DOUBLING, decks)
    while game.deal_index < 4:
        seat = game.to_act()[0]
        game.apply(seat, game.bot_action(seat))
    owner = game.to_act()[0]
    legal = game.legal_actions(owner)
    assert len(legal) == 1 and game.bot_action(owner) == legal[0]


# ---- TRIX layout (§6) -----------------------------------------------------------------


def test_bot_trix_opens_the_jack_of_its_own_run() -> None:
    mine = ["JS", "TS", "9S", "8S", "JC", "7H", "2D", "3D", "4D", "5D", "6D", "2H", "3H"]
    game = start(engine.Variant.TRIX, engine.Contract.TRIX, deal({0: mine}))
    assert bot_card(game) == "JS"


@pytest.mark.parametrize("seed", range(5))
def test_bot_trix_continues_its_run_rather_than_opening_the_way(seed: int) -> None:
    # seat 0 opened JS; next turn it may play TS (its own run 9S 8S follows) or JD (nothing of its own)
    mine = ["JS", "TS", "9S", "8S", "JD", "7H", "2C", "3C", "4C", "5C", "6C", "2H", "3H"]
    hands = deal({0: mine}, seed=seed)
    game = engine.Game(engine.Variant.TRIX, NO_DOUBLING, [hands])
    game.apply(0, engine.choose(engine.Contract.TRIX))
    game.apply(0, C("JS"))
    rng = random.Random(seed)
    while game.to_act() and game.to_act()[0] != 0:
        s = game.to_act()[0]
        game.apply(s, rng.choice(game.legal_actions(s)))
    if not game.to_act():
        pytest.skip("deal ended")
    assert bot_card(game) == "TS"
