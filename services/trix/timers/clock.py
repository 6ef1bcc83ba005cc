"""Time for the timers: the real clock and a manual clock for tests (the `ports.Clock`).

Deadlines are wall-clock instants (unix seconds) because they are shared between
processes: the table writes them into TurnStarted for the client's countdown, the
timers store them in JetStream KV and any replica, after any restart, compares them
with its own `now()`. Waiting uses the event loop's monotonic timer and re-reads the
wall clock on waking, so a wall-clock step never makes a deadline fire early.
`ManualClock` moves only when a test calls `advance`; the table service can share it
(`ManualClock.datetime`) so a test controls both sides of a deadline.
"""

from __future__ import annotations

import asyncio
import time
from datetime import UTC, datetime


class SystemClock:
    """The production clock: `time.time()`, waits on the loop's monotonic timer."""

    def now(self) -> float:
        return time.time()

    async def sleep_until(self, when: float) -> None:
        while (left := when - time.time()) > 0:  # noqa: ASYNC110 - re-read the wall clock after waking
            await asyncio.sleep(left)

    def datetime(self) -> datetime:
        return datetime.fromtimestamp(self.now(), UTC)


class ManualClock:
    """A clock that moves only when `advance` or `set` is called (tests)."""

    def __init__(self, start: float = 1_800_000_000.0) -> None:
        self._now = start
        self._waiters: list[tuple[float, asyncio.Future[None]]] = []

    def now(self) -> float:
        return self._now

    def datetime(self) -> datetime:
        return datetime.fromtimestamp(self._now, UTC)

    async def sleep_until(self, when: float) -> None:
        if when <= self._now:
            return
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._waiters.append((when, future))
        try:
            await future
        finally:
            self._waiters = [(w, f) for w, f in self._waiters if f is not future]

    def set(self, when: float) -> None:
        self._now = max(self._now, when)
        for w, future in list(self._waiters):
            if w <= self._now and not future.done():
                future.set_result(None)

    def advance(self, seconds: float) -> None:
        self.set(self._now + seconds)
