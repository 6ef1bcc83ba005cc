"""`trix loadtest SCENARIO`: run the bot swarm against the platform, measure, verify.

Owns the command: start the embedded platform (`trix up` as a library, unless
`--server`), measure the bare gRPC echo baseline, start the worker processes
(`trix.loadtest.bots`), sample CPU and memory of every service process (psutil on the
pids the launcher started), collect the per-second figures, switch the bots to full
speed after the measured window so every table finishes, then check every game's
record with the code of `trix replay` and `trix verify` (records saved under the
results folder for the CLI) and that scoring's standings equal the replayed totals.
Writes summary.json, timeline.json and chart.png; prints the summary LAST as one JSON
line; exits 1 when a game is not verified or a given p99 / error budget is breached.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import multiprocessing as mp
import os
import queue
import shutil
import signal
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

from trix.loadtest.arguments import (
    PLAYERS_PER_WORKER,
    RAMP_TIMEOUT_PER_TABLE_S,
    add_loadtest_arguments,
    scenario_of,
    worker_targets,
)
from trix.loadtest.bots import new_run_id, worker_main
from trix.loadtest.chat import chat_summary
from trix.loadtest.echo import echo_baseline
from trix.loadtest.floor import (
    CONNECTIONS_SEAT,
    CONNECTIONS_SHARED,
    floor_baseline,
    spawned_on_core_poller,
)
from trix.loadtest.report import Second, combined_floor, percentile, window_cpu, write_chart
from trix.loadtest.sampling import DRAIN_S, Sampler, host_cpu_ticks, last_ticks, steal_share
from trix.loadtest.scenarios import Scenario
from trix.loadtest.verification import verify_games
from trix.loadtest.worker import ERROR_SAMPLES, WorkerConfig

__all__ = ["add_loadtest_arguments", "run_loadtest"]
"""The command's two entry points (`trix.cli`); the arguments live in `trix.loadtest.arguments`."""


EXIT_OK = 0
EXIT_FAILED = 1
PROGRESS_EVERY_S = 5.0
LAB_RATE_PER_S = 1000
"""TRIX_GATEWAY_RATE_PER_S of the platform a load test starts itself (see `start_platform`)."""


def start_worker(ctx: Any, cfg: WorkerConfig, out: Any, fast: Any) -> Any:
    """One bot worker process, started: spawned on the gateway's gRPC core poller (ADR 0022
    addendum), so its thousand client connections cost the box it measures less."""
    p = ctx.Process(target=worker_main, args=(cfg, out, fast), daemon=True, name=f"loadtest-bots-{cfg.worker}")
    with spawned_on_core_poller(os.environ):
        p.start()
    return p


# -- the run ----------------------------------------------------------------------------------


class Run:
    def __init__(self, args: argparse.Namespace, scenario: Scenario) -> None:
        self.args = args
        self.sc = scenario
        self.ctx = mp.get_context("spawn")
        self.platform: Any = None
        self.temp_state: Path | None = None
        self.targets: tuple[str, ...] = tuple(args.server)
        """The gateways the bots connect to (round-robin by worker); the first one verifies."""
        self.ca_file: str | None = args.ca or None
        """The CA the bots verify the gateways' TLS with (`--ca`, or the embedded platform's with `--tls`)."""
        self.pids: dict[str, int] = {}
        self.seconds: dict[int, Second] = {}
        self.phase = "ramp"
        self.tables: set[str] = set()
        self.games: dict[str, dict[str, Any]] = {}
        self.errors: Counter[str] = Counter()
        self.error_samples: list[str] = []
        self.accepted: dict[str, list[str]] = {}
        """Action ids accepted, by table (`--keep-accepted`)."""
        self.window_errors: Counter[str] = Counter()
        self.retried: Counter[str] = Counter()
        self.window_lat: list[float] = []
        self.window_lag: list[float] = []
        self.window_actions = 0
        self.all_actions = 0
        self.chat: dict[str, Any] = {"sent": 0, "delivered": 0, "refused": Counter()}
        self.window_chat = 0
        """Chat lines sent in the measured window (`--chat-every`, `trix.loadtest.chat`)."""
        self.view_lat: list[float] = []
        self.connected: dict[int, int] = {}
        self.matched: dict[int, int] = {}
        self.reconnects = 0
        self.events: list[str] = []
        self.load_at_window: list[float] = []
        self.seated_at_window = 0
        self.players_expected = 0
        self.cpu_at_window_start: list[int] = []
        """/proc/stat's cpu line when the window started."""
        self.steal_window: float | None = None
        """The host's share of the CPU over the window (`steal_share`), once it is over."""
        stamp = time.strftime("%Y%m%d-%H%M%S")
        self.out = args.out or Path("loadtest/results") / f"{scenario.name}-{args.tables}-{stamp}"

    def say(self, text: str) -> None:
        print(f"loadtest: {text}", flush=True)

    # -- platform

    @property
    def target(self) -> str:
        return self.targets[0]

    def start_platform(self) -> None:
        if self.targets:
            return
        from trix.embedded import EmbeddedPlatform, temp_state_dir

        state_dir = self.args.state_dir or temp_state_dir("trix-loadtest-")
        self.temp_state = None if self.args.state_dir else state_dir
        env = {
            "TRIX_MATCHMAKING_BOT_FILL_S": str(self.args.bot_fill),
            # A bot at full speed (the finish, `peak`) answers a table moving at ~180 actions/s:
            # a view and an action per own turn is far above the 20 messages/s a phone is
            # allowed, so the lab platform lifts the per-connection limit (the limiter itself
            # is proven by the gateway tests; bots still back off on RESOURCE_EXHAUSTED).
            "TRIX_GATEWAY_RATE_PER_S": str(LAB_RATE_PER_S),
            "TRIX_GATEWAY_RATE_BURST": str(2 * LAB_RATE_PER_S),
        }
        self.platform = EmbeddedPlatform(
            state_dir,
            fresh=True,
            env=env,
            replicas={"table": self.sc.table_replicas, "gateway": self.args.gateways},
            nats_sync_always=not self.args.diagnose_nats_no_fsync,
            tls=self.args.tls,
        )
        if self.args.diagnose_nats_no_fsync:
            self.events.append("diagnosis: NATS without sync_interval: always")
        self.say(
            f"starting the platform in {state_dir} (table replicas: {self.sc.table_replicas}, "
            f"gateways: {self.args.gateways})"
        )
        first = self.platform.start()
        self.ca_file = self.platform.ca_file
        sup = self.platform.supervisor
        gateways = [f"127.0.0.1:{c.grpc_port}" for c in sup.services if c.name.startswith("gateway")]
        self.targets = (first, *(g for g in gateways if g != first))
        for child in [sup.nats, *sup.services, getattr(sup, "edge_child", None)]:
            if child is not None and child.proc is not None:
                self.pids[child.name] = child.proc.pid
        self.say(f"platform ready, gateways at {','.join(self.targets)}; processes {self.pids}")

    def stop_platform(self) -> None:
        if self.platform is not None:
            self.platform.stop()
        if self.temp_state is not None:
            # the services' logs go with the results; the NATS data of a temp state goes away
            with contextlib.suppress(OSError):
                if (self.temp_state / "logs").is_dir():
                    shutil.copytree(self.temp_state / "logs", self.out / "logs", dirs_exist_ok=True)
            shutil.rmtree(self.temp_state, ignore_errors=True)
            self.temp_state = None

    def kill_table_replica(self) -> None:
        if self.platform is None:
            self.events.append("failover: no embedded platform, nothing killed")
            return
        tables = [c for c in self.platform.supervisor.services if c.name.startswith("table")]
        # the busiest replica (CPU over the last second) owns tables being played: kill that one
        latest = self.sampler.latest if self.sampler is not None else {}
        tables.sort(key=lambda c: latest.get(c.name, {}).get("cpu", 0.0))
        victim = tables[-1] if len(tables) > 1 else None
        if victim is None or victim.proc is None:
            self.events.append("failover: a single table replica; not killed")
            return
        os.kill(victim.proc.pid, signal.SIGKILL)
        note = f"failover: SIGKILL {victim.name} pid {victim.proc.pid} at t={time.time() - self.t0:.1f}s"
        self.events.append(note)
        self.say(note)

    # -- collecting

    def on_tick(self, data: dict[str, Any]) -> None:
        at = int(data["at"])
        sec = self.seconds.get(at)
        if sec is None:
            sec = self.seconds[at] = Second(at=float(at), phase=self.phase)
        sec.actions += data["actions"]
        sec.latencies += data["latencies_ms"]
        sec.errors.update(data["errors"])
        sec.lag_ms += data.get("lag_ms", [])
        self.errors.update(data["errors"])
        for sample in data.get("error_samples", []):
            if len(self.error_samples) < ERROR_SAMPLES:
                self.error_samples.append(sample)
        self.retried.update(data["retried"])
        for table_id, action_id in data.get("accepted", ()):
            self.accepted.setdefault(table_id, []).append(action_id)
        self.view_lat += data["view_ms"]
        self.all_actions += data["actions"]
        chat = data.get("chat", {})
        self.chat["sent"] += chat.get("sent", 0)
        self.chat["delivered"] += chat.get("delivered", 0)
        self.chat["refused"].update(chat.get("refused", {}))
        self.reconnects += data["reconnects"]
        self.connected[data["worker"]] = data["connected"]
        self.matched[data["worker"]] = data["matched"]
        self.tables.update(data["new_tables"])
        for g in data["games"]:
            self.games.setdefault(g["table_id"], g)
        if self.phase == "window":
            self.window_lat += data["latencies_ms"]
            self.window_lag += data.get("lag_ms", [])
            self.window_actions += data["actions"]
            self.window_errors.update(data["errors"])
            self.window_chat += chat.get("sent", 0)
        sec.connected = sum(self.connected.values())
        sec.tables_playing = len(self.tables) - len(self.games)
        sec.games_finished = len(self.games)
        sec.processes = self.sampler.latest if self.sampler else {}

    # -- main

    def run(self) -> int:
        args = self.args
        self.t0 = time.time()
        self.sampler: Sampler | None = None
        echo: dict[str, float] = {"echo_baseline_per_s": 0.0}
        try:
            self.start_platform()
            if args.echo_seconds > 0:
                self.say(f"echo baseline: {args.echo_seconds:.0f}s of bare grpc.aio stream round trips")
                echo = echo_baseline(self.ctx, args.echo_seconds, args.workers or 2, streams=128)
                self.say(f"echo baseline: {echo}")
            floors = self.floor_enabled()
            before = self.floor("before the swarm") if floors else None
            summary = self.swarm(echo)
            if floors:
                summary.update(combined_floor(before, self.floor("after the swarm"), args.tables))
                summary["floor_chain"] = args.floor_chain
                summary["floor_connections"] = self.floor_connections()
        finally:
            if self.sampler is not None:
                self.sampler.stop.set()
            self.stop_platform()
        return self.finish(summary)

    def floor_enabled(self) -> bool:
        """Whether this run measures the floor baseline (not for a scenario whose players do not act)."""
        return self.args.floor_seconds > 0 and self.sc.think_max_s < 60

    def floor_connections(self) -> str:
        """The floor's client connects as the bots do (ADR 0024): a connection per stream, as every
        player's own, unless the bots share theirs (`--shared-connections`)."""
        return CONNECTIONS_SHARED if self.args.shared_connections else CONNECTIONS_SEAT

    def floor(self, when: str) -> dict[str, Any] | None:
        """One floor baseline (ADR 0024) on an otherwise quiet box; None if it failed, which must
        not stop the measured run."""
        from trix.processes import free_port, nats_server_binary

        args = self.args
        self.say(f"floor baseline {when}: {args.floor_seconds:.0f}s, {args.tables} tables at the scenario's pace")
        think = (self.sc.think_min_s, self.sc.think_max_s)
        try:
            floor = floor_baseline(
                self.ctx,
                nats_server_binary(),
                free_port,
                args.tables,
                think,
                args.floor_seconds,
                args.floor_chain,
                self.floor_connections(),
            )
        except Exception as exc:  # noqa: BLE001 - a failed baseline must not stop the measured run
            self.say(f"floor baseline {when} failed: {type(exc).__name__}: {exc}")
            return None
        self.say(f"floor baseline {when}: {floor}")
        return floor

    def swarm(self, echo: dict[str, float]) -> dict[str, Any]:
        args, sc = self.args, self.sc
        players = 4 * args.tables
        guests = int(sc.queue_churn * args.tables)
        ramp = args.ramp or max(2.0, args.tables / 50.0)
        ramp_timeout = args.ramp_timeout or max(60.0, args.tables * RAMP_TIMEOUT_PER_TABLE_S)
        run_id = new_run_id()
        workers = max(args.workers or max(2, -(-players // PLAYERS_PER_WORKER)), len(self.targets))
        targets = worker_targets(self.targets, workers)
        gate = args.ramp_concurrency
        stop_at = time.time() + ramp + ramp_timeout + args.settle + args.duration + args.finish_timeout + 30
        out, fast, chatting = self.ctx.Queue(), self.ctx.Event(), self.ctx.Event()
        procs = []
        for w in range(workers):
            cfg = WorkerConfig(
                worker=w,
                target=targets[w],
                run_id=run_id,
                players=players // workers + (1 if w < players % workers else 0),
                guests=guests // workers + (1 if w < guests % workers else 0),
                think_min_s=sc.think_min_s,
                think_max_s=sc.think_max_s,
                turn_timeout_s=sc.turn_timeout_s,
                disconnect_per_min=sc.disconnect_per_min,
                ramp_s=ramp,
                stop_at=stop_at,
                max_actions=args.max_actions,
                separate_connections=not args.shared_connections,
                seed=args.seed,
                ramp_concurrency=0 if gate <= 0 else max(1, gate // workers),
                ca_file=self.ca_file or "",
                keep_accepted=args.keep_accepted,
                chat_every_s=args.chat_every,
                chatting=chatting,
            )
            procs.append(start_worker(self.ctx, cfg, out, fast))
        self.sampler = Sampler(self.pids)
        for i, p in enumerate(procs):
            if p.pid is not None:
                self.sampler.add(f"bots-{i}", p.pid)
        self.sampler.start()
        self.say(
            f"{workers} bot processes, {players} players for {args.tables} tables, {guests} queue guests, "
            f"{len(self.targets)} gateway(s)"
        )
        done = 0
        started = time.time()
        window_start = window_end = finish_start = 0.0
        kill_at = float("inf")
        next_progress = started + PROGRESS_EVERY_S
        killed = False
        finish_deadline = float("inf")
        settle_end = float("inf")
        while done < len(procs):
            try:
                kind, data = out.get(timeout=0.5)
            except queue.Empty:
                kind, data = "", {}
            if kind == "tick":
                self.on_tick(data)
            elif kind == "done":
                done += 1
            now = time.time()
            if self.phase == "ramp":
                seated = sum(self.matched.values())
                if seated >= players or now - started > ramp + ramp_timeout:
                    self.phase = "settle"
                    settle_end = now + args.settle
                    self.say(f"settle: {seated}/{players} players seated; {args.settle:.0f}s unmeasured")
            if self.phase == "settle":
                if now >= settle_end:
                    self.phase = "window"
                    window_start = now
                    self.load_at_window = [round(x, 2) for x in os.getloadavg()]
                    if sc.kill_table_replica_at >= 0:
                        kill_at = now + sc.kill_table_replica_at * args.duration
                    seated = sum(self.matched.values())
                    self.seated_at_window, self.players_expected = seated, players
                    self.cpu_at_window_start = host_cpu_ticks()
                    chatting.set()  # the tables talk in the window only: the settle is the chat's baseline
                    self.say(f"window starts: {seated}/{players} players seated, {len(self.tables)} tables")
            elif self.phase == "window":
                if not killed and now >= kill_at:
                    killed = True
                    self.kill_table_replica()
                if now - window_start >= args.duration:
                    window_end = now
                    grown = zip(self.cpu_at_window_start, host_cpu_ticks(), strict=False)
                    self.steal_window = steal_share([b - a for a, b in grown])
                    self.phase = "finish"
                    finish_start = now
                    finish_deadline = now + args.finish_timeout
                    fast.set()
                    self.say(f"window over after {args.duration:.0f}s; bots finish every table at full speed")
                    if args.no_finish:
                        break
            elif self.phase == "finish":
                if self.tables and len(self.games) >= len(self.tables) and sum(self.connected.values()) == 0:
                    break
                if now > finish_deadline:
                    self.say(f"finish timeout: {len(self.games)}/{len(self.tables)} games ended")
                    break
            if now >= next_progress:
                next_progress = now + PROGRESS_EVERY_S
                last = self.seconds.get(int(now) - 1)
                lat = sorted(last.latencies) if last else []
                self.say(
                    f"t={now - started:5.0f}s {self.phase:<6} tables {len(self.tables) - len(self.games):>5} "
                    f"players {sum(self.connected.values()):>5} actions/s {last.actions if last else 0:>5} "
                    f"p50 {percentile(lat, 50):6.1f} p99 {percentile(lat, 99):7.1f} ms "
                    f"games {len(self.games)} errors {sum(self.errors.values())}"
                )
        finish_s = time.time() - finish_start if finish_start else 0.0
        for p in procs:
            p.join(3)
            if p.is_alive():
                p.kill()
        for data in last_ticks(out, DRAIN_S):
            self.on_tick(data)
        window_s = (window_end or time.time()) - (window_start or started)
        verified, failures = 0, list[str]()
        if not args.no_finish and self.tables:
            self.say(f"checking {len(self.tables)} records with trix replay / trix verify and scoring's standings")
            records = self.out / "records"
            verified, failures = asyncio.run(verify_games(self.target, self.tables, self.games, records, self.ca_file))
        lat = sorted(self.window_lat)
        lag = sorted(self.window_lag)
        rows = [s.row(started) for _, s in sorted(self.seconds.items())]
        window_rows = [r for r in rows if r["phase"] == "window"]
        actions_per_s = self.window_actions / window_s if window_s > 0 else 0.0
        pauses = self.sampler.pauses if self.sampler and window_start else []
        paused = [s for at, s in pauses if window_start <= at <= (window_end or time.time())]
        for seconds in paused:
            self.events.append(
                f"the whole box paused {seconds:.1f} s in the window (every process, this one too: the host's "
                "steal); the latencies and errors around it are the host's"
            )
        summary: dict[str, Any] = {
            "scenario": sc.name,
            "think_s": [sc.think_min_s, sc.think_max_s],
            "tables": len(self.tables),
            "tables_requested": args.tables,
            "tables_max_concurrent": max((r["tables"] for r in window_rows), default=0),
            "players": max((r["players"] for r in window_rows), default=0),
            "duration_s": round(window_s, 1),
            "actions_per_s": round(actions_per_s, 1),
            "p50_ms": round(percentile(lat, 50), 2),
            "p95_ms": round(percentile(lat, 95), 2),
            "p99_ms": round(percentile(lat, 99), 2),
            "max_ms": round(lat[-1], 2) if lat else 0.0,
            "view_p50_ms": round(percentile(sorted(self.view_lat), 50), 2),
            # Views answered per action, whole run: ~1 when every turn asked for one; now a bot acts
            # from its own TurnStarted and asks only when resuming (ADR 0003 decision 15).
            "views_per_action": round(len(self.view_lat) / self.all_actions, 3) if self.all_actions else 0.0,
            "bot_lag_p50_ms": round(percentile(lag, 50), 2),
            "bot_lag_p99_ms": round(percentile(lag, 99), 2),
            "errors": sum(self.errors.values()),
            "errors_by_code": dict(self.errors),
            "error_samples": self.error_samples,
            "window_errors": sum(self.window_errors.values()),
            "retried_by_code": dict(self.retried),
            "reconnects": self.reconnects,
            "games_finished": len(self.games),
            "games_verified": verified,
            "games_failed": None if args.no_finish else len(self.tables) - verified,
            "failures": failures[:10],
            "finish_s": round(finish_s, 1),
            **echo,
            "echo_ratio": round(echo["echo_baseline_per_s"] / actions_per_s, 1) if actions_per_s else 0.0,
            "cpu_window": window_cpu(window_rows, actions_per_s),
            "floor_ratio": 0.0,
            "floor_chain": "",
            "floor_connections": "",
            "processes": self.sampler.summary() if self.sampler else {},
            "events": self.events,
            "workers": workers,
            "gateways": len(self.targets),
            "tls": bool(self.ca_file),
            "load_avg_window_start": self.load_at_window,
            "players_seated_at_window_start": self.seated_at_window,
            "players_expected": self.players_expected,
            "cpu_steal_pct_window": self.steal_window,
            "box_paused_s_window": paused,
            "load_avg_end": [round(x, 2) for x in os.getloadavg()],
        }
        if args.chat_every > 0:
            settling = [r for r in rows if r["phase"] == "settle"]
            settle = window_cpu(settling, 0.0)
            settle["actions_per_s"] = sum(r["actions_per_s"] for r in settling) / len(settling) if settling else 0.0
            summary["chat"] = chat_summary(
                self.chat, self.window_chat, window_s, summary["cpu_window"], settle, summary["actions_per_s"]
            )
        self.out.mkdir(parents=True, exist_ok=True)
        (self.out / "timeline.json").write_text(json.dumps(rows))
        if args.keep_accepted:
            (self.out / "accepted.json").write_text(json.dumps(self.accepted))
            summary["accepted_kept"] = sum(len(ids) for ids in self.accepted.values())
        try:
            title = f"trix loadtest {sc.name}: {args.tables} tables, {args.duration:.0f}s window"
            write_chart(rows, self.out / "chart.png", title)
        except Exception as err:  # noqa: BLE001 - a chart problem must not hide the figures
            self.say(f"chart not written: {err}")
        return summary

    def finish(self, summary: dict[str, Any]) -> int:
        args = self.args
        breaches = []
        if not args.no_finish and summary["games_verified"] != summary["tables"]:
            breaches.append(f"games_verified {summary['games_verified']} != tables {summary['tables']}")
        if summary["tables"] == 0:
            breaches.append("no table was formed")
        if args.max_p99_ms > 0 and summary["p99_ms"] > args.max_p99_ms:
            breaches.append(f"p99 {summary['p99_ms']} ms > budget {args.max_p99_ms} ms")
        if summary["players_seated_at_window_start"] < summary["players_expected"]:
            breaches.append(
                f"window started with {summary['players_seated_at_window_start']} of "
                f"{summary['players_expected']} players seated (raise --ramp-timeout)"
            )
        if args.max_errors >= 0 and summary["errors"] > args.max_errors:
            breaches.append(f"errors {summary['errors']} > budget {args.max_errors}")
        floor = summary.get("floor_ms_per_action", 0.0)
        platform = summary["cpu_window"].get("platform_ms_per_action", 0.0)
        summary["floor_ratio"] = round(platform / floor, 2) if floor and platform else 0.0
        summary["breaches"] = breaches
        summary["ok"] = not breaches
        summary["results"] = str(self.out)
        (self.out / "summary.json").write_text(json.dumps(summary, indent=1))
        for b in breaches:
            self.say(f"FAILED: {b}")
        print(json.dumps(summary), flush=True)
        return EXIT_OK if not breaches else EXIT_FAILED


def run_loadtest(args: argparse.Namespace) -> int:
    if args.tables < 1 or args.duration <= 0 or args.workers < 0 or args.gateways < 1:
        print(
            "trix loadtest: --tables and --duration must be positive, --workers >= 0, --gateways >= 1",
            file=sys.stderr,
        )
        return 2
    stop_on_sigterm()
    return Run(args, scenario_of(args)).run()


def stop_on_sigterm() -> None:
    """SIGTERM (`kill`, a cancelled job) stops the run as Ctrl-C does, every process it started
    with it (the default SIGTERM ended this process at once, and its bot workers played
    on, orphaned). The multiprocessing children (bot workers, the baselines' processes) get
    SIGTERM at once; SystemExit then runs every `finally` (the embedded platform is stopped, the
    floor's nats-server too) and multiprocessing's exit joins the children. A second SIGTERM does
    not cut that stop short (a Python handler: a program started meanwhile does not inherit it)."""
    stopping = False

    def on_sigterm(signum: int, _frame: Any) -> None:
        nonlocal stopping
        if stopping:
            return
        stopping = True
        print("loadtest: SIGTERM received: stopping the run and every process it started", flush=True)
        for child in mp.active_children():
            child.terminate()
        raise SystemExit(128 + signum)

    signal.signal(signal.SIGTERM, on_sigterm)
