"""The one manual clock of the tests.

`ManualClock` is the timers' clock that moves only when the test says (`advance`, `set`;
trix.timers.clock), also callable as `() -> float` for the services that take a plain
time function (matchmaking's `clock`), and with `datetime()` for the table service.
"""

from __future__ import annotations

from trix.timers.clock import ManualClock as _ManualClock


class ManualClock(_ManualClock):
    """Wall time that moves only by `advance` / `set`; `clock()` is `clock.now()`."""

    def __call__(self) -> float:
        return self.now()
