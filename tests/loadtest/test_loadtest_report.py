"""The load test's CPU accounting (issue 10): cores and CPU ms per action over the measured
window, with the bots that drive the load kept apart from the platform they measure."""

from __future__ import annotations

from typing import Any

import pytest

from trix.loadtest.report import combined_floor, window_cpu


def _row(**cpu: float) -> dict[str, Any]:
    return {
        "phase": "window",
        "processes": {name.replace("_", "-"): {"cpu": v, "rss_mb": 50.0} for name, v in cpu.items()},
    }


def test_window_cpu_splits_platform_and_bots_and_divides_by_actions() -> None:
    rows = [
        _row(nats=30.0, gateway=40.0, bots_0=10.0, bots_1=12.0),
        _row(nats=50.0, gateway=40.0, bots_0=14.0, bots_1=12.0),
    ]
    cpu = window_cpu(rows, actions_per_s=100.0)
    # means: nats 40 %, gateway 40 %, bots 24 % of a core
    assert cpu["cores"] == pytest.approx(1.04)
    assert cpu["platform_cores"] == pytest.approx(0.80)
    # 40 % of a core at 100 actions/s = 4 ms of CPU per action
    assert cpu["ms_per_action"] == {"nats": 4.0, "gateway": 4.0, "bots": 2.4}
    assert cpu["platform_ms_per_action"] == pytest.approx(8.0)
    # 40 % of a core = 400 ms of CPU per second, with or without actions (the idle scenario)
    assert cpu["ms_per_s"] == {"nats": 400.0, "gateway": 400.0, "bots": 240.0}


def test_window_cpu_without_actions_or_rows_reports_no_cost_per_action() -> None:
    idle = window_cpu([_row(nats=3.0, gateway=1.2)], actions_per_s=0.0)
    assert idle["ms_per_action"] == {}
    assert idle["platform_cores"] == 0.042  # three decimals: the idle budget is 0.06
    assert idle["ms_per_s"] == {"nats": 30.0, "gateway": 12.0}
    assert window_cpu([_row(nats=20.0)], actions_per_s=0.0)["cores"] == pytest.approx(0.2)
    assert window_cpu([], actions_per_s=10.0)["cores"] == 0.0


def test_window_cpu_sums_the_replicas_of_a_service_and_keeps_each_apart() -> None:
    rows = [_row(nats=20.0, gateway_1=30.0, gateway_2=10.0, table_1=5.0, bots_0=10.0)]
    cpu = window_cpu(rows, actions_per_s=100.0)
    assert cpu["ms_per_action"] == {"gateway": 4.0, "nats": 2.0, "bots": 1.0, "table": 0.5}
    assert cpu["replicas_ms_per_action"] == {"gateway-1": 3.0, "gateway-2": 1.0, "table-1": 0.5}
    assert cpu["platform_ms_per_action"] == pytest.approx(6.5)
    assert "replicas_ms_per_action" not in window_cpu([_row(gateway=30.0)], actions_per_s=100.0)


SAMPLER_CHILD = """
import json, time
from trix.loadtest.sampling import Sampler
sampler = Sampler({})
sampler.start()
print("started", flush=True)
time.sleep(8.0)
sampler.stop.set()
print(json.dumps(sampler.pauses), flush=True)
"""


def test_a_stopped_box_is_seen_by_the_sampler_as_a_pause() -> None:
    """Issue 16: a window in which the host stopped the whole virtual machine (every process,
    the load test's own too) is reported, so its latencies and errors are not read as the
    platform's. A process stopped with SIGSTOP for 4 s is what such a pause looks like from
    inside: its sampler wakes 3-4 s late (its one-second step), once; jitter is no pause."""
    import json
    import os
    import signal
    import subprocess
    import sys
    import time

    from trix.loadtest.sampling import PAUSE_S, box_pauses

    assert box_pauses([0.0, 1.0, 2.01, 3.0]) == []  # a scheduler's jitter is not a pause
    child = subprocess.Popen(
        [sys.executable, "-c", SAMPLER_CHILD], stdout=subprocess.PIPE, text=True, env={**os.environ}
    )
    try:
        assert child.stdout is not None
        assert child.stdout.readline().strip() == "started"
        time.sleep(1.5)
        child.send_signal(signal.SIGSTOP)
        time.sleep(4.0)
        child.send_signal(signal.SIGCONT)
        out, _ = child.communicate(timeout=60)
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
    pauses = json.loads(out.strip().splitlines()[-1])
    assert len(pauses) == 1
    at, seconds = pauses[0]
    assert PAUSE_S <= seconds <= 4.0 + 2.0  # generous: a loaded 2-core box wakes late too
    assert abs(at - time.time()) < 60


def _floor(ms: float, edge: float) -> dict[str, Any]:
    by_process = {"edge": edge, "nats": 0.3, "table": round(ms - edge - 0.3, 3)}
    return {
        "floor_ms_per_action": ms,
        "floor_ms_per_action_by_process": by_process,
        "floor_actions_per_s": 400.0,
        "floor_processes": 3,
    }


def test_the_runs_floor_is_the_mean_of_before_and_after_its_swarm_or_the_side_that_was_measured() -> None:
    both = combined_floor(_floor(1.5, 0.7), _floor(1.8, 0.8), 1000)
    assert both["floor_ms_per_action"] == 1.65
    assert (both["floor_ms_per_action_before"], both["floor_ms_per_action_after"]) == (1.5, 1.8)
    assert both["floor_ms_per_action_by_process"] == {"edge": 0.75, "nats": 0.3, "table": 0.6}
    only_after = combined_floor(None, _floor(1.8, 0.8), 1000)  # the first baseline failed
    assert only_after["floor_ms_per_action"] == 1.8 and only_after["floor_ms_per_action_before"] == 0.0
    neither = combined_floor(None, None, 1000)
    assert neither["floor_ms_per_action"] == 0.0 and neither["floor_tables"] == 1000  # no ratio then
