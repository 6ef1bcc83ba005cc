#!/usr/bin/env python3
"""Per process of a `profile_run.sh` run: the share of its py-spy samples by function, self and
inclusive (ADR 0010 "Where the time goes").

usage: analyze.py DIR SECONDS RATE [TOP]
"""

from __future__ import annotations

import collections
import re
import sys
from pathlib import Path

FRAME = re.compile(r"(.*) \((.*?):(\d+)\)")
SERVICE = re.compile(r"-m trix\.(\w+)")


def process_names(ps_txt: Path) -> dict[str, str]:
    """pid -> what it is (a service's name, the bots, the runner), from `ps.txt`."""
    names: dict[str, str] = {}
    for line in ps_txt.read_text().splitlines()[1:]:
        parts = line.split(None, 3)
        if len(parts) < 4:
            continue
        pid, cmd = parts[0], parts[3]
        found = SERVICE.search(cmd)
        if found:
            names[pid] = found.group(1)
        elif "spawn_main" in cmd:
            names[pid] = "bots"
        else:
            names[pid] = "runner" if "loadtest" in cmd else cmd[:30]
    return names


def short(frame: str) -> str:
    """`function (path:line)` -> `path:function`, the path from the package on."""
    found = FRAME.match(frame)
    if not found:
        return frame
    path = re.sub(r".*/site-packages/", "", found.group(2))
    path = re.sub(r".*/services/", "", path)
    path = re.sub(r".*/python3\.11/", "py/", path)
    return f"{path}:{found.group(1)}"


def shares(raw: Path) -> tuple[int, collections.Counter[str], collections.Counter[str]]:
    """(samples, self counts, inclusive counts) of one py-spy raw (collapsed stacks) file."""
    own: collections.Counter[str] = collections.Counter()
    inclusive: collections.Counter[str] = collections.Counter()
    total = 0
    for line in raw.read_text().splitlines():
        stack, _, count = line.rstrip().rpartition(" ")
        if not stack:
            continue
        n = int(count)
        frames = [short(f) for f in stack.split(";") if not f.startswith(("process ", "thread "))]
        total += n
        if frames:
            own[frames[-1]] += n
        for frame in set(frames):
            inclusive[frame] += n
    return total, own, inclusive


def main(argv: list[str]) -> int:
    if len(argv) < 4:
        print(__doc__, file=sys.stderr)
        return 2
    folder, seconds, rate = Path(argv[1]), float(argv[2]), float(argv[3])
    top = int(argv[4]) if len(argv) > 4 else 15
    names = process_names(folder / "ps.txt")
    for raw in sorted(folder.glob("spy-*.txt")):
        pid = raw.stem.removeprefix("spy-")
        total, own, inclusive = shares(raw)
        if total == 0:
            continue
        print(f"=== {names.get(pid, pid)} pid {pid}: {total} samples = {total / rate / seconds:.0%} of a core")
        print("  self:")
        for frame, n in own.most_common(top):
            print(f"   {100 * n / total:5.1f}%  {frame}")
        print("  inclusive:")
        for frame, n in inclusive.most_common(top + 10):
            print(f"   {100 * n / total:5.1f}%  {frame}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
