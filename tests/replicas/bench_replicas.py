"""Benchmark (not a timed test) of issue 5: actions/s with 1 and with 3 table replicas under
the same load (concurrent bot games driven through table commands on one real NATS), so the
scaling factor is visible. `make bench-tables`. On one machine the replicas share its cores
and the single nats-server (every append and event fsync'd), so the factor is bounded by them."""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from replicas_support import VARIANTS, AuthNats, Cluster, Driver, GameStats, GatewayClient


async def measure(replicas: int, tables: int, seconds: float) -> float:
    with tempfile.TemporaryDirectory(prefix="trix-bench-") as tmp:
        server = AuthNats(Path(tmp))
        server.start()
        cluster = Cluster(server, Path(tmp), replicas, TRIX_LOG_LEVEL="warning")
        client: GatewayClient | None = None
        try:
            await cluster.connect()
            for i in range(replicas):
                cluster.start(i)
            await cluster.wait_balanced(list(range(replicas)), timeout_s=60)
            client = await GatewayClient.connect(server.url("gateway"))
            stats = GameStats()
            drivers = [Driver(client, stats, 500 + i) for i in range(tables)]
            ids = [f"b{replicas}-{i}" for i in range(tables)]
            await asyncio.gather(
                *(d.create(t, VARIANTS[i % 2]) for i, (d, t) in enumerate(zip(drivers, ids, strict=True)))
            )
            stop = asyncio.Event()

            async def run(d: Driver, t: str) -> None:
                game = 0
                while not stop.is_set():
                    await d.play(t, max_actions=1)
                    if t in stats.finished:
                        game += 1
                        t = f"{t}-{game}"
                        await d.create(t, VARIANTS[game % 2])

            tasks = [asyncio.ensure_future(run(d, t)) for d, t in zip(drivers, ids, strict=True)]
            await asyncio.sleep(2.0)  # warm up
            start, count = time.monotonic(), len(stats.acks)
            await asyncio.sleep(seconds)
            rate = (len(stats.acks) - count) / (time.monotonic() - start)
            stop.set()
            await asyncio.gather(*tasks, return_exceptions=True)
            return rate
        finally:
            if client is not None:
                await client.nc.close()
            await cluster.close()
            cluster.stop_all()
            server.stop()


async def main_async(tables: int, seconds: float) -> dict[str, float]:
    one = await measure(1, tables, seconds)
    print(f"1 replica : {one:.1f} actions/s ({tables} concurrent games)", flush=True)
    three = await measure(3, tables, seconds)
    print(f"3 replicas: {three:.1f} actions/s ({tables} concurrent games)", flush=True)
    return {"actions_per_s_1": round(one, 1), "actions_per_s_3": round(three, 1), "scaling": round(three / one, 2)}


def main() -> int:
    parser = argparse.ArgumentParser(description="actions/s with 1 and 3 table replicas")
    parser.add_argument("--tables", type=int, default=24)
    parser.add_argument("--seconds", type=float, default=20.0)
    args = parser.parse_args()
    print(json.dumps(asyncio.run(main_async(args.tables, args.seconds))))
    return 0


if __name__ == "__main__":
    sys.exit(main())
