"""`make fault-nats` (issue 19): bot games of all four variants through two gateways, three
table replicas, on the 3-node JetStream cluster of `trix up --nats-cluster 3`; meanwhile,
again and again, one NATS fault: SIGKILL of the node leading TABLE_LOG, of the node leading
the table leases bucket (KV_table_leases), of a follower (leading neither), or SIGSTOP of
the TABLE_LOG leader (a slow node, not a dead one) and SIGCONT a few seconds later. A killed
node is started again on its store and the next fault waits until every replica is current.

Besides the free games (one client, three table bots), groups of four clients play paid
tables (each granted coins by scoring's admin API, a stake held at matchmaking, the pot
settled by scoring). Scoring runs throughout; the tables keep finished logs
(TRIX_TABLE_PURGE_FINISHED=false) for the checks.

Checked after the run, from the logs and the records (cluster_support.check_games): every
action a client saw accepted is in its table's log exactly once, no table had two writers
(the writer epochs along each log), every game finished and passes `trix replay` and
`trix verify`, scoring's standings equal the replayed totals, coins are conserved (scoring's
wallet totals: balances + held stakes + pots + house = every coin granted = what this run
granted, every paid table settled, no stake left held); and per fault, the resume time: from the fault to the
first acceptance, on each game running then, of an action sent after it (p95 and max over
every fault and game), next to the time NATS itself was unavailable (from the fault until
every stream of the move path answered through a node not faulted: its election) and the
platform's own delay on top (resume minus that, per game and fault).

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

import grpc
import nats
from cluster_support import (
    NatsCluster,
    Run,
    WatchedBot,
    check_games,
    diagnose,
    journal_of,
    results_of,
    standings_mismatches,
)
from nats.aio.client import Client
from netns import Hosts

from trix.natsio import names, permissions
from trix.v1 import common_pb2, gateway_pb2, matchmaking_pb2, scoring_pb2, scoring_pb2_grpc

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
ADMIN_TOKEN = "fault-nats-scoring-admin"
ENV = {
    "TRIX_MATCHMAKING_BOT_FILL_S": "0",
    "TRIX_GATEWAY_RATE_PER_S": "400",
    "TRIX_GATEWAY_RATE_BURST": "400",
    "TRIX_TABLE_PURGE_FINISHED": "false",
    "TRIX_SCORING_ADMIN_TOKEN": ADMIN_TOKEN,
}
ADMIN_MD = (("x-trix-admin-token", ADMIN_TOKEN),)
STAKE = 10
GRANT = 100
"""Coins granted to each paid client before it queues (a stake of STAKE held at matchmaking)."""
MOVE_PATH = (
    names.TABLE_LOG_STREAM,
    "TABLE_RESULTS",
    names.TABLE_SNAPSHOTS_STREAM,
    LEASES_STREAM,
    "KV_table_replicas",
)
"""The streams an action goes through (log, results, snapshots, the owner's leases): NATS is
available again for play when each answers through a node not faulted."""
RESUME_BOUND_S = 5.0
STALL_S = 90.0
"""A game none of whose clients got anything for this long (a fault's election is seconds; the
gateway's quiet recheck 30 s) has stopped: it is cut and counts as not finished. (A fixed time
for the whole game cut live ones: a paid Complex game of four clients runs 4-5 minutes on the
loaded box, where a free game of one client and three table bots takes under one.)"""
GAME_TIMEOUT_S = 900.0
"""A game still going after this long is cut too, and counts as not finished."""


def stalled(bots: list[WatchedBot], started: float) -> str:
    """Why a game is to be cut ("" while it goes on)."""
    now = time.monotonic()
    if now - started > GAME_TIMEOUT_S:
        return f"not over after {GAME_TIMEOUT_S:.0f}s"
    if now - max([started, *(b.heard for b in bots)]) > STALL_S:
        return f"stalled: its clients got nothing for {STALL_S:.0f}s"
    return ""


@dataclass
class Fault:
    kind: str
    node: int
    at: float
    running: list[str]
    resume: dict[str, float] = field(default_factory=dict)
    nats_s: float | None = None
    """From the fault until every MOVE_PATH stream answered (None: not within the probe's time)."""
    by_stream: dict[str, float | None] = field(default_factory=dict)


class PaidBot(WatchedBot):
    """A client at a paid table: granted GRANT coins by scoring's admin API, then queued with a
    stake (bots never sit at paid tables, docs/rules.md §13: four clients fill one)."""

    def __init__(self, *args: Any, scoring: scoring_pb2_grpc.ScoringServiceStub, grants: list[int], **kw: Any):
        super().__init__(*args, **kw)
        self.scoring = scoring
        self.grants = grants

    async def run(self, run_id: str) -> Any:
        await self.client.sign_in(f"fault-paid-{run_id}-{self.index:02d}", f"payer{self.index}")
        grant = scoring_pb2.GrantRequest(
            player_id=self.client.player_id, amount=GRANT, grant_id=f"g-{run_id}-{self.index}"
        )
        for attempt in range(120):  # scoring's buckets may be electing a leader
            try:
                await self.scoring.Grant(grant, metadata=ADMIN_MD, timeout=10)
                break
            except grpc.aio.AioRpcError as err:
                if err.code() != grpc.StatusCode.UNAVAILABLE or attempt == 119:
                    raise
                await asyncio.sleep(0.5)
        self.grants.append(GRANT)
        stream = self.client.open()
        wish = matchmaking_pb2.GameWish(variant=self.variant)  # type: ignore[arg-type]
        wish.stake.coins = STAKE
        self.client.send(gateway_pb2.SessionRequest(find_match=gateway_pb2.FindMatchRequest(wish=wish)))
        nudge = asyncio.ensure_future(self._nudge())
        try:
            await self._loop(stream)
        finally:
            nudge.cancel()
        await self.client.close()
        return self.state


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
        self.paid_tables: set[str] = set()
        self.grants: list[int] = []
        self.scoring: scoring_pb2_grpc.ScoringServiceStub | None = None

    async def paid_group(self, g: int) -> None:
        """Four clients queue for one paid table, play it, and again (variants in turn)."""
        scoring = self.scoring
        assert scoring is not None
        gateways = self.cluster.gateways
        game = 0
        while not self.stop.is_set():
            variant = VARIANTS[(g + game) % len(VARIANTS)]
            game += 1
            run_id = f"p{self.seed}-{g}-{game}"
            bots = [
                PaidBot(
                    gateways[i % len(gateways)],
                    i,
                    self.seed * 100 + game,
                    variant,
                    self.run,
                    scoring=scoring,
                    grants=self.grants,
                )
                for i in range(4)
            ]
            keys = [1000 + g * 4 + i for i in range(4)]
            tasks = [asyncio.ensure_future(b.run(run_id)) for b in bots]
            started = time.monotonic()
            while not all(t.done() for t in tasks):
                for key, bot in zip(keys, bots, strict=True):
                    if bot.state.table_id:
                        self.current[key] = bot.state.table_id
                        self.paid_tables.add(bot.state.table_id)
                await asyncio.wait(set(tasks), timeout=0.1)
                why = stalled(list(bots), started)
                if why:
                    for t in tasks:
                        t.cancel()
                    await asyncio.gather(*tasks, return_exceptions=True)
                    tables = sorted({b.state.table_id for b in bots})
                    self.run.errors.append(f"paid group {g} game {game}: {tables} {why}")
                    break
            for key in keys:
                self.current.pop(key, None)
            for bot, t in zip(bots, tasks, strict=True):
                if not t.cancelled() and t.exception() is not None:
                    self.run.errors.append(
                        f"paid group {g} game {game}: {type(t.exception()).__name__}: {t.exception()}"
                    )
                with contextlib.suppress(Exception):
                    await bot.client.close()

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
                why = stalled([bot], started)
                if why:
                    task.cancel()  # a game that stalls for good is reported, not waited for
                    await asyncio.gather(task, return_exceptions=True)
                    with contextlib.suppress(Exception):
                        await bot.client.close()
                    self.run.errors.append(f"slot {k} game {game}: {bot.state.table_id} {why}")
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
    log_leader = await cluster.leader(names.TABLE_LOG_STREAM)
    if kind == "partition-table-host":
        return TABLE_HOST
    if kind in ("kill-table-log-leader", "stop-leader", "partition-node"):
        return log_leader
    kv_leader = await cluster.leader(LEASES_STREAM)
    if kind == "kill-kv-leader":
        return kv_leader
    followers = [i for i in range(len(cluster.nodes)) if i not in (log_leader, kv_leader)]
    return rng.choice(followers or [i for i in range(len(cluster.nodes)) if i != log_leader])


class Probes:
    """One provisioner connection per NATS node (that node only), asking JetStream for the
    MOVE_PATH streams: how long NATS itself is unavailable after a fault."""

    def __init__(self, cluster: NatsCluster) -> None:
        self.cluster = cluster
        self.conns: list[Client | None] = []

    async def open(self) -> None:
        sup = self.cluster.sup
        for node in sup.nats_nodes:
            url = permissions.user_url(
                f"nats://{node.host}:{node.client_port}",
                permissions.PROVISIONER,
                sup.passwords[permissions.PROVISIONER],
            )
            self.conns.append(
                await nats.connect(
                    servers=[url],
                    inbox_prefix=permissions.inbox_prefix(permissions.PROVISIONER).encode(),
                    max_reconnect_attempts=-1,
                    reconnect_time_wait=0.2,
                    ping_interval=1,
                    max_outstanding_pings=3,
                    error_cb=_quiet,
                )
            )

    async def close(self) -> None:
        for conn in self.conns:
            if conn is not None:
                with contextlib.suppress(Exception):
                    await asyncio.wait_for(conn.close(), 5)

    async def _answers(self, stream: str, avoid: int | None, lasts_until: float) -> bool:
        async def one(i: int, conn: Client) -> bool:
            try:
                info = await conn.jetstream(timeout=0.5).stream_info(stream)
            except Exception:  # noqa: BLE001 - no leader (yet), or that node is away
                return False
            leader = info.cluster.leader if info.cluster is not None else None
            if not leader:
                return False
            # A follower answers for a leader it cannot reach (nats-server, after a delay): an
            # answer naming the faulted node while the fault lasts is not NATS back (issue 42:
            # a stopped leader's streams "answered" after 0.5 s, then nothing did until SIGCONT).
            return avoid is None or time.monotonic() >= lasts_until or self.cluster.index_of(leader) != avoid

        asks = [one(i, c) for i, c in enumerate(self.conns) if c is not None and i != avoid]
        return any(await asyncio.gather(*asks))

    async def until_available(
        self, fault: Fault, avoid: int | None, lasts_s: float, resumed: asyncio.Event, timeout_s: float = 30.0
    ) -> None:
        """Sets `fault.nats_s`: every MOVE_PATH stream answered through a node other than the
        faulted one (a stream's info comes from its leader: one is elected, or it came back),
        and, until the games running resumed (`resumed`), did not stop answering again (a node
        healed from a partition may force a new election seconds later, issue 42: then NATS
        is back when that election ended)."""
        deadline = fault.at + timeout_s

        async def back(stream: str) -> float | None:
            since: float | None = None
            while time.monotonic() < deadline:
                if await self._answers(stream, avoid, fault.at + lasts_s):
                    since = time.monotonic() - fault.at if since is None else since
                    if resumed.is_set():
                        return since
                else:
                    since = None
                await asyncio.sleep(0.1 if since is None else 0.25)
            return since

        times = await asyncio.gather(*(back(stream) for stream in MOVE_PATH))
        fault.by_stream = dict(zip(MOVE_PATH, times, strict=True))
        if all(t is not None for t in times):
            fault.nats_s = max(t for t in times if t is not None)


async def _quiet(_exc: Exception) -> None:
    return None


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


async def wallet_check(
    scoring: scoring_pb2_grpc.ScoringServiceStub, granted: int, paid_finished: int, timeout_s: float = 120.0
) -> dict[str, Any]:
    """docs/rules.md §13 over the whole run, once scoring settled every finished paid table:
    balances + held stakes + pots + house = every coin granted = what this run granted."""
    deadline = time.monotonic() + timeout_s
    totals = scoring_pb2.GetWalletTotalsResponse()
    while time.monotonic() < deadline:
        with contextlib.suppress(grpc.aio.AioRpcError):
            totals = await scoring.GetWalletTotals(scoring_pb2.GetWalletTotalsRequest(), metadata=ADMIN_MD, timeout=10)
            if totals.settlements >= paid_finished and totals.running_tables == 0 and totals.held == 0:
                break
        await asyncio.sleep(0.5)
    t = totals
    return {
        "coins_granted": granted,
        "coins_conserved": t.available + t.held + t.pots + t.house == t.granted == granted,
        "coins": {"granted": t.granted, "available": t.available, "held": t.held, "pots": t.pots, "house": t.house},
        "paid_tables_settled": t.settlements,
        "paid_tables_running": t.running_tables,
        "stakes_left_held": t.held,
    }


async def run_faults(
    workdir: Path,
    *,
    faults: int = 20,
    slots: int = 6,
    paid_groups: int = 1,
    seed: int = 19,
    stop_s: float = 4.0,
    cut_s: float = 8.0,
    netns: bool = False,
    kinds: tuple[str, ...] | None = None,
    say: Any = print,
) -> dict[str, Any]:
    rng = random.Random(seed)
    hosts = Hosts(4, seed).open() if netns else None
    if kinds is None:
        kinds = KINDS + PARTITIONS if hosts is not None else KINDS
    cluster = NatsCluster(workdir / "state", tables=2 if hosts else 3, gateways=2, env=ENV)
    if hosts is not None:
        cluster.place_in(hosts)
    probes = Probes(cluster)
    channel: grpc.aio.Channel | None = None
    t0 = time.monotonic()
    try:
        await cluster.start()
        await probes.open()
        if hosts is not None:
            cluster.start_table_host(TABLE_HOST)
        scoring_port = next(c.grpc_port for c in cluster.sup.services if c.name.startswith("scoring"))
        channel = grpc.aio.insecure_channel(f"127.0.0.1:{scoring_port}")
        run = Run()
        games = Slots(cluster, run, slots, seed)
        games.scoring = scoring_pb2_grpc.ScoringServiceStub(channel)
        tasks = [asyncio.ensure_future(games.slot(k)) for k in range(slots)]
        tasks += [asyncio.ensure_future(games.paid_group(g)) for g in range(paid_groups)]
        done: list[Fault] = []
        await asyncio.sleep(3.0)
        for k in range(faults):
            kind = kinds[k % len(kinds)]
            for stream in (names.TABLE_LOG_STREAM, LEASES_STREAM):
                await cluster.current(stream)
            await asyncio.sleep(rng.uniform(0.5, 2.0))
            node = await _pick(cluster, kind, rng)
            target = cluster.extra[0] if kind == "partition-table-host" else cluster.nodes[node]
            pid = target.proc.pid if target.proc else 0
            fault = Fault(kind, node, time.monotonic(), games.running())
            wall = time.time()
            avoid = None if kind == "partition-table-host" else node
            resumed = asyncio.Event()
            if kind in PARTITIONS:
                assert hosts is not None
                hosts.cut(node)
                fault.at = time.monotonic()
                probe = asyncio.ensure_future(probes.until_available(fault, avoid, cut_s, resumed))
                await asyncio.sleep(cut_s)
                hosts.heal(node)
            elif kind == "stop-leader":
                cluster.send(node, signal.SIGSTOP)
                fault.at = time.monotonic()
                probe = asyncio.ensure_future(probes.until_available(fault, avoid, stop_s, resumed))
                await asyncio.sleep(stop_s)
                cluster.send(node, signal.SIGCONT)
            else:
                cluster.kill(node)
                fault.at = time.monotonic()
                probe = asyncio.ensure_future(probes.until_available(fault, avoid, 2.0, resumed))
                await asyncio.sleep(2.0)
                cluster.restart(node)
            await _measure(fault, run)
            resumed.set()
            await probe
            done.append(fault)
            worst = max(fault.resume.values(), default=0.0)
            slow_games: list[str] = []
            for t, r in sorted(fault.resume.items()):
                if r > RESUME_BOUND_S:  # what its client was told meanwhile
                    seen = [
                        f"+{w - fault.at:.1f}s {code}: {msg[:60]}"
                        for w, table, code, msg in run.client_errors
                        if table == t and fault.at <= w <= fault.at + r
                    ]
                    slow_games.append(f"  {t} resumed after {r:.1f}s; its client was told: {seen[:6]}")
            stuck = [t for t in fault.running if t not in fault.resume]
            if stuck:
                say(f"  not resumed within 30 s: {stuck}")
            slow = {k: None if v is None else round(v, 1) for k, v in fault.by_stream.items() if v is None or v > 0.5}
            back = fault.nats_s
            say(
                f"fault {k + 1}/{faults}: {kind} node {node + 1} (pid {pid}) at {fault.at - t0:.1f}s "
                f"({time.strftime('%H:%M:%S', time.gmtime(wall))}.{int(wall % 1 * 1000):03d} UTC, as in the logs), "
                f"{len(fault.running)} games running, resumed {len(fault.resume)}, max {worst:.2f}s; "
                f"NATS back after {None if back is None else round(back, 2)}s {slow}"
            )
            for line in slow_games:
                say(line)
        games.stop.set()
        # Each game loop ends its game within GAME_TIMEOUT_S; asyncio.wait, not wait_for: on
        # 3.11 wait_for waits for ever for a task that swallowed its cancellation.
        _, hung = await asyncio.wait(tasks, timeout=GAME_TIMEOUT_S + 60)
        for task in hung:
            task.cancel()
            run.errors.append("a game loop did not end")
        verdict = await check_games(cluster, run)
        for problem in verdict.problems:
            say(f"problem: {problem}")
        for table_id in sorted(run.tables - set(run.records)):
            for line in await diagnose(cluster, run, table_id):
                say(line)
        # A fresh token: the first client's expired long ago in a long run (900 s, ADR 0018).
        auditor = WatchedBot(cluster.gateways[0], 99, seed, VARIANTS[0], Run())
        await auditor.client.sign_in(f"fault-auditor-{seed}-{time.monotonic_ns()}", "auditor")
        run.token = auditor.client.token
        await auditor.client.close()
        mismatches = await standings_mismatches(cluster.gateways[0], run)
        standings = len(run.records) - len(mismatches)
        for mismatch in mismatches:
            say(f"standings differ from the replay: {mismatch}")
            try:  # a diagnosis never fails the run
                say("\n".join(await results_of(cluster.nc.jetstream(timeout=10.0), mismatch["table_id"])))
                say("\n".join(await journal_of(cluster, mismatch["table_id"])))
            except Exception as exc:  # noqa: BLE001
                say(f"  not read: {exc!r}")
        paid_finished = sum(1 for t in games.paid_tables if t in run.records)
        wallet = await wallet_check(games.scoring, sum(games.grants), paid_finished)
        resumes = [r for f in done for r in f.resume.values()]
        nats_down = [f.nats_s for f in done if f.nats_s is not None]
        extra = [max(0.0, r - f.nats_s) for f in done if f.nats_s is not None for r in f.resume.values()]
        per_kind = {
            kind: round(max((r for f in done if f.kind == kind for r in f.resume.values()), default=0.0), 2)
            for kind in kinds
        }

        def spread(values: list[float]) -> list[float]:
            return [
                round(percentile(values, 50), 2),
                round(percentile(values, 95), 2),
                round(max(values, default=0.0), 2),
            ]

        slowest = {  # per fault, its slowest game's resume: p50 / p95 / max by kind
            kind: spread([max(f.resume.values(), default=0.0) for f in done if f.kind == kind]) for kind in kinds
        }
        nats_spread = {
            kind: spread([f.nats_s for f in done if f.kind == kind and f.nats_s is not None]) for kind in kinds
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
            "standings_mismatches": mismatches,
            "paid_games": len(games.paid_tables),
            "paid_games_finished": paid_finished,
            **wallet,
            "two_writers": verdict.two_writers,
            "resume_p95_s": round(percentile(resumes, 95), 2),
            "resume_max_s": round(max(resumes, default=0.0), 2),
            "resume_max_s_by_kind": per_kind,
            "nats_unavailable_p95_s": round(percentile(nats_down, 95), 2),
            "nats_unavailable_max_s": round(max(nats_down, default=0.0), 2),
            "nats_unavailable_max_s_by_kind": {
                kind: round(max((f.nats_s or 0.0 for f in done if f.kind == kind), default=0.0), 2) for kind in kinds
            },
            "slowest_resume_p50_p95_max_s_by_kind": slowest,
            "nats_unavailable_p50_p95_max_s_by_kind": nats_spread,
            "platform_delay_p95_s": round(percentile(extra, 95), 2),
            "platform_delay_max_s": round(max(extra, default=0.0), 2),
            "sign_ins_retried_unavailable": run.retried_sign_ins,
            "find_match_unavailable": games.unavailable_before_seated,
            "games_not_resumed": sum(len(f.running) - len(f.resume) for f in done),
            "problems": verdict.problems[:5],
            "seconds": round(time.monotonic() - t0, 1),
        }
    finally:
        if channel is not None:
            await channel.close()
        await probes.close()
        await cluster.stop()
        if hosts is not None:
            hosts.close()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--faults", type=int, default=20)
    parser.add_argument("--slots", type=int, default=6, help="free games played at once (one client each)")
    parser.add_argument("--paid-groups", type=int, default=1, help="paid games played at once (four clients each)")
    parser.add_argument("--kinds", default="", help="comma-separated fault kinds (default: every kind, in turn)")
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
                paid_groups=args.paid_groups,
                seed=args.seed,
                kinds=tuple(k for k in args.kinds.split(",") if k) or None,
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
        and result["coins_conserved"]
        and result["paid_tables_settled"] >= result["paid_games_finished"]
        and result["paid_tables_running"] == 0
        and result["stakes_left_held"] == 0
    )
    result["invariants_hold"] = ok
    result["resume_within_5s"] = result["resume_max_s"] <= RESUME_BOUND_S
    print(json.dumps(result), flush=True)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
