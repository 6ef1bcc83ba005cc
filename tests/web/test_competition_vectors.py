"""The committed competition file of the browser's competition check is what the service's core
publishes today (docs/adr/0026): regenerated and compared, and verified by `trix
verify-competition`'s checks, so the TypeScript check (web/test/competition_check.test.ts reads
the same file) cannot drift from the Python side."""

from __future__ import annotations

import json

import competition_vectors

import trix.engine as engine
from trix.competitions.verify import verify_competition


def test_the_browser_competition_file_is_what_the_core_publishes_and_it_verifies() -> None:
    committed = competition_vectors.FILE.read_text(encoding="utf-8")
    assert committed == competition_vectors.render(), "run: .venv/bin/python tests/web/competition_vectors.py"
    report = verify_competition(json.loads(committed), engine.Game, engine.Options)
    assert report.ok, report.lines
    assert report.lines[-1] == "verified: all good"
