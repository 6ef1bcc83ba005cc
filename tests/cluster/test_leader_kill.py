"""CI-sized proof of issue 19: the platform on a 3-node JetStream cluster (`trix up
--nats-cluster 3`: every stream and bucket R3), a game through the gateway, and the node
leading TABLE_LOG SIGKILLed mid-game (restarted a little later on its store). The game
finishes, nothing a client saw accepted is lost or applied twice, the record replays and
verifies, scoring's standings equal the replayed totals. The full run with 20+ faults is
`make fault-nats` (fault_nats.py)."""

from __future__ import annotations

import asyncio
import signal
import time
from pathlib import Path

from cluster_support import NatsCluster, Run, check_games, play_games, standings_match
from fault_nats import MOVE_PATH

from support.waiting import eventually
from trix.natsio import names
from trix.natsio.provisioning import KV_BUCKETS, STREAMS
from trix.v1 import common_pb2

FAST = {"TRIX_MATCHMAKING_BOT_FILL_S": "0", "TRIX_GATEWAY_RATE_PER_S": "400", "TRIX_GATEWAY_RATE_BURST": "400"}
"""Bots fill a table at once; the client's answers at full speed are within the gateway's limit."""
RESUME_BOUND_S = 15.0
"""Generous for a loaded 2-core CI box; `make fault-nats` asserts the issue's 5 s."""
PLATFORM_BOUND_S = 5.0
"""The platform's own delay once every stream of the move path has a leader again: generous for
a loaded 2-core CI box (`make fault-nats` prints it, issue 42: at most 2 s there; it was up to
5 s and more while a request sent during the election waited out the connection's 5 s)."""


async def test_sigkill_of_the_table_log_leader_mid_game_loses_nothing(tmp_path: Path) -> None:
    cluster = NatsCluster(tmp_path / "state", env=FAST)
    started = time.monotonic()
    try:
        await cluster.start()
        for spec in STREAMS:
            assert await cluster.replicas_of(spec.name) == 3, spec.name
        for kv in KV_BUCKETS:
            assert await cluster.replicas_of(f"KV_{kv.bucket}") == 3, kv.bucket
        cluster.hold("scoring")  # the logs are read before scoring lets the table purge them
        run = Run()
        game = asyncio.ensure_future(
            # the client answers at once (think 0): a short test
            play_games(cluster.gateways, [common_pb2.VARIANT_COMPLEX], run, seed=19, timeout_s=120, think_s=0.0)
        )
        await eventually(lambda: len(run.accepted) >= 4 or game.done(), 60, "the game under way")  # mid-game
        victim = await cluster.leader(names.TABLE_LOG_STREAM)
        cluster.kill(victim)
        killed_at = time.monotonic()
        new_leader = await cluster.leader(names.TABLE_LOG_STREAM)
        assert new_leader != victim
        for stream in MOVE_PATH:  # each led again (asked at most every 0.2 s: NATS is back by then)
            await cluster.leader(stream)
        back = time.monotonic() - killed_at
        cluster.restart(victim)
        await game
        resumed = min((a.accepted for a in run.accepted if a.sent >= killed_at), default=float("inf")) - killed_at
        verdict = await check_games(cluster, run)
        cluster.hold("scoring", signal.SIGCONT)
        same = await standings_match(cluster.gateways[0], run)
        print(
            f"leader kill: node {victim + 1} killed, node {new_leader + 1} leads TABLE_LOG; the move path led "
            f"again after {back:.2f}s; play resumed in {resumed:.2f}s; {verdict}; "
            f"whole test {time.monotonic() - started:.1f}s"
        )
        assert verdict.games == verdict.games_finished == verdict.games_ok == 1, verdict.problems
        assert verdict.lost == 0 and verdict.applied_twice == 0, verdict
        assert verdict.two_writers == 0, verdict.problems
        assert same == 1
        assert resumed <= RESUME_BOUND_S
        assert resumed - back <= PLATFORM_BOUND_S, f"play resumed {resumed - back:.2f}s after NATS was back"
    finally:
        await cluster.stop()
