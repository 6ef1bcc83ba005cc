"""The 40 example records (docs/rules.md §12 format, tests/golden) replay
to exactly their expected scores, totals and ranking: through the Python model and
through the C engine (`impl` is parametrized over both; see conftest.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
from engine_support import EXAMPLE_FILES, EXPECTED_EXAMPLES, Impl

from trix.records import read_record_file, replay


def test_all_example_records_are_present() -> None:
    assert len(EXAMPLE_FILES) == EXPECTED_EXAMPLES


@pytest.mark.parametrize("path", EXAMPLE_FILES, ids=lambda p: p.stem)
def test_example_replays_to_expected_scores_totals_ranking(impl: Impl, path: Path) -> None:
    record = read_record_file(str(path))
    result = replay(record, impl.Game, impl.Options)
    assert result.differences == []
    completed = result.record
    for d, (given, replayed) in enumerate(zip(record["deals"], completed["deals"], strict=True)):
        assert replayed["scores"] == given["scores"], f"deal {d}"
        assert replayed["owner"] == given["owner"], f"deal {d}"
    assert completed["totals"] == record["totals"]
    assert completed["ranking"] == record["ranking"]


@pytest.mark.parametrize("path", EXAMPLE_FILES, ids=lambda p: p.stem)
def test_example_game_record_matches_input(impl: Impl, path: Path) -> None:
    """Game.record() after the replay gives back the record's deals (docs/engine-api.md)."""
    record = read_record_file(str(path))
    games: list[object] = []

    def factory(*args: object) -> object:
        games.append(impl.Game(*args))
        return games[-1]

    replay(record, factory, impl.Options)
    produced = games[0].record()  # type: ignore[attr-defined]
    assert len(produced["deals"]) == len(record["deals"])
    for d, (given, made) in enumerate(zip(record["deals"], produced["deals"], strict=True)):
        for key in ("owner", "contract", "doubles", "plays", "scores"):
            assert made[key] == given[key], f"deal {d} {key}"
        assert [sorted(h) for h in made["hands"]] == [sorted(h) for h in made["hands"]]
    assert produced["totals"] == record["totals"]
    assert produced["ranking"] == record["ranking"]
    assert produced.get("left") == record.get("left")
