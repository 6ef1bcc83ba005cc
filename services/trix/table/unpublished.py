"""Tables whose log holds entries whose results may not be on TABLE_RESULTS yet (issue 42).

Owns `Unpublished`: the rule that every entry appended to a table's log reaches TABLE_RESULTS,
in order, exactly once. An owner that appended an entry but could not finish it (its
results' publish, the players' index written at the game's end, or the rebuild that
publishes them failed: NATS electing a leader, a refusal, a cancelled command) drops the
table from memory, so nothing is appended after results that are not stored (scoring applies
a table's results by sequence and ignores one older than the last it applied), and keeps
the table it held before (`bases`, a prefix of the log). The table is rebuilt from there
by its next command or, for a finished table nobody commands, by a retry here; the rebuild
publishes what TABLE_RESULTS lacks (`EventSink.publish_missing_results`, in
`TableService._recover_one`, the one place results are published again: nothing here
publishes) before the table serves again. A table whose shard moves goes from here too: its
next owner's rebuild publishes what is missing. Nothing here runs on the move path, only
after a failure.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

import structlog

from trix.runtime.tasks import cancel_and_wait, start_kept
from trix.table.table import Table

log = structlog.get_logger("trix.table")

RETRY_FIRST_S = 0.25
"""The first retry of a table's rebuild comes this long after the failure; the pause doubles."""
RETRY_MOST_S = 2.0
"""The longest pause between two retries (a NATS election lasts 4-9 s)."""


class Unpublished:
    """The tables to rebuild before they serve again (see the module docstring)."""

    def __init__(self, rebuild: Callable[[str], Awaitable[None]], may_write: Callable[[str], bool]) -> None:
        self.bases: dict[str, Table | None] = {}
        """Table -> the table it was rebuilt from last (a prefix of its log), None: from its
        snapshot. Cleared by the rebuild that published its results, or the shard's loss."""
        self._rebuild = rebuild
        self._may_write = may_write
        self._tasks: dict[str, asyncio.Task[None]] = {}
        self._kept: set[asyncio.Task[None]] = set()

    def keep(self, table_id: str, base: Table | None, error: BaseException) -> None:
        """The table is out of memory and must be rebuilt from `base` before it serves again;
        retried here until it is (its commands may do it first)."""
        if table_id not in self.bases:  # a retry's failure is logged by the retry
            self.bases[table_id] = base
            log.warning(
                "table not served until rebuilt from its log (its results may not be stored)",
                table_id=table_id,
                error=type(error).__name__,
            )
        task = self._tasks.get(table_id)
        if task is None or task.done():
            self._tasks[table_id] = start_kept(self._kept, self._retry(table_id))

    def done(self, table_id: str) -> None:
        """Rebuilt, its results stored (or its shard gone: the next owner publishes them)."""
        self.bases.pop(table_id, None)

    async def _retry(self, table_id: str) -> None:
        pause = RETRY_FIRST_S
        try:
            while table_id in self.bases:
                await asyncio.sleep(pause)
                pause = min(2 * pause, RETRY_MOST_S)
                if table_id not in self.bases or not self._may_write(table_id):
                    continue  # a lapsed lease renewed serves it again; a lost shard clears it
                try:
                    await self._rebuild(table_id)
                except Exception as exc:  # noqa: BLE001 - NATS still away: try again
                    log.info("table rebuild failed, retrying", table_id=table_id, error=type(exc).__name__)
        finally:
            self._tasks.pop(table_id, None)

    async def stop(self) -> None:
        await cancel_and_wait(list(self._kept))
