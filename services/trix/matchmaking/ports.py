"""The collaborators the matchmaking logic is given (ports), and the null ones: a
compare-and-set key-value `Store` (JetStream KV in production), a `MatchPublisher`
(MatchFormed on JetStream), a `Wallet` (scoring's HoldStake / ReleaseStake), a `SeatIndex`
(player -> current table) and a `RatingSource`."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Protocol

from trix.errors import Unavailable
from trix.matchmaking.records import MatchRecord

Versioned = tuple[bytes, int]


class Store(Protocol):
    """A key-value store with compare-and-set on a key's revision (JetStream KV)."""

    async def get(self, key: str) -> Versioned | None: ...

    async def create(self, key: str, value: bytes) -> int | None:
        """The new revision, or None if the key exists."""

    async def update(self, key: str, value: bytes, revision: int) -> int | None:
        """The new revision, or None if the key's revision is not `revision`."""

    async def delete(self, key: str, revision: int) -> bool: ...

    async def purge(self, key: str, revision: int) -> None:
        """Remove the key's values up to `revision`, leaving no marker; a newer value stays
        (so it is safe against any concurrent writer)."""

    def watch(self, key: str) -> AsyncIterator[Versioned | None]:
        """The key's current value (None if absent), then every change."""


class MatchPublisher(Protocol):
    """Publishes MatchFormed, idempotently by match id."""

    async def match_formed(self, match: MatchRecord) -> None: ...


class Wallet(Protocol):
    """Scoring's stake holds (docs/rules.md §13), idempotent by ticket id."""

    configured: bool
    """False when there is no wallet at all: a paid ticket is refused before anything is
    written for it."""

    async def hold(self, player_id: str, ticket_id: str, coins: int) -> None:
        """Raises ResourceExhausted when the balance does not cover `coins`."""

    async def release(self, player_id: str, ticket_id: str) -> None: ...


class SeatIndex(Protocol):
    """Player -> the table the player sits at now, if any (the table service's index)."""

    async def current_table(self, player_id: str) -> str | None: ...

    async def has_ended(self, player_id: str, table_id: str) -> bool:
        """Whether the index says the player's game at `table_id` is over."""


class RatingSource(Protocol):
    """A player's rating in a variant, or None if unknown."""

    async def rating(self, player_id: str, variant: int) -> float | None: ...


NO_WALLET = "paid tables are not available: the wallet (scoring service) is not configured"


class NoWallet:
    """The wallet when scoring is not configured: paid tickets are refused."""

    configured = False

    async def hold(self, player_id: str, ticket_id: str, coins: int) -> None:
        raise Unavailable(NO_WALLET)

    async def release(self, player_id: str, ticket_id: str) -> None:
        return None  # without a wallet nothing was ever held


class NoSeatIndex:
    async def current_table(self, player_id: str) -> str | None:
        return None

    async def has_ended(self, player_id: str, table_id: str) -> bool:
        return False  # without the index no game is known to be over: the seat grace holds


class NoRatings:
    async def rating(self, player_id: str, variant: int) -> float | None:
        return None
