"""Which asyncio event loop a trix process runs on (ADR 0010).

Services, load-test bots and the echo baseline run on uvloop by default (the measurement is
in ADR 0010); `TRIX_EVENT_LOOP=asyncio` selects the standard loop.
`tests/foundation/test_event_loop_delivery.py` proves that a lone NATS message or gRPC reply
is not left waiting for more traffic.
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
