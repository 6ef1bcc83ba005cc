"""The C bot (engine/src/trix_bot.c): legal everywhere, blind to hidden cards, stronger than simple players.

docs/rules.md §14 "its hand: other seats never (only the number of cards)": the bot is
a function of what its seat may see, so two states that differ only in the
other seats' hidden cards must get the same answer.
"""

from __future__ import annotations

import random
from typing import Any

import pytest

engine = pytest.importorskip("trix.engine", exc_type=ImportError)
from trix.bench import bot_vs, random_decks  # noqa: E402

VARIANTS = list(engine.Variant)
OPTION_SETS = [
    engine.Options(),
    engine.Options(doubling=False),
    engine.Options(doubling_reveal=engine.Reveal.SIMULTANEOUS, doubling_self_take=engine.SelfTake.LEADER),
    engine.Options(partnership_trix_early_end=False, team_tiebreak=engine.TeamTiebreak.SHARED),
]


def num_deals(variant: Any) -> int:
    return 20 if variant in (engine.Variant.TRIX, engine.Variant.TRIX_PARTNERSHIP) else 8


@pytest.mark.parametrize("variant", VARIANTS, ids=lambda v: v.name)
@pytest.mark.parametrize("opt_index", range(len(OPTION_SETS)))
def test_bot_always_returns_a_legal_action_for_every_seat_to_act(variant: Any, opt_index: int) -> None:
    rng = random.Random(1000 + opt_index * 10 + int(variant))
    options = OPTION_SETS[opt_index]
    checked = 0
    for _ in range(6):
        game = engine.Game(variant, options, random_decks(rng, num_deals(variant)))
        while True:
            seats = game.to_act()
            if not seats:
                break
            for seat in seats:
                legal = game.legal_actions(seat)
                assert game.bot_action(seat) in legal
                checked += 1
            seat = rng.choice(seats)
            # mix bot and random moves so that the states are varied
            action = game.bot_action(seat) if rng.random() < 0.5 else rng.choice(game.legal_actions(seat))
            game.apply(seat, action)
    assert checked > 500


@pytest.mark.parametrize("variant", VARIANTS, ids=lambda v: v.name)
def test_bot_plays_whole_games_inside_c_on_every_seat(variant: Any) -> None:
    # trix_playout fails (RuntimeError) if the bot ever returns an illegal action
    for seed in range(50):
        _totals, ranking, moves = engine.playout(variant, engine.Options(), seed, (engine.BOT,) * 4)
        assert moves > 0 and min(ranking) == 1


def permute_hidden(game: Any, decks: list[list[list[int]]], seat: int, rng: random.Random) -> list[list[list[int]]]:
    """Decks identical for `seat`, but the other seats' unplayed cards of the
    current deal dealt anew among them (same counts)."""
    d = game.deal_index
    others = [s for s in range(4) if s != seat]
    remaining = {s: set(game.hand(s)) for s in others}
    pool = [c for s in others for c in sorted(remaining[s])]
    rng.shuffle(pool)
    new = [list(h) for h in decks[d]]
    pos = 0
    for s in others:
        n = len(remaining[s])
        kept = [c for c in decks[d][s] if c not in remaining[s]]
        new[s] = sorted(kept + pool[pos : pos + n])
        pos += n
    out = [list(map(list, deck)) for deck in decks]
    out[d] = new
    return out


@pytest.mark.parametrize("variant", VARIANTS, ids=lambda v: v.name)
def test_bot_never_reads_hidden_cards_other_hands_permuted_same_action(variant: Any) -> None:
    rng = random.Random(77 + int(variant))
    compared = 0
    differing_states = 0
    for _ in range(250):
        decks = random_decks(rng, num_deals(variant))
        game = engine.Game(variant, engine.Options(), decks)
        actions: list[tuple[int, int]] = []
        for _ in range(rng.randrange(0, 400)):
            seats = game.to_act()
            if not seats:
                break
            seat = seats[0]
            a = rng.choice(game.legal_actions(seat))
            game.apply(seat, a)
            actions.append((seat, a))
        seats = game.to_act()
        if not seats:
            continue
        seat = seats[0]
        decks2 = permute_hidden(game, decks, seat, rng)
        twin = engine.Game(variant, engine.Options(), decks2)
        try:
            for s, a in actions:
                twin.apply(s, a)
        except engine.IllegalAction:
            continue  # the permutation contradicts a public void: not the same public history
        if twin.view(seat) != game.view(seat):
            continue  # TRIX: other automatic passes (§6), so another public state
        assert twin.hand(seat) == game.hand(seat)
        if any(twin.hand(s) != game.hand(s) for s in range(4)):
            differing_states += 1
        assert twin.bot_action(seat) == game.bot_action(seat)
        compared += 1
    assert compared >= 80 and differing_states >= 40


def test_bot_simultaneous_doubling_answer_does_not_depend_on_others_secret_answers() -> None:
    # §7 SIMULTANEOUS: answers stay secret until every seat has answered (§14).
    options = engine.Options(doubling_reveal=engine.Reveal.SIMULTANEOUS)
    rng = random.Random(5)
    checked = 0
    for _ in range(100):
        game = engine.Game(engine.Variant.COMPLEX, options, random_decks(rng, 8))
        owner = game.to_act()[0]
        game.apply(owner, engine.choose(engine.Contract.COMPLEX))
        for seat in range(4):
            fresh = game.clone()
            expected = fresh.bot_action(seat)
            other = game.clone()
            for s in range(4):
                if s != seat:
                    other.apply(s, max(other.legal_actions(s)))  # double everything possible
            assert other.bot_action(seat) == expected
            checked += 1
    assert checked == 400


@pytest.mark.parametrize("variant", VARIANTS, ids=lambda v: v.name)
def test_bot_wins_at_least_half_against_random_players(variant: Any) -> None:
    result = bot_vs(variant.name, int(engine.RANDOM), 200, seed=11)
    assert result["win_rate"] >= 0.5
    assert result["avg_points"] > result["opponents_avg_points"]


@pytest.mark.parametrize("variant", VARIANTS, ids=lambda v: v.name)
def test_bot_outscores_lowest_card_players(variant: Any) -> None:
    result = bot_vs(variant.name, int(engine.LOWEST), 200, seed=12)
    assert result["win_rate"] >= 0.5
    assert result["avg_points"] > result["opponents_avg_points"] + 100
