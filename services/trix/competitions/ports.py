"""What the competitions service needs from the world (its adapters: `trix.competitions.adapters`).

- `EventLog`: every competition's stored events; an append names the stream sequence of the
  competition's last event it knows (JetStream's expected last subject sequence), so two writers
  can never both append after the same event (`Fenced`);
- `Tables`: a round's table created through the platform's one path (MatchFormed), whether it
  exists and its GameEnded, read back from its durable results;
- `Digests`: where a finished or cancelled competition's file is published, and its digest
  as stored read back;
- `Ledger`: scoring's ledger, where a competition's coins move (docs/adr/0030): an entry posted
  idempotently on its key, a competition's escrow account read back;
- `Notices`: what each entrant is told as his competition moves (docs/adr/0029).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any, Protocol

from trix.errors import Unavailable
from trix.v1 import competitions_pb2, events_pb2

if TYPE_CHECKING:
    from trix.competitions.money import LedgerEntry


class Fenced(Unavailable):
    """Another writer appended to the competition first: the state this one holds is stale."""


class EventLog(Protocol):
    async def append(self, event: competitions_pb2.CompetitionEvent, expected_last: int) -> int:
        """Stores `event` on its competition's subject after `expected_last` (0: the first);
        returns its stream sequence. Raises `Fenced` if another event came after `expected_last`."""
        ...

    def read_all(
        self, after: int = 0, competition_id: str = ""
    ) -> AsyncIterator[tuple[int, competitions_pb2.CompetitionEvent]]:
        """Every stored event after stream sequence `after` in stream order, with its stream
        sequence (only `competition_id`'s if given)."""
        ...


class Tables(Protocol):
    async def create(self, formed: events_pb2.Event) -> None:
        """Has the table of `formed` created (idempotent by its table id)."""
        ...

    async def game_ended(self, table_id: str) -> events_pb2.GameEnded | None:
        """The table's GameEnded once stored, else None."""
        ...

    async def no_shows(self, table_id: str) -> list[str]:
        """The human players who never took their auto-played seat (`trix.competitions.noshows`),
        read from the table's durable results."""
        ...

    async def exists(self, table_id: str) -> bool:
        """Was the table created (its first result stored)? A table made once is never asked
        for again: after it ends and is purged, a second create would make it anew."""
        ...


class Digests(Protocol):
    async def publish(self, competition_id: str, document: dict[str, Any]) -> None: ...

    async def stored_digest(self, competition_id: str) -> str | None:
        """The digest of the competition's file as stored, None if none is (or it is unreadable)."""
        ...


class Ledger(Protocol):
    async def post(self, competition_id: str, entry: LedgerEntry) -> None:
        """Posts the entry (a hold goes on the player's own request being served); a key posted
        before is a no-op. IllegalMove if scoring refuses it (a short balance), Unavailable if
        scoring cannot be reached (try again: the key dedupes)."""
        ...

    async def fees(self, competition_id: str) -> list[LedgerEntry]:
        """Every entry fee scoring holds for the competition (as `hold` entries)."""
        ...


class Notices(Protocol):
    async def publish(self, notices: list[competitions_pb2.CompetitionNotice]) -> None:
        """Tells each notice's player (best effort: never raises)."""
        ...
