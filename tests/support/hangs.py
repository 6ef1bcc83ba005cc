"""A hung asyncio test fails with the await it hangs in, not with a bare `select()`.

pytest-timeout's signal shows where the main thread is when time runs out, which for an
asyncio test is always the event loop's `select()`: the coroutine that never resumes is
not on any thread's stack. This watchdog fires `HANG_S` before pytest-timeout would,
prints the stack of every task of the running loops and cancels the test's own task, so
the failure's traceback ends at the await that never returned (and the test's `finally`
blocks still run on a live loop, stopping what the test started).
"""

from __future__ import annotations

import asyncio
import gc
import sys
import threading
from collections.abc import Iterator

import pytest

HANG_MARGIN_S = 30.0
"""The watchdog fires this long before the test's pytest-timeout."""


def _running_loops() -> list[asyncio.AbstractEventLoop]:
    return [o for o in gc.get_objects() if isinstance(o, asyncio.BaseEventLoop) and o.is_running()]


def _report_and_cancel(name: str) -> None:
    out = sys.__stderr__
    for loop in _running_loops():
        try:
            tasks = list(asyncio.all_tasks(loop))
        except RuntimeError:  # the set changed under us: one more try is enough for a report
            tasks = list(asyncio.all_tasks(loop))
        if out is not None:
            out.write(f"\n--- {len(tasks)} asyncio tasks of {name} at its hang deadline ---\n")
            for task in tasks:
                task.print_stack(limit=12, file=out)
        for task in tasks:
            coro = task.get_coro()
            if getattr(coro, "__name__", "") == name:
                loop.call_soon_threadsafe(task.cancel)


def _timeout_of(item: pytest.Item) -> float | None:
    marker = item.get_closest_marker("timeout")
    if marker is not None and marker.args:
        return float(marker.args[0])
    value = item.config.getoption("timeout", None) or item.config.getini("timeout")
    return float(value) if value else None


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Iterator[None]:
    timeout = _timeout_of(item)
    name = getattr(getattr(item, "obj", None), "__name__", "")
    if not timeout or timeout <= HANG_MARGIN_S or not asyncio.iscoroutinefunction(getattr(item, "obj", None)):
        return (yield)
    timer = threading.Timer(timeout - HANG_MARGIN_S, _report_and_cancel, args=(name,))
    timer.daemon = True
    timer.start()
    try:
        return (yield)
    finally:
        timer.cancel()
