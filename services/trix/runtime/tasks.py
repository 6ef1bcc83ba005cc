"""Stopping background tasks in bounded time (ADR 0020).

Owns `cancel_and_wait`: cancels, waits a bounded time, cancels what still runs once more
(Python 3.11 can swallow a cancellation) and logs what is left instead of hanging the stop.
Owns `start_kept`, the one way a service starts a task it does not await at once: held in a
set until it ends, the set being what its stop cancels.
"""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine, Iterable
from typing import Any, TypeVar

import structlog

log = structlog.get_logger("trix.runtime.tasks")

T = TypeVar("T")

STOP_WAIT_S = 3.0
"""How long each of the two rounds waits for the cancelled tasks to end."""


async def cancel_and_wait(tasks: Iterable[asyncio.Future[Any]], timeout_s: float = STOP_WAIT_S) -> int:
    """Cancel `tasks` and wait for them, at most two rounds of `timeout_s`; the number of
    tasks still running afterwards (0 on a clean stop; the rest are logged, not awaited).
    The exceptions of the tasks that ended are retrieved (as `gather(return_exceptions=True)`
    would), so none is reported as never retrieved."""
    every = list(tasks)
    pending = {t for t in every if not t.done()}
    for _ in range(2):
        if not pending:
            break
        for task in pending:
            task.cancel()
        _, pending = await asyncio.wait(pending, timeout=timeout_s)
    for task in every:
        if task.done() and not task.cancelled():
            task.exception()
    for task in pending:
        stack = task.get_stack(limit=8) if isinstance(task, asyncio.Task) else []
        where = [f"{f.f_code.co_filename}:{f.f_lineno} {f.f_code.co_name}" for f in stack]
        log.error("task did not stop when cancelled twice; left running", task=repr(task)[:200], waiting_in=where)
    return len(pending)


def start_kept(kept: set[asyncio.Task[T]], coro: Coroutine[Any, Any, T]) -> asyncio.Task[T]:
    """`coro` on a task of its own, held in `kept` until it ends: the loop holds a task only
    weakly, so one nobody holds may vanish mid-way (asyncio's "save a reference")."""
    task = asyncio.ensure_future(coro)
    kept.add(task)
    task.add_done_callback(kept.discard)
    return task
