"""The committed fairness vectors of the browser client are what `trix.fairness` computes
today (docs/rules.md §11): regenerate them and compare, so the TypeScript Verify code
(web/test/fairness.test.ts reads the same file) cannot drift from the Python side."""

from __future__ import annotations

import fairness_vectors


def test_browser_fairness_vectors_are_what_python_computes() -> None:
    committed = fairness_vectors.VECTORS.read_text(encoding="utf-8")
    assert committed == fairness_vectors.render(), "run: .venv/bin/python tests/web/fairness_vectors.py"
