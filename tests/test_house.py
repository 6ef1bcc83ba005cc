"""One job per file (issue 38): no hand-written Python module under services/ or loadtest/
is longer than 600 lines. Prints the largest, so a module growing toward the limit shows
before it breaks the build. Generated code (`services/trix/v1/`, from proto/) is left out."""

from __future__ import annotations

import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
MAX_LINES = 600
ROOTS = ("services/", "loadtest/")
GENERATED = ("services/trix/v1/",)
SHOWN = 12


def hand_written_modules() -> list[str]:
    out = subprocess.run(
        ["git", "-C", str(REPO), "ls-files", "-z", "--", *ROOTS], check=True, capture_output=True, timeout=60
    ).stdout
    names = [n for n in out.decode().split("\0") if n.endswith(".py") and not n.startswith(GENERATED)]
    return [n for n in names if (REPO / n).is_file() and not (REPO / n).is_symlink()]


def lines_of(name: str) -> int:
    return len((REPO / name).read_text("utf-8").splitlines())


def test_no_hand_written_module_is_longer_than_600_lines() -> None:
    modules = hand_written_modules()
    assert len(modules) > 50, f"only {len(modules)} modules found under {ROOTS}: is the file list right?"
    sizes = sorted(((lines_of(n), n) for n in modules), reverse=True)
    largest = "\n".join(f"{lines:6d}  {name}" for lines, name in sizes[:SHOWN])
    print(f"largest hand-written modules (limit {MAX_LINES} lines):\n{largest}")
    over = [f"{lines} {name}" for lines, name in sizes if lines > MAX_LINES]
    assert not over, f"{len(over)} modules over {MAX_LINES} lines (split them by responsibility): {over}"
