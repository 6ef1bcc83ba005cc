"""The scoring benchmark runs and reports events consumed per second (`make bench-scoring`)."""

from __future__ import annotations

from pathlib import Path

from bench_scoring import run_bench


def test_bench_reports_events_per_second(tmp_path: Path) -> None:
    result = run_bench(tmp_path, tables=20, noise=16)
    assert result["events"] == 20 * (1 + 8 + 16 + 1)
    assert result["applied"] == 20 * (1 + 8 + 1)
    assert result["events_per_second"] > 0
