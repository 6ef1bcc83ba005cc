"""`make bench-table`: per-action cost of the table service on loopback.

Starts a nats-server (users and permissions as in production, `sync_interval: always`) and
the table service in-process, plays COMPLEX games through NATS requests as the gateway
would, and prints percentiles of the command latency (request -> validation -> log append
with fsync -> events published -> reply) and of the seat-view reads.

Then rounds of AutoActs on fresh tables, one table alone (latency) and BENCH_TABLES tables
at once (throughput), counting per action the JetStream messages stored (the log entry and
the results, issue 16: events travel on core NATS) and the CPU time of this process (table
service and client) and of nats-server, figures that a busy machine disturbs less than
wall-clock latency."""

from __future__ import annotations

import asyncio
import os
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

import nats

from conftest import InProcessTable
from support.nats import AuthNats
from support.table import GatewayClient, create_request, play_until, token
from trix.natsio.permissions import inbox_prefix
from trix.table.adapters import NatsSink
from trix.table.service import TableService
from trix.v1 import common_pb2, table_pb2

PLAYERS = ("b0", "b1", "b2", "b3")
MODES = ("core",)


def server_cpu_s(pid: int) -> float:
    """CPU seconds (user + system) of a process so far, from /proc (Linux)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def pct(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(p / 100 * len(ordered)))] * 1000


async def stored(table_url: str) -> int:
    """Messages in TABLE_LOG and TABLE_RESULTS (the table user may read both)."""
    nc = await nats.connect(table_url, inbox_prefix=inbox_prefix("table").encode())
    try:
        js = nc.jetstream()
        return sum([(await js.stream_info(s)).state.messages for s in ("TABLE_LOG", "TABLE_RESULTS")])
    finally:
        await nc.close()


async def drive(client: GatewayClient, service: TableService, tid: str, actions: int) -> list[float]:
    """AutoActs on a fresh table, one at a time; the latency of each."""
    req = create_request(tid, common_pb2.VARIANT_COMPLEX, PLAYERS)
    await client.request(tid, table_pb2.TableCommand(create_table=req), token("service", "table"))
    timers = token("service", "timers")
    out: list[float] = []
    for _ in range(actions):
        t = service.tables[tid]
        if t.finished or t.turn is None:
            break
        cmd = table_pb2.AutoActRequest(table_id=tid, seat=t.to_act()[0], turn_seq=t.turn.seq)
        t0 = time.perf_counter()
        await client.request(tid, table_pb2.TableCommand(auto_act=cmd), timers)
        out.append(time.perf_counter() - t0)
    return out


async def bench(workdir: Path, games: int, rounds: int, tables: int, actions: int) -> None:
    server = AuthNats(workdir)
    server.start()
    table = InProcessTable(server.url("table"), seed=1)
    await table.start()
    client = await GatewayClient.connect(server.url("gateway"))
    try:
        service = table.service
        assert service is not None
        sink = service.sink
        assert isinstance(sink, NatsSink)
        started = time.perf_counter()
        played = 0
        for g in range(games):
            tid = f"bench{g}"
            req = create_request(tid, common_pb2.VARIANT_COMPLEX, PLAYERS)
            await client.request(tid, table_pb2.TableCommand(create_table=req), token("service", "table"))
            played += await play_until(client, tid, PLAYERS, random.Random(g))
        elapsed = time.perf_counter() - started
        lat = client.latencies
        print(f"bench-table: {games} COMPLEX games, {played} actions, {len(lat)} requests in {elapsed:.1f}s")
        if lat:
            print(
                f"bench-table: request latency ms (actions and views mixed): p50 {pct(lat, 50):.2f}"
                f" p90 {pct(lat, 90):.2f} p99 {pct(lat, 99):.2f} mean {statistics.mean(lat) * 1000:.2f}"
            )
        single: dict[str, list[float]] = {m: [] for m in MODES}
        single_s: dict[str, float] = {m: 0.0 for m in MODES}
        many: dict[str, list[float]] = {m: [] for m in MODES}
        many_s: dict[str, float] = {m: 0.0 for m in MODES}
        writes: dict[str, list[int]] = {m: [0, 0] for m in MODES}  # messages, actions
        cpu: dict[str, list[float]] = {m: [0.0, 0.0] for m in MODES}  # this process, nats-server
        assert server.proc is not None
        for r in range(rounds):
            for mode in MODES if r % 2 == 0 else MODES[::-1]:
                before = await stored(server.url("table"))
                cpu0, srv0 = time.process_time(), server_cpu_s(server.proc.pid)
                t0 = time.perf_counter()
                one = await drive(client, service, f"one-{mode}-{r}", actions)
                single_s[mode] += time.perf_counter() - t0
                single[mode] += one
                t0 = time.perf_counter()
                results = await asyncio.gather(
                    *(drive(client, service, f"many-{mode}-{r}-{i}", actions) for i in range(tables))
                )
                many_s[mode] += time.perf_counter() - t0
                for res in results:
                    many[mode] += res
                cpu[mode][0] += time.process_time() - cpu0
                cpu[mode][1] += server_cpu_s(server.proc.pid) - srv0
                writes[mode][0] += await stored(server.url("table")) - before
                writes[mode][1] += len(one) + sum(len(res) for res in results)
        for mode in MODES:
            for label, lat_s, took in (
                (" 1 table", single[mode], single_s[mode]),
                (f"{tables:2} tables", many[mode], many_s[mode]),
            ):
                if lat_s:
                    print(
                        f"bench-table: {mode:9} {label}: {len(lat_s) / took:6.1f} actions/s,"
                        f" latency ms p50 {pct(lat_s, 50):6.2f} p90 {pct(lat_s, 90):6.2f} p99 {pct(lat_s, 99):6.2f}"
                        f" mean {statistics.mean(lat_s) * 1000:6.2f} ({len(lat_s)} AutoActs)"
                    )
            msgs, acts = writes[mode]
            print(
                f"bench-table: {mode:9} per action: {msgs / acts:.2f} JetStream messages stored (log + events),"
                f" CPU ms: table+client process {cpu[mode][0] / acts * 1000:.2f},"
                f" nats-server {cpu[mode][1] / acts * 1000:.2f}"
            )
    finally:
        await client.nc.close()
        await table.stop()
        server.stop()


def main() -> int:
    games = int(sys.argv[1]) if len(sys.argv) > 1 else 1
    rounds = int(os.environ.get("BENCH_ROUNDS", "6"))
    tables = int(os.environ.get("BENCH_TABLES", "4"))
    actions = int(os.environ.get("BENCH_ACTIONS", "80"))
    with tempfile.TemporaryDirectory() as d:
        asyncio.run(bench(Path(d), games, rounds, tables, actions))
    return 0


if __name__ == "__main__":
    sys.exit(main())
