"""A paused owner (SIGSTOP past its lease, then SIGCONT) appends nothing and stops serving;
SIGTERM hands a replica's tables over with no more than a short pause."""

from __future__ import annotations

import asyncio
import signal
import time

from replicas_support import (
    CI_RESUME_BOUND_S,
    VARIANTS,
    Ack,
    Cluster,
    Driver,
    GameStats,
    GatewayClient,
    check_games,
)

from trix.natsio.leases import VALID_S
from trix.natsio.provisioning import TABLE_LEASE_TTL_S
from trix.natsio.subjects import table_shard


async def _games(cluster: Cluster, count: int, seed: int) -> tuple[GatewayClient, GameStats, list[Driver]]:
    client = await GatewayClient.connect(cluster.server.url("gateway"))
    client.timeout_s = 1.5
    stats = GameStats()
    drivers = [Driver(client, stats, seed * 100 + i) for i in range(count)]
    await asyncio.gather(*(d.create(f"h{seed}-{i}", VARIANTS[i % 2]) for i, d in enumerate(drivers)))
    return client, stats, drivers


PACE_S = 0.2
"""Pause between a table's moves: unpaced, a game (~100 moves, the table plays three seats)
ends within seconds on an idle box, before the pause or kill it is there to survive."""


def _resume(stats: GameStats, tables: list[str], since: float) -> dict[str, float]:
    out: dict[str, float] = {}
    for t in tables:
        after = [a.acked for a in stats.acks if a.table_id == t and a.sent >= since]
        if after:
            out[t] = min(after) - since
    return out


def _waiting(stats: GameStats, tables: list[str], since: float) -> list[str]:
    """Tables with no acknowledged action since `since` whose game is not over (a game can end
    within seconds: the table plays three seats itself, so it need not resume)."""
    resumed = _resume(stats, tables, since)
    return [t for t in tables if t not in resumed and t not in stats.finished]


async def test_paused_owner_cannot_append_and_stops_serving(cluster: Cluster) -> None:
    client, stats, drivers = await _games(cluster, 6, seed=1)
    stop = asyncio.Event()

    async def run(d: Driver, t: str) -> None:
        while not stop.is_set() and t not in stats.finished:
            await d.play(t, max_actions=1)
            await asyncio.sleep(PACE_S)

    tasks = [asyncio.ensure_future(run(d, t)) for d, t in zip(drivers, stats.tables, strict=True)]
    try:
        await asyncio.sleep(2.0)
        leases = await cluster.leases()
        target = next(t for t in stats.tables if t not in stats.finished)  # paced: games last ~20 s
        victim = cluster.index_of(leases[table_shard(target)])
        paused_id = leases[table_shard(target)]
        owned = [t for t in stats.tables if leases[table_shard(t)] == paused_id]
        cluster.signal(victim, signal.SIGSTOP)
        stopped = time.monotonic()
        # Another replica takes the shard over and appends (the table's next acknowledged action).
        while _waiting(stats, owned, stopped):
            assert time.monotonic() - stopped < 15, f"no takeover: {_waiting(stats, owned, stopped)}"
            await asyncio.sleep(0.05)
        resumed = _resume(stats, owned, stopped)
        assert resumed, "every game of the paused owner ended before it was paused"
        assert (await cluster.leases())[table_shard(target)] != paused_id
        await asyncio.sleep(max(0.0, TABLE_LEASE_TTL_S - (time.monotonic() - stopped)) + 0.5)
        cluster.signal(victim, signal.SIGCONT)
        await asyncio.sleep(3.0)  # it wakes up with stale tables and queued commands
        stop.set()
        await asyncio.gather(*tasks)
        verdict = await check_games(cluster.nc, stats, finished=False)  # type: ignore[arg-type]
        assert verdict.lost == 0 and verdict.applied_twice == 0, verdict
        # Lease epochs only grow along every table's log: the woken owner appended nothing
        # after the new owner's first entry, and each log is one contiguous history.
        assert verdict.epochs_ok and verdict.games_ok == verdict.games, verdict.problems
        log = cluster.procs[victim].log_path.read_text()
        assert "shard dropped" in log  # it stopped serving the shards it lost
        # TTL + rebuild + the caller's retry: ~3 s on an idle box; the shared CI box gets more room.
        print("SIGSTOP resume:", {t: round(v, 2) for t, v in resumed.items()})
        assert max(resumed.values()) <= max(TABLE_LEASE_TTL_S + 3.0, CI_RESUME_BOUND_S), resumed
        assert VALID_S < TABLE_LEASE_TTL_S
    finally:
        stop.set()
        await asyncio.gather(*tasks, return_exceptions=True)
        await client.nc.close()


async def test_sigterm_hands_tables_over_with_a_short_pause(cluster: Cluster) -> None:
    client, stats, drivers = await _games(cluster, 6, seed=2)
    stop = asyncio.Event()

    async def run(d: Driver, t: str) -> None:
        while not stop.is_set() and t not in stats.finished:
            await d.play(t, max_actions=1)
            await asyncio.sleep(PACE_S)

    tasks = [asyncio.ensure_future(run(d, t)) for d, t in zip(drivers, stats.tables, strict=True)]
    try:
        await asyncio.sleep(2.0)
        leases = await cluster.leases()
        target = next(t for t in stats.tables if t not in stats.finished)  # paced: games last ~20 s
        victim_id = leases[table_shard(target)]
        victim = cluster.index_of(victim_id)
        owned = [t for t in stats.tables if leases[table_shard(t)] == victim_id and t not in stats.finished]
        acked = asyncio.get_running_loop().create_future()

        def on_ack(ack: Ack) -> None:
            if ack.table_id in owned and not acked.done():
                cluster.terminate(victim)  # SIGTERM right at an acknowledged move
                acked.set_result(time.monotonic())

        for d in drivers:
            d.on_ack.append(on_ack)
        since = await asyncio.wait_for(acked, 30)
        code = await asyncio.get_running_loop().run_in_executor(None, cluster.wait_exit, victim, 20)
        assert code == 0
        while _waiting(stats, owned, since):
            assert time.monotonic() - since < 15, f"tables not resumed: {_waiting(stats, owned, since)}"
            await asyncio.sleep(0.05)
        resumed = _resume(stats, owned, since)
        assert resumed, "every game of the terminated owner ended first"
        leases = await cluster.leases()
        assert victim_id not in leases.values()  # every shard handed over before it exited
        assert len(leases) == 64
        stop.set()
        await asyncio.gather(*tasks)
        verdict = await check_games(cluster.nc, stats, finished=False)  # type: ignore[arg-type]
        assert verdict.lost == 0 and verdict.applied_twice == 0, verdict
        assert verdict.epochs_ok and verdict.games_ok == verdict.games, verdict.problems
        # A short pause: handed over, not waited out (a kill costs at least the lease TTL).
        assert max(resumed.values()) < TABLE_LEASE_TTL_S, resumed
    finally:
        stop.set()
        await asyncio.gather(*tasks, return_exceptions=True)
        await client.nc.close()
