"""Benchmark (not a timed test) of issue 5: actions/s with 1 and with 3 table replicas under
the same load, so the scaling factor is visible. `make bench-tables` (TABLES=, BENCH_S=).

The load: `--tables` concurrent bot games on one real nats-server (file storage,
`sync_interval: always`), each driven closed-loop by a test player at seat 0 (view, move,
next view; seats 1-3 are the table's bots, whose moves ride in the same log entry), a finished
game replaced by a new one. An action is one acknowledged move = one TABLE_LOG append (the
two counts are printed as a cross-check). The same seeds and table ids run against 1 and then
3 replicas.

On one machine the replicas share its cores with the nats-server (every append and event
copy fsync'd) and with this driver, so the factor is bounded by them; the CPU each of them
used during the measured window is printed (1.0 = one core busy) to show where the time goes."""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from replicas_support import VARIANTS, Cluster, Driver, GameStats, GatewayClient, percentile

from support.nats import AuthNats

WARMUP_S = 3.0
IDLE_S = 5.0
TICK = os.sysconf("SC_CLK_TCK")


@dataclass(frozen=True)
class Rate:
    acked: float
    """Moves acknowledged per second."""
    logged: float
    """TABLE_LOG appends per second (one per acknowledged move)."""
    p50_ms: float
    p95_ms: float
    """Latency of a move (request sent -> acknowledged)."""
    cpu: dict[str, float]
    """Cores used during the window: nats-server, table replicas (sum), this driver."""
    idle_lease_writes: float
    """Writes per second to the lease and heartbeat buckets before any table exists."""


def cpu_seconds(pid: int) -> float:
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / TICK  # utime + stime


def own_cpu_seconds() -> float:
    t = os.times()
    return t.user + t.system


async def log_entries(cluster: Cluster) -> int:
    assert cluster.nc is not None
    return int((await cluster.nc.jetstream().stream_info("TABLE_LOG")).state.messages)


async def measure(replicas: int, tables: int, seconds: float) -> Rate:
    with tempfile.TemporaryDirectory(prefix="trix-bench-") as tmp:
        server = AuthNats(Path(tmp))
        cluster = Cluster(server, Path(tmp), replicas, TRIX_LOG_LEVEL="warning")
        client: GatewayClient | None = None
        try:
            server.start()
            await cluster.connect()
            for i in range(replicas):
                cluster.start(i)
            await cluster.wait_balanced(list(range(replicas)), timeout_s=60)
            idle = await cluster.lease_writes_per_s(IDLE_S)
            client = await GatewayClient.connect(server.url("gateway"))
            stats = GameStats()
            drivers = [Driver(client, stats, 500 + i) for i in range(tables)]
            ids = [f"b-{i}" for i in range(tables)]
            await asyncio.gather(
                *(d.create(t, VARIANTS[i % 2]) for i, (d, t) in enumerate(zip(drivers, ids, strict=True)))
            )
            stop = asyncio.Event()

            async def run(d: Driver, base: str) -> None:
                game, t = 0, base
                while not stop.is_set():
                    await d.play(t, max_actions=1)
                    if t in stats.finished:
                        game += 1
                        t = f"{base}-{game}"
                        await d.create(t, VARIANTS[game % 2])

            tasks = [asyncio.ensure_future(run(d, t)) for d, t in zip(drivers, ids, strict=True)]
            await asyncio.sleep(WARMUP_S)
            pids = {"nats": [server.proc.pid if server.proc else 0], "replicas": []}
            pids["replicas"] = [p.proc.pid for p in cluster.procs if p.proc is not None]

            def cpu_now() -> dict[str, float]:
                out = {k: sum(cpu_seconds(p) for p in v) for k, v in pids.items()}
                out["driver"] = own_cpu_seconds()
                return out

            start, count, logged, cpu0 = time.monotonic(), len(stats.acks), await log_entries(cluster), cpu_now()
            await asyncio.sleep(seconds)
            elapsed = time.monotonic() - start
            cpu1, window = cpu_now(), stats.acks[count:]
            latencies = [(a.acked - a.sent) * 1000 for a in window]
            rate = Rate(
                acked=len(window) / elapsed,
                logged=(await log_entries(cluster) - logged) / elapsed,
                p50_ms=percentile(latencies, 50),
                p95_ms=percentile(latencies, 95),
                cpu={k: round((cpu1[k] - cpu0[k]) / elapsed, 2) for k in cpu1},
                idle_lease_writes=idle,
            )
            stop.set()
            await asyncio.gather(*tasks, return_exceptions=True)
            return rate
        finally:
            if client is not None:
                await client.nc.close()
            await cluster.close()
            cluster.stop_all()
            server.stop()


async def main_async(tables: int, seconds: float) -> dict[str, object]:
    rates: dict[int, Rate] = {}
    for n in (1, 3):
        rates[n] = r = await measure(n, tables, seconds)
        print(
            f"{n} replica{'s' if n > 1 else ' '}: {r.acked:.1f} actions/s ({r.logged:.1f} log appends/s), "
            f"move latency p50 {r.p50_ms:.0f} ms p95 {r.p95_ms:.0f} ms, cores used {r.cpu}, "
            f"idle lease writes {r.idle_lease_writes:.0f}/s "
            f"({tables} concurrent games, {seconds:g} s)",
            flush=True,
        )
    one, three = rates[1], rates[3]
    scaling = round(three.acked / one.acked, 2) if one.acked else 0.0
    print(f"scaling 1 -> 3 replicas: x{scaling}", flush=True)
    return {
        "tables": tables,
        "seconds": seconds,
        "actions_per_s_1": round(one.acked, 1),
        "actions_per_s_3": round(three.acked, 1),
        "scaling": scaling,
        "p95_ms_1": round(one.p95_ms),
        "p95_ms_3": round(three.p95_ms),
        "cores_1": one.cpu,
        "cores_3": three.cpu,
        "idle_lease_writes_per_s_1": round(one.idle_lease_writes, 1),
        "idle_lease_writes_per_s_3": round(three.idle_lease_writes, 1),
        "cpus": os.cpu_count() or 0,
        "load_1m": round(os.getloadavg()[0], 1),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description="actions/s with 1 and 3 table replicas")
    parser.add_argument("--tables", type=int, default=24)
    parser.add_argument("--seconds", type=float, default=20.0)
    args = parser.parse_args()
    print(json.dumps(asyncio.run(main_async(args.tables, args.seconds))))
    return 0


if __name__ == "__main__":
    sys.exit(main())
