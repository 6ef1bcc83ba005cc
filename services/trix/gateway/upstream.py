"""gRPC clients of the gateway: matchmaking and scoring.

Owns `GrpcMatchmaking` and `GrpcScoring`: every call has a deadline and, to matchmaking, the
player's `x-trix-identity` token. A refusal becomes the domain error of its status with the
upstream's public message; an upstream failure becomes UNAVAILABLE without its text. A
find-match answered UNAVAILABLE is asked again with the same request id for up to
`ENQUEUE_RETRY_S`, riding out a bucket's election (ADR 0021).
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import AsyncIterator

import grpc

from trix import tls
from trix.errors import (
    AlreadyExists,
    DomainError,
    IllegalMove,
    InvalidArgument,
    NotFound,
    PermissionDenied,
    ResourceExhausted,
    StaleTurn,
    Unavailable,
)
from trix.runtime.identity import IDENTITY_METADATA, ROLE_PLAYER, sign
from trix.v1 import gateway_pb2, matchmaking_pb2, matchmaking_pb2_grpc, scoring_pb2_grpc

_PASSED: dict[grpc.StatusCode, type[DomainError]] = {
    grpc.StatusCode.INVALID_ARGUMENT: InvalidArgument,
    grpc.StatusCode.NOT_FOUND: NotFound,
    grpc.StatusCode.ALREADY_EXISTS: AlreadyExists,
    grpc.StatusCode.FAILED_PRECONDITION: IllegalMove,
    grpc.StatusCode.ABORTED: StaleTurn,
    grpc.StatusCode.PERMISSION_DENIED: PermissionDenied,
    grpc.StatusCode.RESOURCE_EXHAUSTED: ResourceExhausted,
}
PASSED_ERRORS: frozenset[type[DomainError]] = frozenset(_PASSED.values())
"""The refusals an upstream's answer reaches the client as (anything else: UNAVAILABLE)."""
WATCH_DEADLINE_S = 3600.0
ENQUEUE_RETRY_S = 20.0
"""How long a find-match is asked again while matchmaking is unavailable: past a NATS election
(4-9 s) and a call timeout, within the 30 s after which matchmaking expires a ticket left
HOLDING by an attempt that stopped midway (a retry resumes it)."""
RETRIED: frozenset[grpc.StatusCode] = frozenset({grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED})


class PlayerUpstream:
    """What the gateway's clients of a service called for a player share: its address, the CA
    its certificate is checked against (empty: plain text), the channel (opened in the serving
    loop on first use: grpc.aio binds a channel to its loop), the player-role key each call's
    token is signed with, and the calls' deadline."""

    def __init__(self, target: str, player_key: bytes, timeout_s: float, *, ca_file: str = "") -> None:
        self.target = target
        self.ca_file = ca_file
        self.key = player_key
        self.timeout_s = timeout_s
        self.channel: grpc.aio.Channel | None = None

    def opened(self) -> grpc.aio.Channel:
        if self.channel is None:
            self.channel = tls.aio_channel(self.target, self.ca_file)
        return self.channel

    async def close(self) -> None:
        if self.channel is not None:
            await self.channel.close()


def domain_error(err: grpc.aio.AioRpcError, what: str) -> DomainError:
    cls = _PASSED.get(err.code())
    if cls is not None:
        return cls((err.details() or what)[:300])
    return Unavailable(f"{what} is unavailable; retry")


class GrpcMatchmaking(PlayerUpstream):
    """`MatchmakingPort` over `trix.v1.MatchmakingService`."""

    _stub: matchmaking_pb2_grpc.MatchmakingServiceAsyncStub | None = None

    @property
    def stub(self) -> matchmaking_pb2_grpc.MatchmakingServiceAsyncStub:
        if self._stub is None:
            self._stub = matchmaking_pb2_grpc.MatchmakingServiceStub(self.opened())
        return self._stub

    def _md(self, player_id: str) -> tuple[tuple[str, str], ...]:
        if not self.key:
            return ()
        return ((IDENTITY_METADATA, sign(self.key, ROLE_PLAYER, player_id, time.time())),)

    async def enqueue(
        self, player_id: str, request: gateway_pb2.FindMatchRequest, display_name: str = ""
    ) -> matchmaking_pb2.Ticket:
        req = matchmaking_pb2.EnqueueTicketRequest(
            player_id=player_id,
            wish=request.wish,
            partner_id=request.partner_id,
            client_seed=request.client_seed,
            display_name=display_name,
            request_id=uuid.uuid4().hex,  # every attempt of this find-match: one ticket
        )
        loop = asyncio.get_running_loop()
        deadline = loop.time() + ENQUEUE_RETRY_S
        delay = 0.2
        while True:
            try:
                reply = await self.stub.EnqueueTicket(req, timeout=self.timeout_s, metadata=self._md(player_id))
            except grpc.aio.AioRpcError as err:
                if err.code() not in RETRIED or loop.time() + delay >= deadline:
                    raise domain_error(err, "matchmaking") from None
                await asyncio.sleep(delay)
                delay = min(delay * 2, 1.0)
                continue
            return reply.ticket

    async def cancel(self, player_id: str, ticket_id: str) -> matchmaking_pb2.Ticket:
        req = matchmaking_pb2.CancelTicketRequest(player_id=player_id, ticket_id=ticket_id)
        try:
            reply = await self.stub.CancelTicket(req, timeout=self.timeout_s, metadata=self._md(player_id))
        except grpc.aio.AioRpcError as err:
            raise domain_error(err, "matchmaking") from None
        return reply.ticket

    async def watch(self, player_id: str, ticket_id: str) -> AsyncIterator[matchmaking_pb2.WatchTicketResponse]:
        req = matchmaking_pb2.WatchTicketRequest(player_id=player_id, ticket_id=ticket_id, queue_status=True)
        call = self.stub.WatchTicket(req, timeout=WATCH_DEADLINE_S, metadata=self._md(player_id))
        try:
            async for reply in call:
                yield reply
        except grpc.aio.AioRpcError as err:
            raise domain_error(err, "matchmaking") from None
        finally:
            call.cancel()

    async def create_private(
        self, player_id: str, request: gateway_pb2.CreatePrivateGameRequest, display_name: str = ""
    ) -> gateway_pb2.CreatePrivateGameResponse:
        req = matchmaking_pb2.CreatePrivateTableRequest(
            player_id=player_id, wish=request.wish, client_seed=request.client_seed, display_name=display_name
        )
        try:
            reply = await self.stub.CreatePrivateTable(req, timeout=self.timeout_s, metadata=self._md(player_id))
        except grpc.aio.AioRpcError as err:
            raise domain_error(err, "matchmaking") from None
        return gateway_pb2.CreatePrivateGameResponse(code=reply.code, ticket=reply.ticket)

    async def join_private(
        self, player_id: str, request: gateway_pb2.JoinPrivateGameRequest, display_name: str = ""
    ) -> matchmaking_pb2.Ticket:
        req = matchmaking_pb2.JoinPrivateTableRequest(
            player_id=player_id, code=request.code, client_seed=request.client_seed, display_name=display_name
        )
        try:
            reply = await self.stub.JoinPrivateTable(req, timeout=self.timeout_s, metadata=self._md(player_id))
        except grpc.aio.AioRpcError as err:
            raise domain_error(err, "matchmaking") from None
        return reply.ticket

    async def start_private(self, player_id: str, code: str, partner: int = 0) -> str:
        req = matchmaking_pb2.StartPrivateTableRequest(player_id=player_id, code=code, partner=partner)
        try:
            reply = await self.stub.StartPrivateTable(req, timeout=self.timeout_s, metadata=self._md(player_id))
        except grpc.aio.AioRpcError as err:
            raise domain_error(err, "matchmaking") from None
        return str(reply.table_id)

    async def get_private(self, player_id: str, code: str) -> gateway_pb2.GetPrivateGameResponse:
        req = matchmaking_pb2.GetPrivateTableRequest(player_id=player_id, code=code)
        try:
            reply = await self.stub.GetPrivateTable(req, timeout=self.timeout_s, metadata=self._md(player_id))
        except grpc.aio.AioRpcError as err:
            raise domain_error(err, "matchmaking") from None
        return gateway_pb2.GetPrivateGameResponse(players=reply.players, closed=reply.closed)


class GrpcScoring:
    """`ScoringPort` over `trix.v1.ScoringService`."""

    def __init__(self, target: str, timeout_s: float, player_key: bytes = b"", *, ca_file: str = "") -> None:
        self.target = target
        self.ca_file = ca_file
        self.channel: grpc.aio.Channel | None = None
        self._stub: scoring_pb2_grpc.ScoringServiceAsyncStub | None = None
        self.timeout_s = timeout_s
        self.key = player_key
        """Signs the player's token on wallet reads (scoring answers them for that player only)."""

    def _md(self, player_id: str) -> tuple[tuple[str, str], ...]:
        if not self.key or not player_id:
            return ()
        return ((IDENTITY_METADATA, sign(self.key, ROLE_PLAYER, player_id, time.time())),)

    @property
    def stub(self) -> scoring_pb2_grpc.ScoringServiceAsyncStub:
        if self._stub is None:  # one stub for the channel, not one per call
            self.channel = tls.aio_channel(self.target, self.ca_file)
            self._stub = scoring_pb2_grpc.ScoringServiceStub(self.channel)
        return self._stub

    async def query(self, request: gateway_pb2.QueryRequest, player_id: str = "") -> gateway_pb2.QueryResponse:
        """Scoring's answer; standings, histories and records asked with `player_id`'s token (a
        private table's are its players' only)."""
        which = request.WhichOneof("query")
        out = gateway_pb2.QueryResponse()
        t = self.timeout_s
        try:
            if which == "standings":
                out.standings.CopyFrom(
                    await self.stub.GetStandings(request.standings, timeout=t, metadata=self._md(player_id))
                )
            elif which == "history":
                out.history.CopyFrom(
                    await self.stub.ListHistory(request.history, timeout=t, metadata=self._md(player_id))
                )
            elif which == "live_tables":
                out.live_tables.CopyFrom(await self.stub.ListLiveTables(request.live_tables, timeout=t))
            elif which == "game_record":
                record = await self.stub.GetGameRecord(request.game_record, timeout=t, metadata=self._md(player_id))
                out.game_record.CopyFrom(record)
            elif which == "leaderboard":
                out.leaderboard.CopyFrom(await self.stub.GetLeaderboard(request.leaderboard, timeout=t))
            elif which == "player_stats":
                out.player_stats.CopyFrom(await self.stub.GetPlayerStats(request.player_stats, timeout=t))
            elif which == "balance":
                md = self._md(request.balance.player_id)
                out.balance.CopyFrom(await self.stub.GetBalance(request.balance, timeout=t, metadata=md))
            elif which == "ledger":
                md = self._md(request.ledger.player_id)
                out.ledger.CopyFrom(await self.stub.ListLedger(request.ledger, timeout=t, metadata=md))
            else:
                raise InvalidArgument("the query is empty")
        except grpc.aio.AioRpcError as err:
            raise domain_error(err, "scoring") from None
        return out

    async def close(self) -> None:
        if self.channel is not None:
            await self.channel.close()
