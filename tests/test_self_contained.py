"""The repository stands on its own (issue 17): no tracked file names a path of this
machine outside the repository, the rules its code cites are in it (docs/rules.md) and
the golden records its tests replay are in it (tests/golden).

Checked over the files git tracks (or, outside a git checkout, every file below the
repository but build and tool output).
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

from support.golden import EXPECTED_GOLDEN, GOLDEN_DIR, golden_files

REPO = Path(__file__).resolve().parents[1]
RULES = REPO / "docs" / "rules.md"

# Absolute paths of a machine (a workplace folder, a home directory) and the relative way
# out of the repository to its neighbours. Spelled in pieces so this file does not match.
OUTSIDE = re.compile(
    "|".join(
        [
            r"(?<![\w.~-])/" + "work/",
            r"(?<![\w.~-])/" + "root/",
            r"(?<![\w.~-])/" + r"home/\w",
            r"(?<![\w.~-])/" + r"Users/\w",
            r"\.\./+" + "shared",
        ]
    )
)
# Where a tool writes, never what the repository reads: skipped when walking a tree.
UNTRACKED_DIRS = {".git", ".venv", ".state", "__pycache__", ".mypy_cache", ".ruff_cache", ".pytest_cache", "build"}


def tracked_files() -> list[Path]:
    try:
        out = subprocess.run(
            ["git", "-C", str(REPO), "ls-files", "-z"], check=True, capture_output=True, timeout=60
        ).stdout
    except (OSError, subprocess.CalledProcessError):
        return [
            p
            for p in REPO.rglob("*")
            if p.is_file() and not UNTRACKED_DIRS.intersection(p.relative_to(REPO).parts[:-1])
        ]
    return [REPO / name for name in out.decode().split("\0") if name]


def text_of(path: Path) -> str | None:
    try:
        data = path.read_bytes()
    except OSError:
        return None  # a tracked file deleted in the working tree
    if b"\0" in data:
        return None  # binary (images, compiled data)
    return data.decode("utf-8", errors="replace")


def test_no_tracked_file_names_a_path_outside_the_repository() -> None:
    files = tracked_files()
    assert len(files) > 100, f"only {len(files)} files found below {REPO}"
    found = []
    for path in files:
        text = text_of(path)
        if text is None:
            continue
        for number, line in enumerate(text.splitlines(), 1):
            match = OUTSIDE.search(line)
            if match:
                found.append(f"{path.relative_to(REPO)}:{number}: {match.group(0)!r} in {line.strip()[:120]!r}")
    assert not found, "paths outside the repository:\n" + "\n".join(found)


def rules_sections() -> set[str]:
    return set(re.findall(r"^## (\d+)\. ", RULES.read_text("utf-8"), flags=re.MULTILINE))


def test_rules_document_has_every_section_one_to_fourteen() -> None:
    assert rules_sections() == {str(n) for n in range(1, 15)}


def test_every_rules_citation_names_a_section_of_docs_rules_md() -> None:
    sections = rules_sections()
    cite = re.compile(r"rules\.md,? *((?:§ ?\d+[,;]? *(?:and|or)? *)+)", re.IGNORECASE)
    cited: dict[str, list[str]] = {}
    for path in tracked_files():
        text = text_of(path)
        if text is None:
            continue
        for match in cite.finditer(text):
            for number in re.findall(r"§ ?(\d+)", match.group(1)):
                cited.setdefault(number, []).append(str(path.relative_to(REPO)))
    assert len(cited) >= 10, f"only sections {sorted(cited)} cited: is the pattern still right?"
    missing = {n: places[:3] for n, places in cited.items() if n not in sections}
    assert not missing, f"citations of sections docs/rules.md does not have: {missing}"


def test_golden_records_are_all_in_the_repository_and_in_the_manifest() -> None:
    files = golden_files()
    assert len(files) == EXPECTED_GOLDEN
    manifest = {line.split("\t", 1)[0] for line in (GOLDEN_DIR / "MANIFEST.txt").read_text("utf-8").splitlines()}
    assert {p.name for p in files} == manifest
