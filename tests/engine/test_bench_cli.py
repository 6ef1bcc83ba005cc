"""`trix bench engine`, `trix bench bot` and `trix selfplay` run and print what issue 2 asks.

Speed is measured by the benchmark, never asserted here: only the shape of the
output and that every figure is a positive number.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from trix.bench import find_model
from trix.cli import main

pytest.importorskip("trix.engine", exc_type=ImportError)

ENGINE_KEYS = (
    "api_moves_per_s",
    "model_moves_per_s",
    "playout_moves_per_s",
    "replay_records_per_s",
    "baseline_python_loop_per_s",
    "api_vs_baseline_python_loop",
    "api_vs_openspiel",
    "playout_vs_openspiel_cpp",
)


def test_bench_engine_prints_one_json_object_with_positive_figures(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["bench", "engine", "--seconds", "0.2"]) == 0
    out = capsys.readouterr().out.strip().splitlines()
    assert len(out) == 1
    result = json.loads(out[0])
    assert isinstance(result, dict)
    for key in ENGINE_KEYS:
        assert key in result, key
        assert isinstance(result[key], int | float) and result[key] > 0, (key, result[key])


def test_bench_bot_prints_one_json_line_per_variant(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["bench", "bot", "--games", "8"]) == 0
    lines = [json.loads(line) for line in capsys.readouterr().out.strip().splitlines()]
    assert [d["variant"] for d in lines] == ["TRIX", "TRIX_PARTNERSHIP", "COMPLEX", "COMPLEX_PARTNERSHIP"]
    for d in lines:
        assert {"variant", "win_rate", "avg_points", "vs_random", "vs_lowest", "setup"} <= set(d)
        for key in ("vs_random", "vs_lowest"):
            assert 0 <= d[key]["win_rate"] <= 1
            assert {"avg_points", "opponents_avg_points"} <= set(d[key])


def test_selfplay_two_games_exits_zero(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["selfplay", "--games", "2"]) == 0
    out = capsys.readouterr().out.strip().splitlines()
    assert len(out) == 4


def test_selfplay_json_summary_per_variant(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["selfplay", "--variant", "COMPLEX", "--games", "3", "--seed", "4", "--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert d["variant"] == "COMPLEX" and d["games"] == 3
    assert len(d["avg_scores"]) == 4 and sum(d["wins"]) >= 1 and d["moves"] > 0


def test_selfplay_is_reproducible_with_a_seed(capsys: pytest.CaptureFixture[str]) -> None:
    args = ["selfplay", "--variant", "TRIX", "--games", "3", "--seed", "7", "--json"]
    main(args)
    first = json.loads(capsys.readouterr().out)
    main(args)
    second = json.loads(capsys.readouterr().out)
    assert first["avg_scores"] == second["avg_scores"] and first["moves"] == second["moves"]


def test_bench_model_reported_missing_with_a_reason(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    module, reason = find_model(tmp_path / "a" / "b" / "bench.py")
    assert module is None and reason is not None and "not found" in reason


def test_bench_model_found_from_the_repository() -> None:
    module, reason = find_model()
    assert reason is None and module is not None and hasattr(module, "Game")
