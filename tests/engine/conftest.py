"""Shared fixtures of the engine tests: the Python model and the C engine side by side.

`engine` is parametrized over both implementations of docs/engine-api.md. The C
engine is imported inside the fixture, so if `trix.engine` cannot be imported the
engine-parametrized tests FAIL (with the ImportError); they are never skipped.
The example records live in RULES.md's shared folder (env TRIX_EXAMPLES_DIR).
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import sys
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))  # `import model`
if importlib.util.find_spec("trix") is None:
    # Not installed: use the working tree's services (trix.engine then cannot import).
    sys.path.insert(0, str(REPO / "services"))

EXAMPLES_DIR = Path(os.environ.get("TRIX_EXAMPLES_DIR", "/work/shared/examples/games"))
EXAMPLE_FILES = sorted(EXAMPLES_DIR.glob("game_*.json"))
EXPECTED_EXAMPLES = 40


@dataclass(frozen=True)
class Impl:
    """One implementation of the engine API: its module, Game and Options."""

    name: str
    module: ModuleType

    @property
    def Game(self) -> Any:
        return self.module.Game

    @property
    def Options(self) -> Any:
        return self.module.Options


def load_impl(name: str) -> Impl:
    if name == "model":
        return Impl("model", importlib.import_module("model"))
    return Impl("engine", importlib.import_module("trix.engine"))  # ImportError = failure


@pytest.fixture(params=["model", "engine"])
def impl(request: pytest.FixtureRequest) -> Impl:
    return load_impl(request.param)


@pytest.fixture
def model_impl() -> Impl:
    return load_impl("model")
