"""`trix selfplay`: whole games played by the built-in C bot on every seat.

Owns the self-play summary: per variant, N whole games (docs/rules.md §2, §3) played in C
with the BOT policy on all seats, then per-seat average totals, wins (§8), time and moves
per second. Must not hold rules of its own: the engine plays and scores.
"""

from __future__ import annotations

import argparse
import importlib
import json
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from trix.fairness import commitment, deal_from_seeds
from trix.rules import RECORD_OPTION_DEFAULTS


def load_engine() -> Any:
    """The C rules engine `trix.engine` (docs/engine-api.md); no Python fallback."""
    return importlib.import_module("trix.engine")


VARIANT_NAMES = ("TRIX", "TRIX_PARTNERSHIP", "COMPLEX", "COMPLEX_PARTNERSHIP")


def game_seed(seed: int, variant: int, index: int) -> int:
    """A distinct 64-bit playout seed per (seed, variant, game)."""
    return (seed * 0x9E3779B97F4A7C15 + variant * 0x100000001B3 + index * 0xBF58476D1CE4E5B9) % (1 << 64)


@dataclass
class Summary:
    variant: str
    games: int = 0
    moves: int = 0
    seconds: float = 0.0
    totals: list[int] = field(default_factory=lambda: [0, 0, 0, 0])
    wins: list[int] = field(default_factory=lambda: [0, 0, 0, 0])

    def as_dict(self) -> dict[str, Any]:
        g = max(self.games, 1)
        return {
            "variant": self.variant,
            "games": self.games,
            "avg_scores": [round(t / g, 2) for t in self.totals],
            "wins": list(self.wins),
            "seconds": round(self.seconds, 4),
            "moves": self.moves,
            "moves_per_s": round(self.moves / self.seconds) if self.seconds > 0 else None,
        }


def run_games(variant_name: str, games: int, seed: int) -> Summary:
    """Play `games` whole games with four BOT seats inside C."""
    engine = load_engine()
    variant = engine.Variant[variant_name]
    options = engine.Options()
    policies = (engine.BOT,) * 4
    summary = Summary(variant_name)
    start = time.perf_counter()
    for i in range(games):
        totals, ranking, moves = engine.playout(variant, options, game_seed(seed, int(variant), i), policies)
        summary.games += 1
        summary.moves += moves
        for s in range(4):
            summary.totals[s] += totals[s]
            if ranking[s] == 1:  # §8: every seat ranked 1 wins
                summary.wins[s] += 1
    summary.seconds = time.perf_counter() - start
    return summary


def play_record(
    variant_name: str,
    players: Sequence[str],
    server_seed: bytes,
    client_seed: str = "|||",
    options: dict[str, Any] | None = None,
    leaver: tuple[int, int] | None = None,
) -> dict[str, Any]:
    """One whole game of four BOT seats dealt by docs/rules.md §11 from the seeds, as its §12
    record with the seed revealed (so `trix verify` checks it). `leaver` = (deal, seat): that seat
    leaves for good once that deal is dealt, as from a paid table (§10: the game stops there).
    `options` are the §12 rule options by name (the defaults when omitted)."""
    engine = load_engine()
    chosen = {**RECORD_OPTION_DEFAULTS, **(options or {})}
    game = engine.Game(
        engine.Variant[variant_name],
        engine.Options(
            bool(chosen["doubling"]),
            engine.Reveal[str(chosen["doubling_reveal"])],
            engine.SelfTake[str(chosen["doubling_self_take"])],
            engine.TeamTiebreak[str(chosen["team_tiebreak"])],
            bool(chosen["partnership_trix_early_end"]),
        ),
    )
    while game.phase != engine.Phase.GAME_OVER:
        if game.phase == engine.Phase.AWAITING_DEAL:
            game.provide_deal(deal_from_seeds(server_seed, client_seed, game.deal_index))
            if leaver is not None and leaver[0] == game.deal_index:
                game.leave(leaver[1])
            continue
        seat = game.to_act()[0]
        game.apply(seat, game.bot_action(seat))
    record: dict[str, Any] = game.record()
    record["players"] = list(players)
    record["fairness"] = {
        "commitment": commitment(server_seed),
        "server_seed": server_seed.hex(),
        "client_seed": client_seed,
    }
    return record


def add_selfplay_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--variant",
        choices=VARIANT_NAMES,
        action="append",
        help="variant to play (repeatable; default: all four)",
    )
    parser.add_argument("--games", type=int, default=100, help="games per variant (default 100)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the deals and bot tie-breaks")
    parser.add_argument("--json", action="store_true", help="one JSON line per variant instead of text")


def format_summary(s: Summary) -> str:
    d = s.as_dict()
    scores = " ".join(f"{x:+.1f}" for x in d["avg_scores"])
    wins = " ".join(str(w) for w in s.wins)
    rate = f"{d['moves_per_s']:,} moves/s" if d["moves_per_s"] is not None else "n/a"
    return (
        f"{s.variant:<20} games {s.games:>6}  avg scores by seat [{scores}]  wins by seat [{wins}]  "
        f"{s.moves} moves in {s.seconds:.3f} s ({rate})"
    )


def run_selfplay(args: argparse.Namespace) -> int:
    if args.games < 0:
        print("--games must be >= 0")
        return 2
    variants: list[str] = args.variant or list(VARIANT_NAMES)
    for name in variants:
        summary = run_games(name, args.games, args.seed)
        print(json.dumps(summary.as_dict()) if args.json else format_summary(summary), flush=True)
    return 0
