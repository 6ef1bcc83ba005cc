"""Shared test support, one copy of each helper (issue 17).

Loaded through the root `tests/conftest.py`; `tests/` is on the import path by the
pytest setting `pythonpath` (pyproject.toml), so tests write `from support.golden import ...`
and no conftest edits `sys.path`.
"""
