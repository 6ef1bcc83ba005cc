"""The timers' ports: what `TimersService` is given, as Protocols, and what they answer.

Owns `DocStore` (JSON documents with compare-and-set: JetStream KV in production) with its
`CasConflict`, and `TableCommands` (AutoAct, Leave, ReclaimSeat to the table's owner) with
its `Outcome`, implemented by `trix.timers.adapters`; and `Clock` (wall time and waiting for
an instant), implemented by `trix.timers.clock`.
"""

from __future__ import annotations

from enum import Enum
from typing import Any, Protocol


class Outcome(Enum):
    """The table's answer to a command of the timers."""

    ACCEPTED = "accepted"
    REFUSED = "refused"
    """The table said no for good: the turn moved on (a human move won), the seat already left..."""
    UNAVAILABLE = "unavailable"
    """No answer (owner down, handover): the claim goes stale and the command is sent again."""


class CasConflict(Exception):
    """The document changed since it was read (another replica wrote it)."""


class DocStore(Protocol):
    """Durable JSON documents with compare-and-set (JetStream KV)."""

    async def get(self, key: str) -> tuple[dict[str, Any] | None, int]:
        """The document and its revision; (None, 0) if missing."""
        ...

    async def put(self, key: str, doc: dict[str, Any], revision: int, ttl_s: float = 0.0) -> int:
        """Write if the stored revision is still `revision` (0: the key must not exist); CasConflict if not.
        `ttl_s` > 0: the document is removed that long after this write (a finished table's)."""
        ...


class TableCommands(Protocol):
    """The commands the timers send to a table's owner (docs/rules.md §9, §10)."""

    async def auto_act(self, table_id: str, seat: int, turn_seq: int) -> Outcome: ...

    async def leave(self, table_id: str, seat: int, reason: int, action_id: str) -> Outcome: ...

    async def reclaim(self, table_id: str, seat: int, action_id: str) -> Outcome: ...


class Clock(Protocol):
    """Wall time in unix seconds, and a way to wait for an instant."""

    def now(self) -> float: ...

    async def sleep_until(self, when: float) -> None:
        """Return once `now() >= when` (or later)."""
        ...
