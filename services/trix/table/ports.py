"""The table service's ports, as `Protocol`s: `TableStore` (each table's log, snapshots,
seeds, the players' current tables) with the errors of an append (`LogConflict`,
`StaleWriter`), `EventSink` (an action's events to their readers, its results to scoring)
and `NewTable` (what builds the service on them); the shard leases' ports, `LeaseStore` and
`ShardHost`, are `trix.natsio.leases`'. Implemented on NATS in `adapters` and
`entrypoints`."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from typing import TYPE_CHECKING, Protocol

from trix.table.config import TableConfig
from trix.table.table import Routed
from trix.v1 import events_pb2

if TYPE_CHECKING:
    from trix.table.service import TableService


class LogConflict(Exception):
    """The log's last sequence is not the one expected: another writer appended (stale owner)."""


class StaleWriter(Exception):
    """The log's last entry was written under a newer lease epoch than this replica's: another
    replica won the table's shard after it. Never retried here: the table is not
    this replica's any more."""


class TableStore(Protocol):
    """Durable storage of tables (JetStream in production)."""

    async def append(self, table_id: str, entry: bytes, msg_id: str, expected_last: int) -> int:
        """Append to the table's log; returns the entry's log sequence; LogConflict on a wrong
        expected_last, StaleWriter if the entry at expected_last has a newer writer epoch."""
        ...

    def read_log(self, table_id: str, after: int) -> AsyncIterator[tuple[int, bytes]]: ...

    async def log_tables(self) -> list[str]: ...

    async def keep_secret(self, table_id: str, seed: bytes) -> bytes:
        """Store `seed` unless the table has one; returns the table's seed (the first stored)."""
        ...

    async def get_secret(self, table_id: str) -> bytes | None: ...

    async def put_snapshot(self, table_id: str, data: bytes) -> None: ...

    async def get_snapshot(self, table_id: str) -> bytes | None: ...

    async def set_player_table(self, player_id: str, table_id: str) -> None: ...

    async def end_player_table(self, player_id: str, table_id: str) -> None:
        """The player's index entry, if it still names `table_id`, says that game is over."""

    async def purge_table(self, table_id: str) -> None:
        """Remove the table's log, then its snapshot, then its server seed (idempotent)."""
        ...


class EventSink(Protocol):
    """Where events go (the table's feed and public subject, docs/rules.md §14; the results scoring
    needs on their durable stream)."""

    async def publish(
        self, table_id: str, routed: list[Routed], cause: events_pb2.ActionCause | None = None, *, results: bool = True
    ) -> bool:
        """An action's event copies to their readers, and (`results`) its results durably
        (awaited); `cause`: the seat action they answer, if a player's. True when the feed
        batch carrying `cause` was handed to NATS (the action is announced: `ANNOUNCED`)."""
        ...

    async def publish_results(self, table_id: str, routed: list[Routed]) -> None:
        """Only the durable results among `routed`, in order (each stored once by its message id)."""
        ...

    async def publish_missing_results(self, table_id: str, routed: list[Routed]) -> None:
        """Only the durable results among `routed` that the stream does not hold yet (a rebuild:
        an append's publishing may have failed or been cut short by a crash), in order."""
        ...


class NewTable(Protocol):
    """Builds the service from its adapters (`TableService` itself; tests add a clock, seeds)."""

    def __call__(
        self,
        config: TableConfig,
        store: TableStore,
        sink: EventSink,
        *,
        may_write: Callable[[str], bool],
        on_stale_writer: Callable[[str], None],
    ) -> TableService: ...
