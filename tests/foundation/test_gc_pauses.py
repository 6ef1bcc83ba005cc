"""Every service process logs a full collection of Python's cyclic collector that stopped it
longer than `GC_PAUSE_LOG_S` (`trix.runtime.server.tune_gc`): in a 1,000-table run such a
pause (0.38 s of the table, 0.46 s of the gateway) was every player's stall (issue 16). Run
in a child process, so the test's own collector settings stay as they are."""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

CHILD = """
import gc, json, sys
import structlog
from structlog.testing import capture_logs
from trix.runtime import server

with capture_logs() as logs:
    server.GC_FREEZE_PROMOTED = False  # the logging alone: every survivor stays for the full collection
    server.tune_gc()
    young = [[i] for i in range(200_000)]  # tracked containers a full collection must scan
    server.GC_PAUSE_LOG_S = 0.0
    gc.collect(2)
    server.GC_PAUSE_LOG_S = 3600.0
    gc.collect(2)
    gc.collect(0)
json.dump([{k: v for k, v in e.items() if k in ("event", "seconds", "tracked")} for e in logs], sys.stdout)
"""


EPILOGUE = """
out["events"] = [e["event"] for e in logs]
json.dump(out, sys.stdout)
"""


def _child(script: str) -> Any:
    """`script` run in a fresh interpreter (its own collector settings); what it printed last, as JSON."""
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120, check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_a_long_full_collection_is_logged_with_its_duration_and_a_short_or_young_one_is_not() -> None:
    logged = _child(CHILD)
    pauses = [e for e in logged if e["event"] == "gc pause"]
    assert len(pauses) == 1, logged  # the one past the limit; not the short one, not gen 0
    assert pauses[0]["seconds"] >= 0.0 and pauses[0]["tracked"] >= 200_000


CYCLES = """
def self_referencing(n):
    made = []
    for i in range(n):
        a = [i]
        a.append(a)
        made.append(a)
    return made
"""

FREEZE_CHILD = (
    CYCLES
    + """
import gc, json, sys
from structlog.testing import capture_logs
from trix.runtime import server

out = {}
with capture_logs() as logs:
    server.GC_FREEZE_PROMOTED = False  # only what a long full collection leaves is frozen here
    server.tune_gc()
    policy = gc.callbacks[-1]
    server.GC_FREEZE_S = 0.0  # every full collection is long enough to freeze what it leaves
    sessions = [[i] for i in range(200_000)]  # long-lived tracked containers
    gc.collect(2)
    out["frozen_after_long"] = gc.get_freeze_count()
    server.GC_FREEZE_S = 3600.0
    gc.collect(2)
    out["scanned_next"] = len(gc.get_objects(2))  # what the next full collection still scans
    # cyclic garbage among frozen objects: frozen alive, then dropped
    server.GC_FREEZE_S = 0.0
    server.GC_THAW_MIN = 0
    server.GC_THAW_GROWTH = 1_000_000.0
    cycles = self_referencing(100_000)
    gc.collect(2)
    del cycles
    out["frozen_with_garbage"] = gc.get_freeze_count()
    server.GC_THAW_GROWTH = 1.2  # now more than 1.2 x the live objects are frozen
    server.GC_THAW_EVERY_S = 3600.0
    gc.collect(2)
    out["thaws_within_the_interval"] = policy.thaws  # a complete collection was just made at start
    server.GC_THAW_EVERY_S = 0.0  # due: give them back
    gc.collect(2)
    out["thaws"] = policy.thaws
    out["collected_after_thaw"] = gc.collect(2)  # the complete collection frees the frozen garbage
    out["live_after_complete"] = policy.live
    out["frozen_at_end"] = gc.get_freeze_count()
    gc.callbacks.remove(policy)
    del sessions
"""
)


def test_a_long_full_collection_freezes_its_survivors_and_too_many_frozen_are_given_back() -> None:
    """ADR 0024: what outlived a long full collection is frozen, so the next full collection
    does not scan it again; once the frozen outnumber GC_THAW_GROWTH x the live objects (and
    GC_THAW_EVERY_S passed since the last complete collection) they are unfrozen and the next
    complete collection frees the cyclic garbage among them."""
    out = _child(FREEZE_CHILD + EPILOGUE)
    assert out["frozen_after_long"] >= 200_000, out
    assert out["scanned_next"] < 20_000, out  # the 200,000 are not scanned again
    # 100,000 self-referencing lists dropped while frozen: not freed by reference counting
    assert out["frozen_with_garbage"] >= out["frozen_after_long"] + 100_000, out
    assert out["thaws_within_the_interval"] == 0, out  # at most one complete collection per GC_THAW_EVERY_S
    assert out["thaws"] == 1 and out["events"].count("gc thaw") == 1, out
    assert out["collected_after_thaw"] >= 100_000, out
    assert 200_000 <= out["live_after_complete"] < out["frozen_with_garbage"] - 90_000, out
    assert out["frozen_at_end"] >= out["live_after_complete"], out  # the complete collection's survivors, frozen


PROMOTED_CHILD = (
    CYCLES
    + """
import gc, json, sys
from structlog.testing import capture_logs
from trix.runtime import server

out = {}
with capture_logs() as logs:
    server.tune_gc()
    policy = gc.callbacks[-1]
    start = gc.get_freeze_count()
    sessions = [[i] for i in range(200_000)]  # long-lived: they outlive the young collections
    gc.collect(1)
    out["frozen_by_young"] = gc.get_freeze_count() - start
    out["oldest_after_young"] = len(gc.get_objects(2))
    out["full_collected"] = gc.collect(2)
    out["full_scanned"] = len(gc.get_objects(2))
    # cyclic garbage promoted and frozen waits for the thaw, then a complete collection frees it
    cycles = self_referencing(100_000)
    gc.collect(1)
    del cycles
    out["collected_while_frozen"] = gc.collect(2)
    server.GC_THAW_MIN = 0
    server.GC_THAW_GROWTH = 1.0
    server.GC_THAW_EVERY_S = 0.0
    gc.collect(2)  # the interval is over and the frozen are too many: given back
    out["thaws"] = policy.thaws
    server.GC_THAW_EVERY_S = 3600.0
    gc.collect(1)  # thawing: nothing is frozen before the complete collection
    out["collected_by_complete"] = gc.collect(2)
    gc.collect(1)  # the next young collection freezes the promoted again, however short the complete one was
    out["frozen_at_end"] = gc.get_freeze_count()
    gc.callbacks.remove(policy)
    del sessions
"""
)


def test_what_outlives_the_young_collections_is_frozen_so_a_full_collection_scans_only_the_rest() -> None:
    """ADR 0024, GC_FREEZE_PROMOTED: objects promoted to the oldest generation are frozen at
    once, so a full collection (a stall of the whole process) never scans a gateway's
    sessions; cyclic garbage among them waits for the thaw, whose complete collection frees it."""
    out = _child(PROMOTED_CHILD + EPILOGUE)
    assert out["frozen_by_young"] >= 200_000, out
    assert out["oldest_after_young"] < 20_000, out
    assert out["full_scanned"] < 20_000, out
    assert out["collected_while_frozen"] < 1_000, out  # the frozen cycles are not freed yet
    assert out["thaws"] == 1 and out["events"].count("gc thaw") == 1, out
    assert out["collected_by_complete"] >= 100_000, out
    assert out["frozen_at_end"] >= 200_000, out  # the sessions, frozen again by the next young collection
