"""Shared fixtures of the engine tests: the Python model and the C engine side by side.

`engine` is parametrized over both implementations of docs/engine-api.md. The C
engine is imported inside the fixture, so if `trix.engine` cannot be imported the
engine-parametrized tests FAIL (with the ImportError); they are never skipped.
The golden records live in tests/golden (tests/support/golden.py); a missing or short
set is a collection error, never zero tests. The shared names are in engine_support.py.
"""

from __future__ import annotations

import pytest
from engine_support import Impl, load_impl


@pytest.fixture(params=["model", "engine"])
def impl(request: pytest.FixtureRequest) -> Impl:
    return load_impl(request.param)


@pytest.fixture
def model_impl() -> Impl:
    return load_impl("model")
