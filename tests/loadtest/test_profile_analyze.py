"""`loadtest/profile/analyze.py` (ADR 0010 "Where the time goes"): py-spy's collapsed stacks
become each function's share of a process's samples, self and inclusive."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

import pytest

ANALYZE = Path(__file__).resolve().parents[2] / "loadtest" / "profile" / "analyze.py"


def _analyze() -> ModuleType:
    spec = importlib.util.spec_from_file_location("trix_profile_analyze", ANALYZE)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_a_function_counts_once_per_stack_inclusive_and_at_the_top_only_as_self(tmp_path: Path) -> None:
    raw = tmp_path / "spy-42.txt"
    raw.write_text(
        "thread (0x1);main (x/services/trix/a.py:1);run (x/services/trix/a.py:2);f (x/services/trix/b.py:3) 6\n"
        "thread (0x1);main (x/services/trix/a.py:1);f (x/services/trix/b.py:3);f (x/services/trix/b.py:3) 3\n"
        "thread (0x1);main (x/services/trix/a.py:1) 1\n"
    )
    total, own, inclusive = _analyze().shares(raw)
    assert total == 10
    assert own == {"trix/b.py:f": 9, "trix/a.py:main": 1}
    assert "thread (0x1)" not in inclusive  # py-spy's thread frames are not functions
    assert inclusive["trix/a.py:main"] == 10 and inclusive["trix/b.py:f"] == 9 and inclusive["trix/a.py:run"] == 6


def test_the_report_names_each_process_and_its_share_of_a_core(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "ps.txt").write_text(
        "  PID  PPID %CPU COMMAND\n"
        "   42     1 30.0 /x/python -m trix.gateway\n"
        "   43     1 20.0 /x/python -c from multiprocessing.spawn import spawn_main\n"
    )
    (tmp_path / "spy-42.txt").write_text("main (x/services/trix/gateway/service.py:9) 250\n")
    (tmp_path / "spy-43.txt").write_text("")
    assert _analyze().main(["analyze.py", str(tmp_path), "10", "50"]) == 0
    out = capsys.readouterr().out
    assert "=== gateway pid 42: 250 samples = 50% of a core" in out
    assert "100.0%  trix/gateway/service.py:main" in out
    assert "pid 43" not in out  # no samples, no section
    assert _analyze().main(["analyze.py"]) == 2
