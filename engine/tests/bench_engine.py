"""Python-API throughput of the engine: random legal moves per second (`make bench-engine`).

A move is `to_act()` + `legal_actions(seat)` + `random.choice` + `apply(seat, a)`.
Also times whole-game playouts inside C through `trix.engine.playout`.
"""

from __future__ import annotations

import random
import time

from trix.engine import LOWEST, RANDOM, Game, Options, Variant, playout


def random_decks(rng: random.Random) -> list[list[list[int]]]:
    decks = []
    for _ in range(20):
        deck = list(range(52))
        rng.shuffle(deck)
        decks.append([deck[13 * s : 13 * s + 13] for s in range(4)])
    return decks


def python_api(n_games: int = 300) -> tuple[int, float]:
    rng = random.Random(5)
    choice = rng.choice
    moves, elapsed = 0, 0.0
    for _ in range(n_games):
        g = Game(Variant.TRIX, Options(), random_decks(rng))
        to_act, legal, apply = g.to_act, g.legal_actions, g.apply
        t = time.perf_counter()
        while True:
            seats = to_act()
            if not seats:
                break
            seat = seats[0]
            apply(seat, choice(legal(seat)))
            moves += 1
        elapsed += time.perf_counter() - t
    return moves, elapsed


def c_playouts(policy: int, games: int = 20000) -> tuple[int, float]:
    t = time.perf_counter()
    total = sum(playout(Variant.TRIX, Options(), i, (policy,) * 4)[2] for i in range(games))
    return total, time.perf_counter() - t


def main() -> None:
    m, e = python_api()
    print(f"python API: {m} moves in {e:.3f}s = {m / e / 1e6:.2f} M moves/s")
    for name, policy in (("RANDOM", RANDOM), ("LOWEST", LOWEST)):
        m, e = c_playouts(policy)
        print(f"C playout {name}: {m} moves in {e:.3f}s = {m / e / 1e6:.1f} M moves/s")


if __name__ == "__main__":
    main()
