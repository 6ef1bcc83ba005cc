"""Which asyncio event loop a trix process runs on (ADR 0010, issue 10).

Services, load-test bots and the echo baseline run on uvloop by default: measured on the
2-core box (`trix loadtest peak --tables 40 --duration 30 --no-finish`, A/B in one
session) the platform's CPU per action fell from 8.5 to 5.3 ms and peak went from 135 to
235 actions/s with the same code, mostly in the NATS clients' socket writes and the loop's
own scheduling. `TRIX_EVENT_LOOP=asyncio` selects the standard loop (diagnosis, or a
platform without uvloop wheels); `tests/foundation/test_event_loop_delivery.py` proves
that a lone NATS message or gRPC reply is not left waiting for more traffic on it.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

T = TypeVar("T")

ENV = "TRIX_EVENT_LOOP"
CHOICES = ("uvloop", "asyncio")


def loop_kind() -> str:
    """The configured loop: "uvloop" (default) or "asyncio"."""
    kind = os.environ.get(ENV, "").strip() or "uvloop"
    if kind not in CHOICES:
        raise ValueError(f"{ENV} must be one of {', '.join(CHOICES)}, not {kind!r}")
    return kind


def loop_factory() -> Callable[[], asyncio.AbstractEventLoop] | None:
    """A factory for `asyncio.Runner`, or None for the standard loop."""
    if loop_kind() == "asyncio":
        return None
    import uvloop

    return uvloop.new_event_loop


def run(main: Coroutine[Any, Any, T]) -> T:
    """`asyncio.run` on the configured loop."""
    with asyncio.Runner(loop_factory=loop_factory()) as runner:
        return runner.run(main)
