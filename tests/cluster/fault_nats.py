"""`make fault-nats` (issue 19): bot games of all four variants through two gateways, three
table replicas, on the 3-node JetStream cluster of `trix up --nats-cluster 3`; meanwhile,
again and again, one NATS fault: SIGKILL of the node leading TABLE_LOG, of the node leading
the table leases bucket (KV_table_leases), of a follower (leading neither), or SIGSTOP of
the TABLE_LOG leader (a slow node, not a dead one) and SIGCONT a few seconds later. A killed
node is started again on its store and the next fault waits until every replica is current.

Checked after the run, from the logs and the records (cluster_support.check_games): every
action a client saw accepted is in its table's log exactly once, no table had two writers
(the writer epochs along each log), every game finished and passes `trix replay` and
`trix verify`, scoring's standings equal the replayed totals; and per fault, the resume
time: from the fault to the first acceptance, on each game running then, of an action sent
after it (p95 and max over every fault and game).

`python tests/cluster/fault_nats.py --faults 20` prints, last, one JSON line.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import random
import signal
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cluster_support import NatsCluster, Run, WatchedBot, check_games, standings_match
from netns import Hosts

from trix.natsio import subjects
from trix.v1 import common_pb2

VARIANTS = (
    common_pb2.VARIANT_TRIX,
    common_pb2.VARIANT_TRIX_PARTNERSHIP,
    common_pb2.VARIANT_COMPLEX,
    common_pb2.VARIANT_COMPLEX_PARTNERSHIP,
)
KINDS = ("kill-table-log-leader", "kill-kv-leader", "kill-follower", "stop-leader")
PARTITIONS = ("partition-node", "partition-table-host")
"""With --netns (root, iproute2): each NATS node and one more table replica on its own host
(netns.py), and these faults too: the TABLE_LOG leader's host, or that table replica's host,
cut off from everything for a while, then healed."""
TABLE_HOST = 3
LEASES_STREAM = "KV_table_leases"
ENV = {"TRIX_MATCHMAKING_BOT_FILL_S": "0", "TRIX_GATEWAY_RATE_PER_S": "400", "TRIX_GATEWAY_RATE_BURST": "400"}
RESUME_BOUND_S = 5.0
GAME_TIMEOUT_S = 240.0
"""A game (a trix game of one client and three table bots takes under a minute here) not over
after this long is cut and counts as not finished."""


@dataclass
class Fault:
    kind: str
    node: int
    at: float
    running: list[str]
    resume: dict[str, float] = field(default_factory=dict)


class Slots:
    """`n` game loops, each playing one game after another (variants in turn, gateways in turn)."""

    def __init__(self, cluster: NatsCluster, run: Run, n: int, seed: int) -> None:
        self.cluster = cluster
        self.run = run
        self.n = n
        self.seed = seed
        self.stop = asyncio.Event()
        self.current: dict[int, str] = {}
        self.games = 0
        self.unavailable_before_seated = 0

    async def slot(self, k: int) -> None:
        gateways = self.cluster.gateways
        game = 0
        while not self.stop.is_set():
            variant = VARIANTS[(k + game) % len(VARIANTS)]
            bot = WatchedBot(gateways[(k + game) % len(gateways)], k, self.seed * 100 + game, variant, self.run)
            game += 1
            self.games += 1
            task = asyncio.ensure_future(bot.run(f"f{self.seed}-{k}-{game}"))
            started = time.monotonic()
            while not task.done():
                if bot.state.table_id:
                    self.current[k] = bot.state.table_id
                await asyncio.wait({task}, timeout=0.1)
                if time.monotonic() - started > GAME_TIMEOUT_S:
                    task.cancel()  # a game that stalls for good is reported, not waited for
                    await asyncio.gather(task, return_exceptions=True)
                    with contextlib.suppress(Exception):
                        await bot.client.close()
                    self.run.errors.append(f"slot {k} game {game}: {bot.state.table_id} stalled for good")
                    break
            self.current.pop(k, None)
            if task.cancelled():
                continue
            exc = task.exception()
            if exc is not None and not bot.state.table_id and "UNAVAILABLE" in str(exc):
                self.unavailable_before_seated += 1  # a real client asks again: so does the next game
            elif exc is not None:
                self.run.errors.append(f"slot {k} game {game}: {type(task.exception()).__name__}: {task.exception()}")

    def running(self) -> list[str]:
        """The games under way (two slots may sit at one table: matchmaking seats them together)."""
        return sorted({t for t in self.current.values() if t not in self.run.records})


async def _pick(cluster: NatsCluster, kind: str, rng: random.Random) -> int:
    log_leader = await cluster.leader(subjects.TABLE_LOG_STREAM)
    if kind == "partition-table-host":
        return TABLE_HOST
    if kind in ("kill-table-log-leader", "stop-leader", "partition-node"):
        return log_leader
    kv_leader = await cluster.leader(LEASES_STREAM)
    if kind == "kill-kv-leader":
        return kv_leader
    followers = [i for i in range(len(cluster.nodes)) if i not in (log_leader, kv_leader)]
    return rng.choice(followers or [i for i in range(len(cluster.nodes)) if i != log_leader])


async def _measure(fault: Fault, run: Run, timeout_s: float = 30.0) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline and len(fault.resume) < len(fault.running):
        for t in fault.running:
            if t in fault.resume:
                continue
            after = [a.accepted for a in run.accepted if a.table_id == t and a.sent >= fault.at]
            if after:
                fault.resume[t] = min(after) - fault.at
            elif t in run.records:
                fault.resume[t] = 0.0  # it ended meanwhile (its last action was before the fault)
        await asyncio.sleep(0.05)


def percentile(values: list[float], p: float) -> float:
    if not values:
        return 0.0
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(p / 100 * (len(ordered) - 1)))]


async def run_faults(
    workdir: Path,
    *,
    faults: int = 20,
    slots: int = 6,
    seed: int = 19,
    stop_s: float = 4.0,
    cut_s: float = 8.0,
    netns: bool = False,
    say: Any = print,
) -> dict[str, Any]:
    rng = random.Random(seed)
    hosts = Hosts(4, seed).open() if netns else None
    kinds = KINDS + PARTITIONS if hosts is not None else KINDS
    cluster = NatsCluster(workdir / "state", tables=2 if hosts else 3, gateways=2, env=ENV)
    if hosts is not None:
        cluster.place_in(hosts)
    t0 = time.monotonic()
    try:
        await cluster.start()
        if hosts is not None:
            cluster.start_table_host(TABLE_HOST)
        cluster.hold("scoring")  # the logs are read before scoring lets the table purge them
        run = Run()
        games = Slots(cluster, run, slots, seed)
        tasks = [asyncio.ensure_future(games.slot(k)) for k in range(slots)]
        done: list[Fault] = []
        await asyncio.sleep(3.0)
        for k in range(faults):
            kind = kinds[k % len(kinds)]
            for stream in (subjects.TABLE_LOG_STREAM, LEASES_STREAM):
                await cluster.current(stream)
            await asyncio.sleep(rng.uniform(0.5, 2.0))
            node = await _pick(cluster, kind, rng)
            target = cluster.extra[0] if kind == "partition-table-host" else cluster.nodes[node]
            pid = target.proc.pid if target.proc else 0
            fault = Fault(kind, node, time.monotonic(), games.running())
            if kind in PARTITIONS:
                assert hosts is not None
                hosts.cut(node)
                fault.at = time.monotonic()
                await asyncio.sleep(cut_s)
                hosts.heal(node)
            elif kind == "stop-leader":
                cluster.send(node, signal.SIGSTOP)
                fault.at = time.monotonic()
                await asyncio.sleep(stop_s)
                cluster.send(node, signal.SIGCONT)
            else:
                cluster.kill(node)
                fault.at = time.monotonic()
                await asyncio.sleep(2.0)
                cluster.restart(node)
            await _measure(fault, run)
            done.append(fault)
            worst = max(fault.resume.values(), default=0.0)
            stuck = [t for t in fault.running if t not in fault.resume]
            if stuck:
                say(f"  not resumed within 30 s: {stuck}")
            say(
                f"fault {k + 1}/{faults}: {kind} node {node + 1} (pid {pid}) at {fault.at - t0:.1f}s, "
                f"{len(fault.running)} games running, resumed {len(fault.resume)}, max {worst:.2f}s"
            )
        games.stop.set()
        await asyncio.wait_for(asyncio.gather(*tasks), 600)
        verdict = await check_games(cluster, run)
        cluster.hold("scoring", signal.SIGCONT)
        standings = await standings_match(cluster.gateways[0], run)
        resumes = [r for f in done for r in f.resume.values()]
        per_kind = {
            kind: round(max((r for f in done if f.kind == kind for r in f.resume.values()), default=0.0), 2)
            for kind in kinds
        }
        return {
            "faults": len(done),
            "faults_by_kind": {kind: sum(f.kind == kind for f in done) for kind in kinds},
            "accepted": verdict.accepted,
            "lost": verdict.lost,
            "applied_twice": verdict.applied_twice,
            "games": verdict.games,
            "games_finished": verdict.games_finished,
            "games_ok": verdict.games_ok,
            "standings_equal_replay": standings,
            "two_writers": verdict.two_writers,
            "resume_p95_s": round(percentile(resumes, 95), 2),
            "resume_max_s": round(max(resumes, default=0.0), 2),
            "resume_max_s_by_kind": per_kind,
            "sign_ins_retried_unavailable": run.retried_sign_ins,
            "find_match_unavailable": games.unavailable_before_seated,
            "games_not_resumed": sum(len(f.running) - len(f.resume) for f in done),
            "problems": verdict.problems[:5],
            "seconds": round(time.monotonic() - t0, 1),
        }
    finally:
        await cluster.stop()
        if hosts is not None:
            hosts.close()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--faults", type=int, default=20)
    parser.add_argument("--slots", type=int, default=6, help="games played at once")
    parser.add_argument("--seed", type=int, default=19)
    parser.add_argument(
        "--netns",
        action=argparse.BooleanOptionalAction,
        default=Hosts.available(),
        help="each NATS node and one table replica on its own network namespace, and partitions (default: if root)",
    )
    parser.add_argument("--keep", type=Path, default=None, help="keep the state (logs) in this folder")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="trix-fault-nats-") as tmp:
        workdir = args.keep or Path(tmp)
        result = asyncio.run(
            run_faults(
                workdir,
                faults=args.faults,
                slots=args.slots,
                seed=args.seed,
                netns=args.netns,
                say=lambda m: print(m, flush=True),
            )
        )
    ok = (
        result["lost"] == 0
        and result["applied_twice"] == 0
        and result["two_writers"] == 0
        and result["games"] == result["games_finished"] == result["games_ok"] == result["standings_equal_replay"]
        and result["games_not_resumed"] == 0
    )
    result["invariants_hold"] = ok
    result["resume_within_5s"] = result["resume_max_s"] <= RESUME_BOUND_S
    print(json.dumps(result), flush=True)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
