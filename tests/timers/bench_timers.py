"""`make bench-timers`: firing lateness and throughput of one timers replica on a real NATS.

Not part of `make test-timers` (no assertion on speed). Starts the table and timers
services in-process, opens TABLES free tables where one never-acting player sits with
three bots and 50 ms timers, lets them run for SECONDS, and prints the number of
auto-actions per second and the lateness of each firing after its deadline.
"""

from __future__ import annotations

import asyncio
import os
import statistics
import time

from timers_support import Client_, InProcessTable, InProcessTimers, fast_options

from support.nats import AuthNats
from trix.timers.clock import SystemClock

TABLES = int(os.environ.get("BENCH_TABLES", "40"))
SECONDS = 8.0


async def test_bench_timers(auth_nats: AuthNats, client: Client_) -> None:
    clock = SystemClock()
    table = InProcessTable(auth_nats.url("table"), clock)
    timers = InProcessTimers(auth_nats.url("timers"), clock, "bench")
    await table.start()
    await timers.start()
    try:
        options = fast_options(50, max_timeouts_in_a_row=100_000)
        for i in range(TABLES):
            await client.create(f"bench-{i}", ["alice" + str(i), "", "", ""], bots=(1, 2, 3), options=options)
        t0 = time.monotonic()
        await asyncio.sleep(SECONDS)
        elapsed = time.monotonic() - t0
        assert timers.service is not None
        late = sorted(timers.service.lateness_s)
        fired = timers.stats["auto_accepted"]
        q = statistics.quantiles(late, n=100)
        lag = sorted(timers.service.ingest_lag_s)
        print(
            f"\nbench-timers: {TABLES} tables, 50 ms timers, {elapsed:.1f} s: {fired} auto-actions "
            f"({fired / elapsed:.0f}/s), lateness after deadline p50 {q[49] * 1000:.1f} ms, "
            f"p90 {q[89] * 1000:.1f} ms, p99 {q[98] * 1000:.1f} ms, max {late[-1] * 1000:.1f} ms, "
            f"refused {timers.stats['auto_refused']}, CAS conflicts {timers.stats['cas_conflicts']}; "
            f"TurnStarted reached the timers {lag[len(lag) // 2] * 1000:.1f} ms (p50) after the table started it"
        )
    finally:
        await timers.stop()
        await table.stop()
