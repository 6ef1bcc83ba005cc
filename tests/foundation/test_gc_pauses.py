"""Every service process logs a full collection of Python's cyclic collector that stopped it
longer than `GC_PAUSE_LOG_S` (`trix.runtime.server.tune_gc`): in a 1,000-table run such a
pause (0.38 s of the table, 0.46 s of the gateway) was every player's stall (issue 16). Run
in a child process, so the test's own collector settings stay as they are."""

from __future__ import annotations

import json
import subprocess
import sys

CHILD = """
import gc, json, sys
import structlog
from structlog.testing import capture_logs
from trix.runtime import server

with capture_logs() as logs:
    server.tune_gc()
    young = [[i] for i in range(200_000)]  # tracked containers a full collection must scan
    server.GC_PAUSE_LOG_S = 0.0
    gc.collect(2)
    server.GC_PAUSE_LOG_S = 3600.0
    gc.collect(2)
    gc.collect(0)
json.dump([{k: v for k, v in e.items() if k in ("event", "seconds", "tracked")} for e in logs], sys.stdout)
"""


def test_a_long_full_collection_is_logged_with_its_duration_and_a_short_or_young_one_is_not() -> None:
    done = subprocess.run([sys.executable, "-c", CHILD], capture_output=True, text=True, timeout=120, check=True)
    logged = json.loads(done.stdout.strip().splitlines()[-1])
    pauses = [e for e in logged if e["event"] == "gc pause"]
    assert len(pauses) == 1, logged  # the one past the limit; not the short one, not gen 0
    assert pauses[0]["seconds"] >= 0.0 and pauses[0]["tracked"] >= 200_000
