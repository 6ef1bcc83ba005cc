"""`with` and `async with` for the objects that start and stop the local platform
(`trix.supervisor.Supervisor`, `trix.embedded.EmbeddedPlatform`): a blocking `start` and
`stop` made a context manager once.
"""

from __future__ import annotations

import asyncio
from types import TracebackType
from typing import Self


class StartStop:
    """`with` and `async with` for an object with a blocking `start` and `stop`: started on
    entry (and stopped again if the start fails), stopped on exit; `async with` runs both in
    a worker thread, so the event loop goes on meanwhile."""

    def start(self) -> object:
        raise NotImplementedError

    def stop(self) -> None:
        raise NotImplementedError

    def __enter__(self) -> Self:
        try:
            self.start()
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(self, *_exc: object) -> None:
        self.stop()

    async def __aenter__(self) -> Self:
        try:
            await asyncio.to_thread(self.start)
        except BaseException:
            await asyncio.to_thread(self.stop)
            raise
        return self

    async def __aexit__(
        self, _type: type[BaseException] | None, _exc: BaseException | None, _tb: TracebackType | None
    ) -> None:
        await asyncio.to_thread(self.stop)
