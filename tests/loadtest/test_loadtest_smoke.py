"""The load-test smoke in CI (issue 10): the same entry point as `make loadtest-smoke`
(`trix loadtest steady`, its own embedded platform on loopback, bots through the public
gateway), asserting correctness, not speed: every table's game finished, replayed,
verified and equal to scoring's standings, and zero errors. Budgets on latency are
deliberately absent here (the CI machine is shared). The settings are SMOKE_ARGV at the
CI_SMOKE size (2 tables, 10 s: whole games must finish within CI's ~2 minutes);
TRIX_LOADTEST_SMOKE_TABLES=20 TRIX_LOADTEST_SMOKE_DURATION=30 runs `make loadtest-smoke`'s size.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from trix.loadtest.scenarios import CI_SMOKE, SMOKE_ARGV

pytestmark = pytest.mark.timeout(1200)


def _argv(out: Path) -> list[str]:
    argv = list(SMOKE_ARGV)
    tables = os.environ.get("TRIX_LOADTEST_SMOKE_TABLES", CI_SMOKE["--tables"])
    duration = os.environ.get("TRIX_LOADTEST_SMOKE_DURATION", CI_SMOKE["--duration"])
    if tables:
        argv[argv.index("--tables") + 1] = tables
    if duration:
        argv[argv.index("--duration") + 1] = duration
    # 3 s of settling instead of 15: two tables have no ramp backlog to wait out. Two gateways:
    # the bot workers spread over them round-robin, a table's players across both (issue 16).
    extra = ["--settle", "3", "--echo-seconds", "2", "--floor-seconds", "4", "--gateways", "2"]
    return [*argv, *extra, "--out", str(out), "--state-dir", str(out / "state")]


def test_smoke_every_game_verified_zero_errors(tmp_path: Path) -> None:
    argv = _argv(tmp_path / "run")
    proc = subprocess.run(
        [sys.executable, "-m", "trix.cli", "loadtest", *argv],
        capture_output=True,
        text=True,
        timeout=880,
        check=False,
    )
    lines = proc.stdout.strip().splitlines()
    assert lines, proc.stderr[-2000:]
    summary = json.loads(lines[-1])  # the summary is printed LAST as one JSON line
    tables = int(argv[argv.index("--tables") + 1])
    assert summary["tables"] == tables, proc.stdout[-3000:]
    assert summary["games_verified"] == summary["tables"], summary["failures"]
    assert summary["games_failed"] == 0
    assert summary["errors"] == 0, summary["errors_by_code"]
    assert summary["players"] == 4 * tables
    for key in ("actions_per_s", "p50_ms", "p99_ms", "echo_baseline_per_s", "floor_ms_per_action", "floor_ratio"):
        assert summary[key] > 0, key
    assert {"gateway-1", "gateway-2", "table", "nats"} <= set(summary["processes"])
    assert summary["gateways"] == 2
    # the window's CPU, the platform's apart from the bots driving it
    cpu = summary["cpu_window"]
    assert {"gateway", "table", "nats", "bots"} <= set(cpu["ms_per_action"])
    assert 0 < cpu["platform_cores"] <= cpu["cores"] and cpu["platform_ms_per_action"] > 0
    assert cpu["bots_ms_per_action"] == cpu["ms_per_action"]["bots"]
    # both gateways served players: each replica's CPU per action is given (summed under `gateway`).
    # The window's few actions a second may cost a replica less than the sampler's tick (10 ms of
    # CPU a second) in every second of it on a fast box, so that both served is read over the whole
    # run, whose finish plays every game out through both: an idle gateway's second is 0-2 %.
    replicas = cpu["replicas_ms_per_action"]
    assert set(replicas) == {"gateway-1", "gateway-2"}, replicas
    timeline = json.loads((tmp_path / "run" / "timeline.json").read_text(encoding="utf-8"))
    for gateway in ("gateway-1", "gateway-2"):
        busiest = max(row["processes"][gateway]["cpu"] for row in timeline if gateway in row.get("processes", {}))
        assert busiest >= 5, (gateway, busiest)
    # the floor baseline (issue 16): the same work through the cheapest chain, in the same run
    assert summary["floor_ratio"] == round(cpu["platform_ms_per_action"] / summary["floor_ms_per_action"], 2)
    # measured before and after the swarm, the mean of the two (the box's speed moves within a run)
    before, after = summary["floor_ms_per_action_before"], summary["floor_ms_per_action_after"]
    assert before > 0 and after > 0 and summary["floor_ms_per_action"] == round((before + after) / 2, 3)
    assert summary["floor_chain"] == "split" and summary["floor_processes"] == 3
    assert summary["floor_connections"] == "seat"  # a connection per stream, as the bots have theirs
    # the swarm measures itself (its event-loop lag) and the box (load average) with every run
    assert summary["workers"] >= 2 and {"bots-0", "bots-1"} <= set(summary["processes"])
    assert summary["bot_lag_p99_ms"] >= 0 and len(summary["load_avg_end"]) == 3
    # the bots act from their own TurnStarted's legal moves: a view only to resume (ADR 0003 decision 15)
    assert summary["views_per_action"] < 0.25, summary["views_per_action"]
    assert (tmp_path / "run" / "chart.png").stat().st_size > 0
    assert len(json.loads((tmp_path / "run" / "timeline.json").read_text())) > 0
    assert proc.returncode == 0, proc.stdout[-3000:]
