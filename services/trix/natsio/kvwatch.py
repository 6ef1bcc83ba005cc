"""Watching a key-value bucket: every key's latest value first, then each change.

Owns `watch_bucket`: a task feeding each entry of the bucket to a callback (nats-py's
`watchall`, an ordered consumer), returned once the stored values are in; stopping the task
stops the consumer. The table replicas' lease and heartbeat watchers and their seeds' watch.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable

from nats.js.kv import KeyValue


async def watch_bucket(kv: KeyValue, on_entry: Callable[[KeyValue.Entry], None]) -> asyncio.Task[None]:
    """Feed every entry of `kv` to `on_entry`; returns once the current values are in."""
    watcher = await kv.watchall()
    ready = asyncio.get_running_loop().create_future()

    async def run() -> None:
        try:
            async for entry in watcher:
                if entry is None:
                    if not ready.done():
                        ready.set_result(None)
                    continue
                on_entry(entry)
        finally:
            with contextlib.suppress(Exception):  # its consumer goes (or expires, NATS away)
                await asyncio.wait_for(watcher.stop(), 2.0)  # type: ignore[no-untyped-call]

    task = asyncio.ensure_future(run())
    await asyncio.wait({task, ready}, return_when=asyncio.FIRST_COMPLETED)
    return task
