"""Small rebalancing run (the 300-table proof is `make rebalance-tables`, which asserts the
issue's 5 s): one replica with 64 running tables (one per command shard), two more join; the
tables spread to the shard quotas (22/21/21, within 20 % of even) and every game goes on.

Marked `outside_ci`: `make test-replicas` runs it, the CI suite (`make pytest`) deselects it:
it takes 16-26 s, but failed once in 15 runs on the shared box (cause not captured), so it is
not proven free of flakiness. The interruption bound is the generous `replicas_support.CI_RESUME_BOUND_S`
(12 s); the measured figures are printed."""

from __future__ import annotations

from pathlib import Path

import pytest
from rebalance import SPREAD, passed, run_rebalance
from replicas_support import CI_RESUME_BOUND_S

pytestmark = pytest.mark.outside_ci


async def test_two_new_replicas_take_a_fair_share_without_dropping_games(tmp_path: Path) -> None:
    result = await run_rebalance(
        tmp_path, tables=64, probe_s=2.0, move_s=4.0, baseline_s=4.0, balance_timeout_s=60.0, seed=4, say=print
    )
    print(
        "rebalance CI:",
        {
            k: result[k]
            for k in (
                "per_replica",
                "max_deviation",
                "max_interruption_s",
                "interruption_p99_s",
                "baseline_max_wait_s",
                "balanced_after_s",
                "seconds",
            )
        },
    )
    assert result["max_deviation"] <= SPREAD, result
    assert result["lost"] == 0 and result["applied_twice"] == 0, result
    assert result["streams_ok"] and result["epochs_monotonic"], result["problems"]
    assert result["tables_not_moved_after_balance"] == 0, result
    assert passed(result, bound_s=CI_RESUME_BOUND_S), result
