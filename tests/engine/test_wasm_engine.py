"""One rules implementation, two targets (issue 39, ADR 0025): the C engine compiled to
WebAssembly for the web's Verify page (web/build/trix_engine.wasm) agrees with the native
one the server runs: on every golden record replayed, on the altered records refused, and
on 1,000 random games (fixed seeds) compared state for state."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest
from engine_support import EXAMPLE_FILES

from support.altered import KINDS, altered_path
from support.wasm_engine import WasmGame, WasmIllegal, WasmInstance
from trix import engine
from trix.engine import _core
from trix.records import RecordError, replay

RANDOM_GAMES = 1000
STEPPED_GAMES = 100  # of them, played action by action from Python with every legal list compared
POLICY_RANDOM, POLICY_BOT = 0, 2


def _options(rng: random.Random) -> engine.Options:
    return engine.Options(
        doubling=rng.random() < 0.8,
        doubling_reveal=engine.Reveal(rng.randrange(2)),
        doubling_self_take=engine.SelfTake(rng.randrange(2)),
        team_tiebreak=engine.TeamTiebreak(rng.randrange(2)),
        partnership_trix_early_end=rng.random() < 0.5,
    )


@pytest.mark.parametrize("path", EXAMPLE_FILES, ids=lambda p: p.stem)
def test_wasm_engine_replays_every_golden_record_as_the_native_one(path: Path) -> None:
    record = json.loads(path.read_text("utf-8"))
    native = replay(record, engine.Game, engine.Options)
    wasm = replay(record, WasmGame, engine.Options)
    assert wasm.record == native.record
    assert wasm.differences == native.differences == []
    assert wasm.finished == native.finished


@pytest.mark.parametrize("kind", KINDS)
def test_wasm_engine_judges_an_altered_record_as_the_native_one(kind: str) -> None:
    record = json.loads(altered_path(kind).read_text("utf-8"))
    outcomes = []
    for game_cls in (engine.Game, WasmGame):
        try:
            result = replay(record, game_cls, engine.Options)
            outcomes.append(("replayed", result.record, result.differences, result.finished))
        except RecordError as exc:
            outcomes.append(("refused", exc.message))
    assert outcomes[0] == outcomes[1]


def _stepped_game(rng: random.Random) -> None:
    variant = engine.Variant(rng.randrange(4))
    options = _options(rng)
    cards = list(range(52))
    decks = []
    for _ in range(20):
        rng.shuffle(cards)
        decks.append([sorted(cards[13 * s : 13 * s + 13]) for s in range(4)])
    decks = decks[: 20 if variant in (engine.Variant.TRIX, engine.Variant.TRIX_PARTNERSHIP) else 8]
    native = engine.Game(variant, options, decks)
    wasm = WasmGame(variant, options, decks)
    leave_at = rng.randrange(2000) if rng.random() < 0.1 else -1
    step = 0
    while native.phase != engine.Phase.GAME_OVER:
        assert wasm.to_act() == native.to_act()
        seat = rng.choice(native.to_act())
        assert wasm.legal_actions(seat) == native.legal_actions(seat)
        if step == leave_at:
            native.leave(seat)
            wasm.leave(seat)
            break
        # now and then an action the rules refuse: both refuse it with the same text
        action = rng.randrange(96) if rng.random() < 0.05 else rng.choice(native.legal_actions(seat))
        try:
            native.apply(seat, action)
        except engine.IllegalAction as exc:
            with pytest.raises(WasmIllegal) as refused:
                wasm.apply(seat, action)
            assert (refused.value.code, refused.value.message) == (int(exc.code), exc.message)
            continue
        wasm.apply(seat, action)
        assert wasm.totals() == native.totals()
        step += 1
    assert wasm.totals() == native.totals() and wasm.ranking() == native.ranking()
    assert wasm.snapshot() == native.snapshot()


def test_wasm_and_native_engines_agree_on_1000_random_games() -> None:
    """1,000 whole games, fixed seeds: the first 100 played from Python action by action
    (random legal actions, some illegal ones, some leaves; to-act, legal actions, refusals and
    totals compared at every step), the rest as playouts inside each engine (random or bot
    policy, random options). A stepped game ends with the same snapshot bytes on both sides
    (every deal's hands, answers, plays and scores, the totals and the ranking); a playout with
    the same number of moves, and the native engine restores the WebAssembly one's snapshot,
    replaying every action, to the totals and ranking of its own playout."""
    rng = random.Random(39)
    for _ in range(STEPPED_GAMES):
        _stepped_game(rng)
    wasm = WasmInstance()
    for _ in range(RANDOM_GAMES - STEPPED_GAMES):
        variant = rng.randrange(4)
        options = _options(rng)
        seed = rng.getrandbits(64)
        policy = rng.choice((POLICY_RANDOM, POLICY_BOT))
        totals, ranking, native_moves = _core.playout_from(
            engine.Game(engine.Variant(variant), options), seed, [policy] * 4
        )
        assert (
            wasm.call(
                "tw_init",
                variant,
                int(options.doubling),
                int(options.doubling_reveal),
                int(options.doubling_self_take),
                int(options.team_tiebreak),
                int(options.partnership_trix_early_end),
            )
            == 0
        )
        moves = wasm.call("tw_playout", seed & 0xFFFFFFFF, seed >> 32, policy)
        assert moves == native_moves > 0, (variant, options, seed, policy)
        # the native engine restores the WebAssembly engine's game (trix_restore replays and
        # checks every action of it) and finds the totals and ranking of its own playout
        restored = engine.Game.restore(wasm.snapshot())
        assert (restored.totals(), restored.ranking()) == (totals, ranking), (variant, options, seed, policy)
        assert restored.snapshot() == wasm.snapshot()
