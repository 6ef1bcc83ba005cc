"""`make bench-table`: per-command latency of the table service on loopback.

Starts a nats-server (users and permissions as in production) and the table service
in-process, plays COMPLEX games through NATS requests as the gateway would, and prints
percentiles of the command latency (request -> validation -> log append with fsync
-> events published -> reply) and of the seat-view reads."""

from __future__ import annotations

import asyncio
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

from conftest import InProcessTable
from table_support import AuthNats, GatewayClient, create_request, play_until, token

from trix.v1 import common_pb2, table_pb2

PLAYERS = ("b0", "b1", "b2", "b3")


def pct(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(p / 100 * len(ordered)))] * 1000


async def bench(workdir: Path, games: int) -> None:
    server = AuthNats(workdir)
    server.start()
    table = InProcessTable(server.url("table"), seed=1)
    await table.start()
    client = await GatewayClient.connect(server.url("gateway"))
    try:
        started = time.perf_counter()
        actions = 0
        for g in range(games):
            tid = f"bench{g}"
            req = create_request(tid, common_pb2.VARIANT_COMPLEX, PLAYERS)
            await client.request(tid, table_pb2.TableCommand(create_table=req), token("service", "matchmaking"))
            actions += await play_until(client, tid, PLAYERS, random.Random(g))
        elapsed = time.perf_counter() - started
        lat = client.latencies
        print(f"bench-table: {games} COMPLEX games, {actions} actions, {len(lat)} requests in {elapsed:.1f}s")
        print(
            f"bench-table: request latency ms (actions and views mixed): p50 {pct(lat, 50):.2f}"
            f" p90 {pct(lat, 90):.2f} p99 {pct(lat, 99):.2f} mean {statistics.mean(lat) * 1000:.2f}"
        )
        # Actions alone: time a run of plays without the view reads in between.
        service = table.service
        assert service is not None
        acts: list[float] = []
        tid = "bench-acts"
        req = create_request(tid, common_pb2.VARIANT_COMPLEX, PLAYERS)
        await client.request(tid, table_pb2.TableCommand(create_table=req), token("service", "matchmaking"))
        timers = token("service", "timers")
        for _ in range(300):
            t = service.tables[tid]
            if t.finished or t.turn is None:
                break
            cmd = table_pb2.AutoActRequest(table_id=tid, seat=t.to_act()[0], turn_seq=t.turn.seq)
            t0 = time.perf_counter()
            await client.request(tid, table_pb2.TableCommand(auto_act=cmd), timers)
            acts.append(time.perf_counter() - t0)
        print(
            f"bench-table: action latency ms ({len(acts)} AutoActs: log append + events + reply):"
            f" p50 {pct(acts, 50):.2f} p90 {pct(acts, 90):.2f} p99 {pct(acts, 99):.2f}"
        )
    finally:
        await client.nc.close()
        await table.stop()
        server.stop()


def main() -> int:
    games = int(sys.argv[1]) if len(sys.argv) > 1 else 3
    with tempfile.TemporaryDirectory() as d:
        asyncio.run(bench(Path(d), games))
    return 0


if __name__ == "__main__":
    sys.exit(main())
