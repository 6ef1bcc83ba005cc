"""Stopping background tasks is bounded (trix.runtime.tasks): a cancellation swallowed once,
as Python 3.11's wait_for can when a reply races it, is repeated; a task that never stops
is reported and left behind instead of hanging the shutdown. A task started kept is held
until it ends, and is what such a stop cancels."""

from __future__ import annotations

import asyncio
import contextlib
import time

from trix.runtime.tasks import cancel_and_wait, start_kept


async def _swallows_one_cancel(beats: list[float]) -> None:
    swallowed = False
    while True:
        try:
            await asyncio.sleep(0.01)
        except asyncio.CancelledError:
            if swallowed:
                raise
            swallowed = True  # what 3.11's wait_for does when the awaited reply wins the race
        beats.append(time.monotonic())


async def _never_stops(stop: asyncio.Event) -> None:
    while not stop.is_set():
        with contextlib.suppress(asyncio.CancelledError):
            await asyncio.sleep(0.01)


async def _fails() -> None:
    raise RuntimeError("boom")


async def test_a_cancellation_swallowed_once_is_repeated_and_the_task_ends() -> None:
    beats: list[float] = []
    task = asyncio.ensure_future(_swallows_one_cancel(beats))
    await asyncio.sleep(0.05)
    started = time.monotonic()
    assert await cancel_and_wait([task], timeout_s=0.5) == 0
    assert task.cancelled()
    assert time.monotonic() - started < 2.0  # one round of 0.5 s at most, then the second cancel
    assert beats, "the task went on after the first cancel, as a swallowed cancellation does"


async def test_a_task_that_ignores_cancellation_is_left_and_the_stop_is_bounded() -> None:
    stop = asyncio.Event()
    task = asyncio.ensure_future(_never_stops(stop))
    try:
        await asyncio.sleep(0.05)  # running (a task cancelled before its first step never runs)
        started = time.monotonic()
        left = await cancel_and_wait([task], timeout_s=0.2)
        took = time.monotonic() - started
        assert left == 1 and not task.done()
        assert 0.4 <= took < 2.0, took  # two rounds of 0.2 s, then it gives up
    finally:
        stop.set()  # the test's own task ends: nothing left for the loop's teardown
        await asyncio.wait({task}, timeout=5)
    assert task.done()


async def test_exceptions_of_ended_tasks_are_retrieved() -> None:
    failed = asyncio.ensure_future(_fails())
    await asyncio.sleep(0)
    await asyncio.sleep(0)
    assert failed.done()
    assert await cancel_and_wait([failed]) == 0
    assert failed._log_traceback is False  # retrieved: no "never retrieved" at GC


async def test_a_kept_task_is_held_until_it_ends_then_dropped() -> None:
    kept: set[asyncio.Task[int]] = set()
    release = asyncio.Event()

    async def work() -> int:
        await release.wait()
        return 7

    task = start_kept(kept, work())
    await asyncio.sleep(0)
    assert kept == {task} and not task.done()
    release.set()
    assert await task == 7
    await asyncio.sleep(0)  # the done callback runs one loop step later
    assert kept == set()


async def test_the_kept_tasks_are_what_a_stop_cancels() -> None:
    kept: set[asyncio.Task[None]] = set()
    for _ in range(3):
        start_kept(kept, asyncio.sleep(3600))
    tasks = set(kept)
    assert await cancel_and_wait(kept, timeout_s=2.0) == 0
    assert all(t.cancelled() for t in tasks)
    await asyncio.sleep(0)
    assert kept == set()
