"""What drives the competitions service besides its gRPC API: `Ticker`, the loop that moves
every competition on by the clock and its tables' results (`CompetitionsService.tick`)."""

from __future__ import annotations

import asyncio
import contextlib

import structlog

from trix.competitions.service import CompetitionsService

log = structlog.get_logger("trix.competitions")


class Ticker:
    """Calls `service.tick` every `tick_s` until stopped (a failed tick is logged and tried again)."""

    def __init__(self, service: CompetitionsService) -> None:
        self.service = service
        self.task: asyncio.Task[None] | None = None

    async def start(self) -> None:
        self.task = asyncio.create_task(self._run(), name="competitions-tick")

    async def _run(self) -> None:
        while True:
            try:
                await self.service.tick()
            except Exception as exc:  # noqa: BLE001 - the next tick tries again
                log.warning("tick failed", error=repr(exc))
            await asyncio.sleep(self.service.config.tick_s)

    async def stop(self) -> None:
        if self.task is not None:
            self.task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self.task
            self.task = None
