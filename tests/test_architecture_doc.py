"""docs/architecture.md names only what the repository holds (issue 38): every path it cites
exists, every module, class, method, proto message and C function it names is defined, so a
module moved or renamed fails here until the page follows it."""

from __future__ import annotations

import re
from functools import cache
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PAGE = REPO / "docs" / "architecture.md"

# A path of the repository: a top-level folder, then anything but a placeholder (`<service>`).
PATH = re.compile(r"(?<![\w/.-])((?:services|engine|loadtest|tests|deploy|proto|web|docs|mk)/[\w./-]*)")
CODE = re.compile(r"`([^`]+)`")
# NATS subjects look like module paths (`trix.table.live`): the subject words of trix.natsio.
SUBJECT = re.compile(
    r"trix\.(table\.(cmd|log|snap|evt|live|served|results)|presence|gateway\.online|match\.formed|timers\.(autoact|leave)|scoring\.(journal|archived)|social\.(chat|evt|reports|send))\b"
)
# Where `trix.<a>` lives when it is not below services/trix.
PACKAGE_ROOTS = {"engine": REPO / "engine" / "python", "loadtest": REPO / "loadtest" / "python"}


def page() -> str:
    return PAGE.read_text("utf-8")


@cache
def python_sources() -> str:
    roots = [REPO / "services" / "trix", *PACKAGE_ROOTS.values()]
    return "\n".join(p.read_text("utf-8") for root in roots for p in sorted(root.rglob("*.py")) if "v1" not in p.parts)


@cache
def proto_sources() -> str:
    return "\n".join(p.read_text("utf-8") for p in sorted((REPO / "proto").rglob("*.proto")))


@cache
def c_sources() -> str:
    return "\n".join(p.read_text("utf-8") for p in sorted((REPO / "engine").rglob("*.[ch]")))


def module_path(dotted: str) -> Path | None:
    """The file or package folder of module `trix.<...>`, None when there is none."""
    parts = dotted.split(".")[1:]
    if parts and parts[0] in PACKAGE_ROOTS:
        where, parts = PACKAGE_ROOTS[parts[0]], parts[1:]
    else:
        where = REPO / "services" / "trix"
    for part in parts:
        where = where / part
    for candidate in (where.with_suffix(".py"), where / "__init__.py"):
        if candidate.is_file():
            return candidate
    return where if where.is_dir() else None


def defines(source: str, name: str) -> bool:
    """Whether Python `source` defines `name` (a function, class, attribute or constant)."""
    return re.search(rf"^\s*(?:async\s+)?(?:def|class)\s+{name}\b|^\s*{name}\s*[:=]", source, re.MULTILINE) is not None


def undefined_module_reference(token: str) -> str | None:
    """Why `trix.a.b.Name` does not resolve (the longest module prefix, then a name defined in it)."""
    if token.startswith("trix.v1."):  # generated from proto/: the message or service is in the protos
        return undefined_code_name(token.removeprefix("trix.v1."))
    parts = token.split(".")
    for cut in range(len(parts), 1, -1):
        found = module_path(".".join(parts[:cut]))
        if found is None:
            continue
        rest = parts[cut:]
        if not rest:
            return None
        files = [found] if found.is_file() else sorted(found.rglob("*.py"))
        source = "\n".join(f.read_text("utf-8") for f in files)
        return None if defines(source, rest[0]) else f"{rest[0]} is not defined in {'.'.join(parts[:cut])}"
    return "no such module"


def undefined_code_name(token: str) -> str | None:
    """Why `Class`, `Class.member` (Python or proto) or a C function `trix_x` does not resolve."""
    if re.fullmatch(r"trix_\w+", token):
        return None if re.search(rf"\b{token}\s*\(", c_sources()) else "no such C function"
    owner, _, member = token.partition(".")
    python = defines(python_sources(), owner)
    proto = re.search(rf"^\s*(?:message|service|enum)\s+{owner}\b|\brpc\s+{owner}\b", proto_sources(), re.MULTILINE)
    if not (python or proto):
        return f"no class {owner}"
    if member and not (defines(python_sources(), member) or re.search(rf"\b{member}\s*=\s*\d+;", proto_sources())):
        return f"no member {member}"
    return None


def test_every_path_the_architecture_page_cites_exists() -> None:
    cited = {m.group(1).rstrip(".") for m in PATH.finditer(page())}
    assert len(cited) > 20, f"only {len(cited)} paths found: is the pattern still right?"
    missing = sorted(c for c in cited if "<" not in c and not (REPO / c).exists())
    assert not missing, f"docs/architecture.md cites paths that do not exist: {missing}"


def test_every_module_class_and_function_the_architecture_page_names_is_defined() -> None:
    problems = {}
    checked = 0
    prose = re.sub(r"^```.*?^```", "", page(), flags=re.MULTILINE | re.DOTALL)  # the picture, the commands
    for match in CODE.finditer(prose):
        token = re.sub(r"\(.*\)$", "", match.group(1))  # `f(options, decision)` -> `f`
        if not re.fullmatch(r"[A-Za-z_]\w*(\.\w+)*", token):
            continue  # a command, a subject with placeholders, a header, a value
        if token.startswith("trix.") and not SUBJECT.match(token):
            why = undefined_module_reference(token)
        elif re.fullmatch(r"[A-Z][a-z]\w*(\.\w+)?|trix_\w+", token):
            why = undefined_code_name(token)
        else:
            continue
        checked += 1
        if why:
            problems[token] = why
    assert checked > 30, f"only {checked} names checked: is the pattern still right?"
    assert not problems, f"docs/architecture.md names what the code does not define: {problems}"


def test_the_page_answers_the_newcomers_four_questions_in_one_hop() -> None:
    text = page()
    table = text.split("## Where to find it (one hop)", 1)[1].split("\n## ", 1)[0]
    for question in (
        "Where is a card validated?",
        "Where is a turn deadline set?",
        "Where are coins moved?",
        "Which NATS user may write the table log?",
    ):
        assert f"| {question} |" in table, question


def test_the_name_check_refuses_what_the_code_does_not_define() -> None:
    assert undefined_module_reference("trix.table.nothing_here") is not None
    assert undefined_module_reference("trix.rules.no_such_rule") is not None
    assert undefined_code_name("TableService.no_such_method") is not None
    assert undefined_code_name("NoSuchClass") is not None
    assert undefined_code_name("trix_no_such_call") is not None
    assert undefined_module_reference("trix.rules.decision_timeout_s") is None
    assert undefined_code_name("TurnStarted.deadline") is None
