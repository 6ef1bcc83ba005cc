"""`trix verify` checks the whole record (issue 39, docs/rules.md §11, §12): the commitment,
every deal's hands, the number of deals, the play replayed through the C engine, every
deal's points, the totals and the ranking, one line per check; a finished game's record
cut, edited, with two cards swapped into an illegal order or with a card its seat never
held is refused (exit 1, the failing check named on the last line)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from engine_support import EXAMPLE_FILES
from test_records_cli import trix

from support.altered import KINDS, altered_path, altered_records, dump
from trix import engine
from trix.verification import verify_record

SEEDED = [p for p in EXAMPLE_FILES if (json.loads(p.read_text("utf-8")).get("fairness") or {}).get("server_seed")]


def test_altered_records_are_the_generated_ones() -> None:
    for kind, record in altered_records(engine.Game, engine.Options).items():
        assert altered_path(kind).read_text("utf-8") == dump(record), f"{kind}: run `python -m support.altered`"


@pytest.mark.parametrize("path", SEEDED, ids=lambda p: p.stem)
def test_verify_passes_every_golden_record_with_a_revealed_seed(path: Path) -> None:
    result = trix("verify", str(path), model=False)
    assert result.returncode == 0, result.stdout + result.stderr
    lines = result.stdout.splitlines()
    for check in ("commitment: ok", "deals: ok", "play: ok", "deal scores: ok", "totals: ok", "ranking: ok"):
        assert sum(line.startswith(check) for line in lines) == 1, (check, result.stdout)
    assert lines[-1] == "verified: all good"


EXPECTED = {
    "cut": (
        "verification FAILED (deals, totals, ranking)",
        ["deals: FAILED, 10 of the 20 deals of a TRIX game", "totals: MISMATCH", "ranking: MISMATCH"],
    ),
    "edited": (
        "verification FAILED (deal scores, totals, ranking)",
        ["deals: ok", "play: ok", "deal scores: MISMATCH, 1 deal differs", "totals: MISMATCH", "ranking: MISMATCH"],
    ),
    "swapped": ("verification FAILED (play)", ["play: FAILED, deal 0, play 1: must follow suit (H)"]),
    "foreign": ("verification FAILED (play)", ["play: FAILED, deal 1, play 0: card not in hand (3C)"]),
}


@pytest.mark.parametrize("kind", KINDS)
def test_verify_refuses_an_altered_record_naming_the_failing_check(kind: str) -> None:
    result = trix("verify", str(altered_path(kind)), model=False)
    assert result.returncode == 1, result.stdout + result.stderr
    assert result.stderr == ""
    verdict, found = EXPECTED[kind]
    lines = result.stdout.splitlines()
    assert lines[0] == "commitment: ok, SHA-256(server_seed) matches"
    assert lines[-1] == verdict
    for start in found:
        assert any(line.startswith(start) for line in lines), (start, result.stdout)


def test_verify_record_lists_each_check_once_on_a_partnership_game_left_early() -> None:
    path = next(p for p in SEEDED if p.stem == "game_0030")  # a seat left a paid table
    report = verify_record(json.loads(path.read_text("utf-8")), engine.Game, engine.Options)
    assert report.ok, report.lines
    assert any(line.startswith("deals: ok, 3 of 8, seat 1 left for good") for line in report.lines)
