"""Snapshot/restore of the C engine: bit-exact round trip; corrupt input rejected.

restore() is also fuzzed in C (engine/fuzz); here the Python surface: any
truncation, bit flip or random bytes raise ValueError, never crash.
"""

from __future__ import annotations

import copy
import pickle
import random

import pytest

from trix.engine import Game, Options, Phase, Reveal, Variant


def random_prefix(seed: int) -> Game:
    rng = random.Random(seed)
    g = Game(Variant(seed % 4), Options(doubling_reveal=Reveal(seed % 2)))
    steps = rng.randrange(700)
    for _ in range(steps):
        if g.phase == Phase.GAME_OVER:
            break
        if g.phase == Phase.AWAITING_DEAL:
            d = list(range(52))
            rng.shuffle(d)
            g.provide_deal([d[13 * s : 13 * s + 13] for s in range(4)])
            continue
        s = rng.choice(g.to_act())
        g.apply(s, rng.choice(g.legal_actions(s)))
    if seed % 5 == 0 and g.phase != Phase.GAME_OVER:
        g.leave(seed % 4)
    return g


@pytest.mark.parametrize("seed", range(40))
def test_snapshot_round_trip_is_bit_exact(seed: int) -> None:
    g = random_prefix(seed)
    b = g.snapshot()
    r = Game.restore(b)
    assert type(r) is Game
    assert r.snapshot() == b
    assert r.record() == g.record()
    assert r.view(None) == g.view(None)
    for s in range(4):
        assert r.legal_actions(s) == g.legal_actions(s)
        assert r.hand(s) == g.hand(s)
    assert (r.totals(), r.scores(), r.ranking(), r.phase) == (g.totals(), g.scores(), g.ranking(), g.phase)
    assert g.clone().snapshot() == b
    assert copy.deepcopy(g).snapshot() == b
    assert pickle.loads(pickle.dumps(g)).snapshot() == b


@pytest.mark.parametrize("seed", range(10))
def test_restore_rejects_truncated_and_bit_flipped_bytes(seed: int) -> None:
    b = random_prefix(seed + 100).snapshot()
    rng = random.Random(seed)
    for n in sorted({0, 1, len(b) // 2, len(b) - 1, *rng.sample(range(len(b)), 10)}):
        with pytest.raises(ValueError):
            Game.restore(b[:n])
    for _ in range(200):
        i, bit = rng.randrange(len(b)), 1 << rng.randrange(8)
        bad = bytearray(b)
        bad[i] ^= bit
        with pytest.raises(ValueError):
            Game.restore(bytes(bad))
    with pytest.raises(ValueError):
        Game.restore(b + b"\0")


def test_restore_rejects_random_bytes() -> None:
    rng = random.Random(1)
    for n in (0, 3, 20, 100, 2000, 5000):
        for _ in range(20):
            with pytest.raises(ValueError):
                Game.restore(bytes(rng.randrange(256) for _ in range(n)))
    with pytest.raises(TypeError):
        Game.restore("not bytes")  # type: ignore[arg-type]
