"""The one `eventually` of the tests: poll a condition until it holds or a deadline passes."""

from __future__ import annotations

import asyncio
import inspect
import time
from collections.abc import Awaitable, Callable
from typing import Any

EVENTUALLY_S = 30.0
"""The default deadline: generous, the shared 2-core box is often saturated."""


async def eventually(
    check: Callable[[], Awaitable[Any] | Any],
    timeout_s: float = EVENTUALLY_S,
    what: str = "condition",
    interval_s: float = 0.05,
) -> Any:
    """The first truthy result of `check()` (awaited when it is a coroutine); an
    AssertionError naming `what` when none came within `timeout_s`."""
    deadline = time.monotonic() + timeout_s
    while True:
        result = check()
        if inspect.isawaitable(result):
            result = await result
        if result:
            return result
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout_s}s waiting for {what}")
        await asyncio.sleep(interval_s)
