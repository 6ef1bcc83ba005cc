"""`trix replay` / `trix verify` run as subprocesses (docs/rules.md §12: a replayer never
crashes): exit 2 with exactly one stderr line and no traceback on a bad record.

Most tests run the CLI with the Python model injected in place of trix.engine (so
they check the CLI, not the engine); `test_real_cli_*` use trix.engine itself and
fail while it cannot be imported.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from engine_support import EXAMPLES_DIR, HERE, REPO

from trix.records import MAX_RECORD_BYTES

WITH_MODEL = (
    "import sys, model, trix.records_cli as c\n"
    "c._load_engine = lambda: (model.Game, model.Options)\n"
    "from trix.cli import main\n"
    "sys.exit(main(sys.argv[1:]))\n"
)
REAL = "import sys\nfrom trix.cli import main\nsys.exit(main(sys.argv[1:]))\n"


def _env() -> dict[str, str]:
    paths = [str(HERE)]
    if importlib.util.find_spec("trix.records") is not None:
        origin = importlib.util.find_spec("trix.records").origin  # type: ignore[union-attr]
        if origin and Path(origin).is_relative_to(REPO / "services"):
            paths.append(str(REPO / "services"))
    return {**os.environ, "PYTHONPATH": os.pathsep.join(paths)}


def trix(*args: str, model: bool = True) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", WITH_MODEL if model else REAL, *args],
        capture_output=True,
        text=True,
        env=_env(),
        timeout=60,
        check=False,
    )


def write(tmp_path: Path, record: Any, name: str = "r.json") -> str:
    path = tmp_path / name
    path.write_text(json.dumps(record, ensure_ascii=False), encoding="utf-8")
    return str(path)


def example(name: str) -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads((EXAMPLES_DIR / f"{name}.json").read_text("utf-8"))
    return loaded


def assert_one_line_exit_2(result: subprocess.CompletedProcess[str]) -> str:
    assert result.returncode == 2, result.stderr
    assert "Traceback" not in result.stderr
    assert result.stdout == ""
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    return lines[0]


def test_replay_prints_completed_record(tmp_path: Path) -> None:
    record = example("game_0001")
    for deal in record["deals"]:
        deal["scores"] = None
    result = trix("replay", write(tmp_path, record))
    assert result.returncode == 0, result.stderr
    assert result.stderr == ""
    out = json.loads(result.stdout)
    assert out["totals"] == example("game_0001")["totals"]
    assert out["deals"][3]["scores"] == example("game_0001")["deals"][3]["scores"]
    assert "Ω" in result.stdout  # ensure_ascii=False: the client seed is printed as is


def test_replay_reports_differences_with_exit_1(tmp_path: Path) -> None:
    record = example("game_0001")
    record["totals"] = [0, 0, 0, 0]
    result = trix("replay", write(tmp_path, record))
    assert result.returncode == 1
    assert result.stderr.startswith("totals: [0, 0, 0, 0] in the record")
    assert json.loads(result.stdout)["totals"] == example("game_0001")["totals"]


@pytest.mark.parametrize(
    "content",
    [b"{not json", b"\xff\xfe garbage", b"[]", b'{"format": "trix-game/1"}', b"[" * 50_000],
)
def test_replay_malformed_exit_2_one_line(tmp_path: Path, content: bytes) -> None:
    path = tmp_path / "bad.json"
    path.write_bytes(content)
    assert_one_line_exit_2(trix("replay", str(path)))


def test_replay_follow_suit_violation_exit_2(tmp_path: Path) -> None:
    from test_records_malformed import _follow_suit_violation

    record, d, p, suit = _follow_suit_violation()
    line = assert_one_line_exit_2(trix("replay", write(tmp_path, record)))
    assert line == f"deal {d}, play {p}: must follow suit ({suit})"


def test_replay_unknown_card_exit_2(tmp_path: Path) -> None:
    record = example("game_0002")
    record["deals"][0]["plays"][0]["card"] = "10H"
    line = assert_one_line_exit_2(trix("replay", write(tmp_path, record)))
    assert line == 'deal 0, play 0: unknown card "10H"'


def test_replay_huge_file_exit_2(tmp_path: Path) -> None:
    path = tmp_path / "huge.json"
    path.write_bytes(b"[" + b"0," * (MAX_RECORD_BYTES // 2 + 10) + b"0]")
    assert "larger than" in assert_one_line_exit_2(trix("replay", str(path)))


def test_replay_missing_file_and_directory_exit_2(tmp_path: Path) -> None:
    assert_one_line_exit_2(trix("replay", str(tmp_path / "missing.json")))
    assert_one_line_exit_2(trix("replay", str(tmp_path)))


def test_verify_good_record_exit_0(tmp_path: Path) -> None:
    result = trix("verify", str(EXAMPLES_DIR / "game_0004.json"))
    assert result.returncode == 0, result.stdout + result.stderr
    assert "commitment: ok" in result.stdout
    assert result.stdout.rstrip().endswith("verified: all good")


def test_verify_tampered_record_exit_1(tmp_path: Path) -> None:
    record = example("game_0004")
    hands = record["deals"][2]["hands"]
    hands[0][0], hands[3][0] = hands[3][0], hands[0][0]
    result = trix("verify", write(tmp_path, record))
    assert result.returncode == 1
    assert "deal 2: hands MISMATCH for seats [0, 3]" in result.stdout
    record = example("game_0004")
    record["fairness"]["commitment"] = "0" * 64
    result = trix("verify", write(tmp_path, record))
    assert result.returncode == 1
    assert "commitment: MISMATCH" in result.stdout


def test_verify_unrevealed_seed_exit_1() -> None:
    result = trix("verify", str(EXAMPLES_DIR / "game_0001.json"))  # server_seed null
    assert result.returncode == 1
    assert "not revealed" in result.stdout


def test_verify_malformed_exit_2(tmp_path: Path) -> None:
    path = tmp_path / "bad.json"
    path.write_bytes(b'{"format": 1')
    assert_one_line_exit_2(trix("verify", str(path)))


def test_real_cli_malformed_record_exit_2_without_engine_work(tmp_path: Path) -> None:
    path = tmp_path / "bad.json"
    path.write_bytes(b"{")
    assert_one_line_exit_2(trix("replay", str(path), model=False))


def test_real_cli_replays_example_through_trix_engine() -> None:
    """Through the C engine: fails (does not skip) while trix.engine cannot import."""
    result = trix("replay", str(EXAMPLES_DIR / "game_0006.json"), model=False)
    assert result.returncode == 0, result.stderr
    out = json.loads(result.stdout)
    assert out["totals"] == example("game_0006")["totals"]
    assert out["ranking"] == example("game_0006")["ranking"]


def test_real_cli_follow_suit_violation_through_trix_engine(tmp_path: Path) -> None:
    from test_records_malformed import _follow_suit_violation

    record, d, p, suit = _follow_suit_violation()
    line = assert_one_line_exit_2(trix("replay", write(tmp_path, record), model=False))
    assert line == f"deal {d}, play {p}: must follow suit ({suit})"
