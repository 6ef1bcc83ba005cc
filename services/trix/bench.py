"""`trix bench engine` and `trix bench bot`: the engine's benchmarks (ADR 0002).

Owns the measurements only (a benchmark, not a timed test), each bounded by `--seconds` and
reported as JSON on stdout: `engine` is one object with every figure of one run (Python API,
pure-Python model, C playouts, §12 record replay, an in-run baseline, and the ratios to the
reference figures); `bot` is one line per variant, one BOT seat against three RANDOM and
against three LOWEST players.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import json
import random
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from types import ModuleType
from typing import Any

from trix.selfplay import VARIANT_NAMES, game_seed, load_engine

# Reference figures, measured on this machine (moves per second; ADR 0002).
OPENSPIEL_HEARTS_PYTHON = 550_000.0
OPENSPIEL_HEARTS_CPP = 3_100_000.0
MINIMAL_C_LOOP_PYTHON = 1_500_000.0
MINIMAL_C_LOOP_C = 35_000_000.0
# The targets (ADR 0002): twice OpenSpiel from Python, five times OpenSpiel in C.
TARGET_API = 2 * OPENSPIEL_HEARTS_PYTHON
TARGET_PLAYOUT = 5 * OPENSPIEL_HEARTS_CPP

MODEL_RELATIVE_PATH = Path("tests") / "engine" / "model.py"
GOLDEN_RELATIVE_PATH = Path("tests") / "golden"


# ---- helpers -----------------------------------------------------------------


def random_decks(rng: random.Random, deals: int) -> list[list[list[int]]]:
    """`deals` fresh shuffles (docs/rules.md §3: every deal is a fresh shuffle)."""
    decks: list[list[list[int]]] = []
    cards = list(range(52))
    for _ in range(deals):
        rng.shuffle(cards)
        decks.append([sorted(cards[13 * s : 13 * s + 13]) for s in range(4)])
    return decks


def find_model(start: Path | None = None) -> tuple[ModuleType | None, str | None]:
    """The test-only pure-Python model, imported by file path (it is not a package).

    Looked up relative to the repository holding this file, then the working
    directory. Returns (module, None) or (None, reason).
    """
    here = (start or Path(__file__)).resolve()
    candidates = [p / MODEL_RELATIVE_PATH for p in here.parents] + [Path.cwd() / MODEL_RELATIVE_PATH]
    for path in candidates:
        if path.is_file():
            spec = importlib.util.spec_from_file_location("trix_bench_model", path)
            if spec is None or spec.loader is None:
                continue
            module = importlib.util.module_from_spec(spec)
            sys.modules[spec.name] = module  # dataclasses need the module registered
            try:
                spec.loader.exec_module(module)
            except Exception as exc:  # noqa: BLE001 - reported, not fatal: the other measures still run
                del sys.modules[spec.name]
                return None, f"{path}: import failed ({type(exc).__name__}: {exc})"
            return module, None
    return None, f"{MODEL_RELATIVE_PATH} not found near {here.parent} or in {Path.cwd()}"


def find_golden(start: Path | None = None) -> Path:
    """The repository's golden records (tests/golden), looked up like the model: relative
    to the repository holding this file, then the working directory. When neither has
    them (an installed wheel), the returned path does not exist and the replay measure
    uses self-play records instead."""
    here = (start or Path(__file__)).resolve()
    for path in [p / GOLDEN_RELATIVE_PATH for p in here.parents] + [Path.cwd() / GOLDEN_RELATIVE_PATH]:
        if path.is_dir():
            return path
    return Path.cwd() / GOLDEN_RELATIVE_PATH


def random_play_rate(
    game_factory: Callable[[int, list[list[list[int]]]], Any],
    seconds: float,
    seed: int,
) -> tuple[float, int, int]:
    """Random legal play through an engine-API `Game` (docs/engine-api.md):
    legal_actions, a random choice in Python, apply, for every move of whole
    games, cycling through the four variants. Only the move loops are timed
    (dealing the decks is not). Returns (moves/s, moves, games)."""
    rng = random.Random(seed)
    choice = rng.choice
    moves = games = 0
    elapsed = 0.0
    variant = 0
    while elapsed < seconds or games == 0:
        deals = 20 if variant in (0, 1) else 8
        game = game_factory(variant, random_decks(rng, deals))
        to_act = game.to_act
        legal = game.legal_actions
        apply = game.apply
        n = 0
        t0 = time.perf_counter()
        while True:
            seats = to_act()
            if not seats:  # GAME_OVER (every deck was given: never AWAITING_DEAL)
                break
            seat = seats[0]
            apply(seat, choice(legal(seat)))
            n += 1
        elapsed += time.perf_counter() - t0
        moves += n
        games += 1
        variant = (variant + 1) % 4
    return moves / elapsed, moves, games


def playout_rate(seconds: float, seed: int) -> tuple[float, int, int]:
    """Whole games inside C, one `playout` call per game, RANDOM policies."""
    engine = load_engine()
    options = engine.Options()
    policies = (engine.RANDOM,) * 4
    variants = [engine.Variant(v) for v in range(4)]
    playout = engine.playout
    moves = games = 0
    t0 = time.perf_counter()
    elapsed = 0.0
    while elapsed < seconds or games == 0:
        for _ in range(50):
            _, _, m = playout(variants[games % 4], options, game_seed(seed, games % 4, games), policies)
            moves += m
            games += 1
        elapsed = time.perf_counter() - t0
    return moves / elapsed, moves, games


def selfplay_records(n: int, seed: int) -> list[dict[str, Any]]:
    """Records of bot games (when the golden records are absent)."""
    engine = load_engine()
    rng = random.Random(seed)
    out: list[dict[str, Any]] = []
    for i in range(n):
        variant = engine.Variant(i % 4)
        game = engine.Game(variant, engine.Options(), random_decks(rng, 20 if i % 4 < 2 else 8))
        while True:
            seats = game.to_act()
            if not seats:
                break
            game.apply(seats[0], game.bot_action(seats[0]))
        record = game.record()
        record["players"] = ["p1", "p2", "p3", "p4"]
        out.append(record)
    return out


def replay_rate(seconds: float, seed: int, examples: Path) -> tuple[float, int, str]:
    """`trix.records.replay` of the example records (or self-play records)."""
    engine = load_engine()
    from trix.records import read_record_file, replay

    files = sorted(examples.glob("*.json")) if examples.is_dir() else []
    records: list[Any] = []
    source = str(examples)
    for f in files:
        try:
            records.append(read_record_file(str(f)))
        except Exception:  # noqa: BLE001 - a broken example is skipped, not benchmarked
            continue
    if not records:
        records = selfplay_records(8, seed)
        source = "selfplay"
    done = 0
    t0 = time.perf_counter()
    elapsed = 0.0
    while elapsed < seconds or done == 0:
        for rec in records:
            # an illegal example is rejected with a RecordError: still a replay
            with contextlib.suppress(Exception):
                replay(rec, engine.Game, engine.Options)
            done += 1
        elapsed = time.perf_counter() - t0
    return done / elapsed, done, source


def baseline_loop_rate(seconds: float, seed: int) -> float:
    """A minimal pure-Python loop (random.choice from a list + append): the
    ceiling any Python-driven loop can reach on this machine, this run."""
    rng = random.Random(seed)
    choice = rng.choice
    options = list(range(13))
    n = 0
    t0 = time.perf_counter()
    elapsed = 0.0
    while elapsed < seconds:
        out: list[int] = []
        append = out.append
        for _ in range(10_000):
            append(choice(options))
        n += len(out)
        elapsed = time.perf_counter() - t0
    return n / elapsed


def _round(x: float | None, nd: int = 3) -> float | None:
    return None if x is None else round(x, nd)


def bench_engine(seconds: float, seed: int, examples: Path) -> dict[str, Any]:
    engine = load_engine()
    result: dict[str, Any] = {"seconds_per_measure": seconds}
    baseline = baseline_loop_rate(seconds, seed)
    api, api_moves, api_games = random_play_rate(
        lambda v, decks: engine.Game(engine.Variant(v), engine.Options(), decks), seconds, seed
    )
    model, reason = find_model()
    model_rate: float | None = None
    if model is not None:
        mod = model
        model_rate, model_moves, model_games = random_play_rate(
            lambda v, decks: mod.Game(mod.Variant(v), mod.Options(), decks), seconds, seed
        )
        result["model_moves"] = model_moves
        result["model_games"] = model_games
    playout, pl_moves, pl_games = playout_rate(seconds, seed)
    replay, replays, source = replay_rate(seconds, seed, examples)
    result.update(
        {
            "api_moves_per_s": round(api),
            "api_moves": api_moves,
            "api_games": api_games,
            "model_moves_per_s": None if model_rate is None else round(model_rate),
            "playout_moves_per_s": round(playout),
            "playout_moves": pl_moves,
            "playout_games": pl_games,
            "replay_records_per_s": round(replay, 1),
            "replay_records": replays,
            "replay_source": source,
            "baseline_python_loop_per_s": round(baseline),
            "api_vs_baseline_python_loop": _round(api / baseline),
            "api_vs_model": None if model_rate is None else _round(api / model_rate, 1),
            "api_vs_openspiel": _round(api / OPENSPIEL_HEARTS_PYTHON),
            "playout_vs_openspiel_cpp": _round(playout / OPENSPIEL_HEARTS_CPP),
            "api_vs_minimal_c_loop_python": _round(api / MINIMAL_C_LOOP_PYTHON),
            "playout_vs_minimal_c_loop_c": _round(playout / MINIMAL_C_LOOP_C),
            "reference": {
                "openspiel_hearts_python_moves_per_s": OPENSPIEL_HEARTS_PYTHON,
                "openspiel_hearts_cpp_moves_per_s": OPENSPIEL_HEARTS_CPP,
                "minimal_c_loop_python_moves_per_s": MINIMAL_C_LOOP_PYTHON,
                "minimal_c_loop_c_moves_per_s": MINIMAL_C_LOOP_C,
            },
            "targets": {
                "api_moves_per_s": TARGET_API,
                "playout_moves_per_s": TARGET_PLAYOUT,
                "api_meets": api >= TARGET_API,
                "playout_meets": playout >= TARGET_PLAYOUT,
            },
        }
    )
    if reason is not None:
        result["model_moves_per_s_reason"] = reason
    return result


# ---- bot benchmark -------------------------------------------------------------

PARTNERSHIP_SETUP = (
    "one BOT seat; its partner and both opponents play the opponent policy; "
    "win = the BOT's team ranked 1 (docs/rules.md §8); points are team totals (sum of partners)"
)
SINGLES_SETUP = "one BOT seat against three seats of the opponent policy; win = BOT ranked 1 (§8, ties share)"


def bot_vs(variant_name: str, opponent: int, games: int, seed: int) -> dict[str, Any]:
    """One BOT seat (rotated over the four seats game by game) against three
    seats of `opponent` policy, whole games in C."""
    engine = load_engine()
    variant = engine.Variant[variant_name]
    partnership = variant in (engine.Variant.TRIX_PARTNERSHIP, engine.Variant.COMPLEX_PARTNERSHIP)
    options = engine.Options()
    wins = 0
    points = 0.0
    seat_points = 0.0
    opp_points = 0.0
    for i in range(games):
        bot = i % 4
        policies = [opponent] * 4
        policies[bot] = int(engine.BOT)
        totals, ranking, _ = engine.playout(variant, options, game_seed(seed, int(variant) * 2 + opponent, i), policies)
        if ranking[bot] == 1:
            wins += 1
        seat_points += totals[bot]
        if partnership:
            points += totals[bot] + totals[(bot + 2) % 4]
            opp_points += totals[(bot + 1) % 4] + totals[(bot + 3) % 4]
        else:
            points += totals[bot]
            opp_points += sum(totals[s] for s in range(4) if s != bot) / 3
    g = max(games, 1)
    out: dict[str, Any] = {
        "win_rate": round(wins / g, 4),
        "avg_points": round(points / g, 2),
        "opponents_avg_points": round(opp_points / g, 2),
    }
    if partnership:
        out["bot_seat_avg_points"] = round(seat_points / g, 2)
    return out


def bench_bot(variants: Sequence[str], games: int, seed: int) -> list[dict[str, Any]]:
    engine = load_engine()
    lines: list[dict[str, Any]] = []
    for name in variants:
        t0 = time.perf_counter()
        vs_random = bot_vs(name, int(engine.RANDOM), games, seed)
        vs_lowest = bot_vs(name, int(engine.LOWEST), games, seed)
        partnership = name.endswith("PARTNERSHIP")
        lines.append(
            {
                "variant": name,
                "games": games,
                "setup": PARTNERSHIP_SETUP if partnership else SINGLES_SETUP,
                "win_rate": vs_random["win_rate"],
                "avg_points": vs_random["avg_points"],
                "vs_random": vs_random,
                "vs_lowest": vs_lowest,
                "seconds": round(time.perf_counter() - t0, 3),
            }
        )
    return lines


# ---- command line -------------------------------------------------------------------


def add_bench_arguments(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="bench", required=True)
    e = sub.add_parser("engine", help="engine speed: Python API, model, C playouts, record replay")
    e.add_argument("--seconds", type=float, default=2.0, help="duration of each measure (default 2)")
    e.add_argument("--seed", type=int, default=0)
    e.add_argument("--examples", type=Path, default=None, help="records to replay (default: tests/golden)")
    b = sub.add_parser("bot", help="the bot against RANDOM and LOWEST players, one JSON line per variant")
    b.add_argument("--games", type=int, default=1000, help="games per variant and opponent (default 1000)")
    b.add_argument("--seed", type=int, default=0)
    b.add_argument("--variant", choices=VARIANT_NAMES, action="append", help="default: all four")


def run_bench(args: argparse.Namespace) -> int:
    if args.bench == "engine":
        if args.seconds <= 0:
            print("--seconds must be > 0", file=sys.stderr)
            return 2
        print(json.dumps(bench_engine(args.seconds, args.seed, args.examples or find_golden())), flush=True)
        return 0
    if args.games <= 0:
        print("--games must be > 0", file=sys.stderr)
        return 2
    for line in bench_bot(args.variant or list(VARIANT_NAMES), args.games, args.seed):
        print(json.dumps(line), flush=True)
    return 0
