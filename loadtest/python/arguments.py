"""`trix loadtest`'s arguments: the scenario, its size and pace, where the bots connect,
the budgets that fail a run, and the scenario they make (`scenario_of`).
"""

from __future__ import annotations

import argparse
import dataclasses
from pathlib import Path

from trix import tls
from trix.loadtest.floor import (
    CHAIN_SPLIT,
    CHAINS,
)
from trix.loadtest.scenarios import SCENARIOS, Scenario

PLAYERS_PER_WORKER = 1000
"""`--workers 0`: one bot process per this many players (at least 2), so no worker's loop
becomes the bottleneck of a large run (its lag is reported: bot_lag_p99_ms). Not fewer: each
worker's loop and gRPC poller cost per wake-up, so a busier worker costs less per action
(steady 400 tables: 2 workers 1.01 bots ms per action, 4 workers 1.17)."""
RAMP_TIMEOUT_PER_TABLE_S = 0.15
"""The default wait for every player to be seated, per table: measured on the 2-core box,
1,000 tables took ~120 s to seat (sign-ins and quick matches beside the tables
already playing), past the old fixed 60 s, and the window began with 172 tables still forming."""
RAMP_CONCURRENCY = 64
"""Sign-ins + quick matches in flight at once during the ramp: a burst of hundreds made
matchmaking's partition leases lapse and the gateway answer UNAVAILABLE."""


def add_loadtest_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("scenario", choices=sorted(SCENARIOS), help="steady | peak | churn | failover | idle")
    parser.add_argument("--tables", type=int, default=20, help="tables to fill (4 bot players each)")
    parser.add_argument("--duration", type=float, default=30.0, help="measured window in seconds")
    parser.add_argument(
        "--workers",
        type=int,
        default=0,
        help=f"bot processes, each an asyncio loop of clients (0: one per {PLAYERS_PER_WORKER} players, >= 2)",
    )
    parser.add_argument(
        "--server",
        type=_targets,
        default=(),
        metavar="HOST:PORT[,HOST:PORT...]",
        help="running gateways instead of the embedded platform; the bot workers are spread over them round-robin",
    )
    tls.add_ca_argument(parser)
    parser.add_argument(
        "--tls",
        action="store_true",
        help="the embedded platform with TLS everywhere (`trix up --tls`): the bots verify its CA; "
        "what TLS costs is this run against one without",
    )
    parser.add_argument(
        "--gateways",
        type=int,
        default=1,
        help="gateway replicas of the embedded platform (the bot workers spread over them round-robin, so one "
        "gateway's core is not every player's bottleneck)",
    )
    parser.add_argument("--ramp", type=float, default=0.0, help="spread sign-ins over s (default: tables/50, >= 2)")
    parser.add_argument(
        "--ramp-timeout",
        type=float,
        default=0.0,
        help="s to wait for every player to be seated after the ramp (default: tables * "
        f"{RAMP_TIMEOUT_PER_TABLE_S}, >= 60; a window that starts with players still being seated is not steady)",
    )
    parser.add_argument(
        "--ramp-concurrency",
        type=int,
        default=RAMP_CONCURRENCY,
        help="players between sign-in and their first ticket at once, all workers (0 = no limit)",
    )
    parser.add_argument(
        "--settle",
        type=float,
        default=15.0,
        help="s the seated tables play at the scenario's pace before the window (unmeasured: the ramp's backlog "
        "and every table's first deal starting at once are not the steady state)",
    )
    parser.add_argument(
        "--think",
        type=_think_range,
        default=None,
        metavar="MIN,MAX",
        help="think time per action in s, uniform in [MIN, MAX], instead of the scenario's (e.g. 20,30 "
        "measures what connected but mostly idle players cost)",
    )
    parser.add_argument("--finish-timeout", type=float, default=900.0, help="s the finish phase may take")
    parser.add_argument("--max-actions", type=int, default=3000, help="actions per bot at most")
    parser.add_argument("--max-p99-ms", type=float, default=0.0, help="budget: exit 1 above this window p99")
    parser.add_argument("--max-errors", type=int, default=-1, help="budget: exit 1 above this many errors")
    parser.add_argument(
        "--keep-accepted",
        action="store_true",
        help="write accepted.json to the results: every accepted action's id by table (a fault run checks each "
        "is in its table's log)",
    )
    parser.add_argument("--no-finish", action="store_true", help="stop after the window (no verification)")
    parser.add_argument(
        "--chat-every",
        type=float,
        default=0.0,
        metavar="SECONDS",
        help="each table's bots send one chat line every SECONDS through the gateway (0 = no chat); the "
        "summary's `chat` gives lines sent/delivered and the social service's CPU ms per line",
    )
    parser.add_argument("--echo-seconds", type=float, default=5.0, help="duration of the echo baseline (0 = skip)")
    parser.add_argument(
        "--floor-seconds",
        type=float,
        default=20.0,
        help="duration of the floor baseline (gRPC in, a NATS hop to a table process, one fsynced append, core "
        "NATS fan-out, four gRPC writes out; as many tables at the same pace; 0 = skip), measured before and "
        "after the swarm; the summary's floor_ratio is the platform's CPU per action over the mean of the two",
    )
    parser.add_argument(
        "--floor-chain",
        choices=CHAINS,
        default=CHAIN_SPLIT,
        help="the floor's shape (ADR 0024): split = an edge and a table process meeting over NATS, as the "
        "platform's gateway and table; single = both in one process, the floor of runs before ADR 0024",
    )
    parser.add_argument("--bot-fill", type=float, default=20.0, help="TRIX_MATCHMAKING_BOT_FILL_S of the platform")
    parser.add_argument(
        "--shared-connections", action="store_true", help="bots share TCP connections (and the floor's streams theirs)"
    )
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--out", type=Path, default=None, help="results folder (default loadtest/results/...)")
    parser.add_argument("--state-dir", type=Path, default=None, help="embedded platform data (default: temp)")
    parser.add_argument(
        "--diagnose-nats-no-fsync",
        action="store_true",
        help="DIAGNOSIS ONLY: embedded NATS without sync_interval: always (how much of the cost is fsync)",
    )


def _think_range(text: str) -> tuple[float, float]:
    """`MIN,MAX` seconds of think time (0 <= MIN <= MAX)."""
    low, sep, high = text.partition(",")
    try:
        pair = (float(low), float(high if sep else low))
    except ValueError:
        raise argparse.ArgumentTypeError(f"not MIN,MAX seconds: {text!r}") from None
    if not 0 <= pair[0] <= pair[1]:
        raise argparse.ArgumentTypeError(f"need 0 <= MIN <= MAX: {text!r}")
    return pair


def _targets(text: str) -> tuple[str, ...]:
    """`HOST:PORT[,HOST:PORT...]`: the gateways a run's bots connect to."""
    targets = tuple(t.strip() for t in text.split(",") if t.strip())
    if not targets or any(not t.rpartition(":")[2].isdigit() for t in targets):
        raise argparse.ArgumentTypeError(f"not HOST:PORT[,HOST:PORT...]: {text!r}")
    return targets


def worker_targets(targets: tuple[str, ...], workers: int) -> list[str]:
    """The gateway of each bot worker: round-robin, so every gateway gets workers (and so players)."""
    return [targets[w % len(targets)] for w in range(workers)]


def scenario_of(args: argparse.Namespace) -> Scenario:
    """The named scenario, with `--think` in place of its pace if given."""
    scenario = SCENARIOS[args.scenario]
    if args.think is not None:
        scenario = dataclasses.replace(scenario, think_min_s=args.think[0], think_max_s=args.think[1])
    return scenario
