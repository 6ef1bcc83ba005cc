"""What the engine tests share: the two implementations of docs/engine-api.md (the
pure-Python model, tests/engine/model.py, and the C engine, trix.engine) and where the
golden records are (tests/support/golden.py).

A module of its own, not conftest.py: `from conftest import ...` picks whichever
conftest was imported last when several test folders run together.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

from support.golden import EXPECTED_GOLDEN, GOLDEN_DIR, golden_files

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]

EXAMPLES_DIR = GOLDEN_DIR
EXAMPLE_FILES = golden_files()
EXPECTED_EXAMPLES = EXPECTED_GOLDEN


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
