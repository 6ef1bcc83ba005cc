"""The golden game records: 40 games in the §12 record format (docs/rules.md), kept in
`tests/golden/` beside the tests that replay them, with `MANIFEST.txt` naming what each
one exercises.

One place for every test and benchmark that reads them. A missing folder, an empty
one or a short one is an error at collection (`GoldenRecordsMissing`), so the golden
tests fail instead of turning into zero tests.
"""

from __future__ import annotations

from pathlib import Path

GOLDEN_DIR = Path(__file__).resolve().parents[1] / "golden"
EXPECTED_GOLDEN = 40


class GoldenRecordsMissing(RuntimeError):
    """The golden records are not all where the tests expect them."""


def golden_files(directory: Path = GOLDEN_DIR, expected: int = EXPECTED_GOLDEN) -> list[Path]:
    """The golden record files in name order; raises unless there are exactly `expected`."""
    files = sorted(directory.glob("game_*.json")) if directory.is_dir() else []
    if len(files) != expected:
        raise GoldenRecordsMissing(f"{directory}: {len(files)} golden records (game_*.json), expected {expected}")
    return files


def golden(name: str) -> Path:
    """One golden record by its stem (`game_0003`); raises if it is absent."""
    path = GOLDEN_DIR / f"{name}.json"
    if not path.is_file():
        raise GoldenRecordsMissing(f"{path}: golden record missing")
    return path
