"""The gateway's ports: what `GatewayService` reaches, as `Protocol`s. `TablePort` (table
commands and live events), `AccountsPort` and `PresencePort` are NATS (`adapters`);
`MatchmakingPort` and `ScoringPort` gRPC (`upstream`); `TokenVerifier` the public tokens
(`tokens.HmacTokens`, or a real identity provider's verifier). `SPECTATOR`: the seat a
spectator follows."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from typing import Protocol

from trix.gateway.tokens import Principal
from trix.v1 import events_pb2, gateway_pb2, matchmaking_pb2, table_pb2

SPECTATOR = -1


class TablePort(Protocol):
    """Table commands (NATS requests to the owner) and live events, gaps filled by the owner."""

    async def command(
        self, table_id: str, command: table_pb2.TableCommand, player_id: str, *, action_id: str = ""
    ) -> table_pb2.TableCommandReply:
        """Send a command as the player; raises the table's domain error. A seat action names
        its `action_id`: its acceptance may end the call as its feed batch's cause (the
        reply then carries only the sequence)."""
        ...

    def events(
        self,
        table_id: str,
        seat: int,
        player_id: str,
        after: int = 0,
        invitation: str = "",
        sink: Callable[[events_pb2.Event], bool] | None = None,
    ) -> AsyncIterator[events_pb2.Event]:
        """What the seat (or the public, for SPECTATOR) may see after `after`, then live,
        ending after GameEnded; the owner checks `player_id` (or, for the public events of a
        private table, his `invitation`) may see it. With `sink`, live events that come in
        order while the iterator waits go to `sink` where they arrive instead of being
        yielded (`trix.natsio.seatstream.Sink`): one ordered stream across both ways."""
        ...

    def hear_causes(self, listener: Callable[[str, events_pb2.ActionCause, int], None]) -> None:
        """`listener(table_id, cause, sequence)` hears which seat action each feed batch
        answers, before the batch's events reach any reader (the acceptances)."""
        ...


class MatchmakingPort(Protocol):
    async def enqueue(
        self, player_id: str, request: gateway_pb2.FindMatchRequest, display_name: str = ""
    ) -> matchmaking_pb2.Ticket: ...
    async def cancel(self, player_id: str, ticket_id: str) -> matchmaking_pb2.Ticket: ...
    def watch(self, player_id: str, ticket_id: str) -> AsyncIterator[matchmaking_pb2.WatchTicketResponse]:
        """The ticket's state changes and, while it searches, its queue's status (issue 39)."""

    async def create_private(
        self, player_id: str, request: gateway_pb2.CreatePrivateGameRequest, display_name: str = ""
    ) -> gateway_pb2.CreatePrivateGameResponse: ...
    async def join_private(
        self, player_id: str, request: gateway_pb2.JoinPrivateGameRequest, display_name: str = ""
    ) -> matchmaking_pb2.Ticket: ...
    async def start_private(self, player_id: str, code: str, partner: int = 0) -> str: ...
    async def get_private(self, player_id: str, code: str) -> gateway_pb2.GetPrivateGameResponse: ...


class ScoringPort(Protocol):
    async def query(self, request: gateway_pb2.QueryRequest, player_id: str = "") -> gateway_pb2.QueryResponse:
        """Scoring's answer, asked as `player_id` (a private table's rows are its players' only)."""
        ...


class AccountsPort(Protocol):
    """Guest accounts by hashed device secret (JetStream KV `gateway_accounts`). `until`: the
    `time.monotonic()` by which to answer, asking the bucket again meanwhile if it does not
    answer (its election); None: one attempt."""

    async def get(self, key: str, until: float | None = None) -> bytes | None: ...
    async def create(self, key: str, value: bytes, until: float | None = None) -> bool:
        """Store if absent; False when another sign-in created it first."""
        ...


class PresencePort(Protocol):
    async def publish(self, player_id: str, event: events_pb2.Event) -> None: ...


class TokenVerifier(Protocol):
    """Turns a bearer token into a principal; raises `Unauthenticated` otherwise."""

    def verify(self, token: str, now: float) -> Principal: ...
