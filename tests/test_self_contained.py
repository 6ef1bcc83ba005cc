"""The repository stands on its own (issue 17): no tracked file names a path of this
machine outside the repository, the rules its code cites are in it (docs/rules.md), every
document a file cites is in it (issue 38) and the golden records its tests replay are in
it (tests/golden).

Checked over the files git tracks (or, outside a git checkout, every file below the
repository but build and tool output).
"""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path, PurePosixPath

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
# A document cited by name: a markdown file (`docs/rules.md`, `loadtest/README.md`, a bare
# `README.md`) or any path below docs/ (`docs/adr/`, `docs/adr/0004` for an ADR by number).
MARKDOWN = re.compile(r"(?<![\w/.-])((?:\.{1,2}/)*(?:[\w-][\w.-]*/)*[\w-][\w.-]*\.md)(?![\w-])")
DOCS_PATH = re.compile(r"(?<![\w/.-])(docs/[\w./-]*[\w/])")
ADR_BY_NUMBER = re.compile(r"docs/adr/(\d{4})")
# A URL names a document elsewhere on purpose: left out before looking for citations.
URL = re.compile(r"[a-z][a-z0-9+.-]*://\S+", re.IGNORECASE)
# Generated code is checked by its own drift checks, not read for citations.
GENERATED = ("services/trix/v1/", "web/src/gen/")
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


def test_rules_document_has_every_section_one_to_fifteen() -> None:
    """§1-§14 the game; §15 table talk (issue 44). Sections are amended, never renumbered."""
    assert rules_sections() == {str(n) for n in range(1, 16)}


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


class Documents:
    """What the repository holds, to resolve a citation against: its files, their folders
    and their names."""

    def __init__(self, files: list[Path]) -> None:
        self.files = {p.relative_to(REPO).as_posix() for p in files}
        self.folders = {str(parent) for f in self.files for parent in PurePosixPath(f).parents}
        self.names = {PurePosixPath(f).name for f in self.files}

    def holds(self, cited: str, citing: str) -> bool:
        """Whether `cited`, written in file `citing`, names a file or folder of the repository:
        a bare name anywhere in it, a path from its root or from the citing file's folder."""
        if "/" not in cited:
            return cited in self.names
        if number := ADR_BY_NUMBER.fullmatch(cited):
            return any(f.startswith(f"docs/adr/{number.group(1)}-") for f in self.files)
        for path in (cited, f"{PurePosixPath(citing).parent}/{cited}"):
            normal = os.path.normpath(path).rstrip("/")
            if normal in self.files or normal in self.folders:
                return True
        return False


def missing_documents(docs: Documents, citing: str, text: str) -> list[str]:
    """`line: citation` for each document `text` (the file `citing`) cites that is not in the repository."""
    found = []
    for number, line in enumerate(text.splitlines(), 1):
        line = URL.sub(" ", line)
        cited = [m.group(1) for m in MARKDOWN.finditer(line)] + [m.group(1) for m in DOCS_PATH.finditer(line)]
        found += [f"{number}: {c}" for c in dict.fromkeys(cited) if not docs.holds(c, citing)]
    return found


def test_no_tracked_file_cites_a_document_that_is_not_in_the_repository() -> None:
    files = tracked_files()
    docs = Documents(files)
    found = []
    cited_rules = 0
    for path in files:
        name = path.relative_to(REPO).as_posix()
        text = text_of(path)
        if text is None or name.startswith(GENERATED):
            continue
        cited_rules += text.count("docs/rules.md")
        found += [f"{name}:{where}" for where in missing_documents(docs, name, text)]
    assert cited_rules > 100, f"docs/rules.md cited only {cited_rules} times: is the file list right?"
    assert not found, "documents cited but not in the repository:\n" + "\n".join(found)


def test_the_citation_check_flags_a_missing_document_and_passes_urls_and_present_ones() -> None:
    docs = Documents(tracked_files())
    # Spelled in pieces so this file itself cites nothing missing.
    absent = "ARCHITECTURE" + ".md"
    lines = [
        f"as {absent} says",  # a document of another folder, by name
        "see docs/" + "nothing-here" + ".md and " + "docs/" + "adr/9999",  # a missing page, a missing ADR
        "https://example.org/STYLE" + ".md and docs/rules.md §7, loadtest/README.md, docs/adr/0004",
        "(README.md, `docs/adr/`, ../docs/deploy.md)",
    ]
    assert missing_documents(docs, "tests/test_file.py", "\n".join(lines)) == [
        f"1: {absent}",
        "2: docs/" + "nothing-here" + ".md",
        "2: docs/" + "adr/9999",
    ]
