"""The gRPC adapter of the gateway service: `trix.v1.GatewayService` <-> `GatewayService`.

Owns proto <-> domain translation, the bearer token of every call (metadata
`authorization: Bearer <token>`; every RPC but SignIn is refused with UNAUTHENTICATED
without a valid one, before anything else happens), the client's address (the edge's
`x-trix-client-address`, believed only beside the edge's secret `x-trix-edge`; else the TCP
peer's host: ADR 0018), the rate limit of plain calls per player, the cap on one player's
concurrent streams, and the decoding of requests: a request that does not decode is answered
with INVALID_ARGUMENT (never the library's INTERNAL), a message above
TRIX_GATEWAY_MAX_MESSAGE_BYTES with RESOURCE_EXHAUSTED by gRPC itself. Status codes
and messages come from `trix.errors` through the runtime interceptor: no exception
text or class name ever reaches a client.
"""

from __future__ import annotations

import asyncio
import contextlib
import hmac
import ipaddress
from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any

import grpc
from google.protobuf import timestamp_pb2
from google.protobuf.message import DecodeError, Message

from trix.errors import InvalidArgument, ResourceExhausted, Unauthenticated
from trix.gateway.competitions_api import CompetitionsGateway, CompetitionsRpcs
from trix.gateway.service import GatewayService
from trix.gateway.session import Session as PlayerSession
from trix.gateway.social_api import social_events
from trix.gateway.tokens import Principal
from trix.runtime.server import ServiceBinding
from trix.v1 import gateway_pb2

SERVICE_NAME = "trix.v1.GatewayService"
EDGE_HEADER = "x-trix-edge"
"""The edge's secret (TRIX_GATEWAY_EDGE_SECRET), set by Envoy on every call it forwards."""
CLIENT_ADDRESS_HEADER = "x-trix-client-address"
"""The client's address as the edge saw it (Envoy's %DOWNSTREAM_REMOTE_ADDRESS_WITHOUT_PORT%)."""
SESSION_HEADER = "x-trix-session"
"""Initial metadata of an accepted Session: the session id. Clients write after it."""
REFUSAL_GRACE_S = 1.0


class Malformed:
    """Stands for a request whose bytes did not decode."""


MALFORMED = Malformed()


def _decoder(cls: type[Message]) -> Callable[[bytes], Any]:
    def decode(data: bytes) -> Any:
        try:
            return cls.FromString(data)
        except (DecodeError, ValueError, RuntimeError):
            return MALFORMED

    return decode


async def _settle_first_write(request_iterator: AsyncIterator[Any]) -> None:
    """Let a refused stream's first client message arrive before the trailers go out.

    A client that writes as soon as it opens the stream (most do) races the refusal: if
    the trailers and RST_STREAM reach it before its first write, grpcio's asyncio client
    reports the failed write as `INTERNAL: Internal error from Core` instead of the
    server's status (grpc/grpc#36066). Waiting (boundedly) for that first message makes
    the write complete before the stream closes, so the client sees UNAUTHENTICATED.
    Clients that wait for the session's headers before writing never race at all.
    """
    with contextlib.suppress(Exception):
        await asyncio.wait_for(anext(aiter(request_iterator), None), REFUSAL_GRACE_S)


def _checked(request: Any) -> Any:
    if isinstance(request, Malformed):
        raise InvalidArgument("the request did not decode")
    return request


Context = grpc.aio.ServicerContext[Any, Any]


class GatewayApi(CompetitionsRpcs):
    """`trix.v1.GatewayService` over `GatewayService` (its competitions RPCs: `CompetitionsRpcs`)."""

    def __init__(self, service: GatewayService, competitions: CompetitionsGateway | None = None) -> None:
        self.service = service
        self.competitions = competitions or CompetitionsGateway(None, service.live.get)
        self.streams: dict[str, int] = {}
        """Open streams per player (Session, Events, Spectate) on this replica."""

    # -- cross-cutting ----------------------------------------------------------------------

    def client_address(self, context: Context) -> str:
        """Who is calling, for the per-address limits (ADR 0018): the address the edge saw,
        when the call carries the edge's secret; otherwise the TCP peer's host (its port
        left out, so new connections get no fresh budget)."""
        metadata = {k: v for k, v in context.invocation_metadata() or () if isinstance(v, str)}
        secret = self.service.config.edge_secret
        offered = metadata.get(EDGE_HEADER, "")
        if secret and offered and hmac.compare_digest(offered.encode(), secret):
            with contextlib.suppress(ValueError):
                return str(ipaddress.ip_address(metadata.get(CLIENT_ADDRESS_HEADER, "").strip()))
        return peer_host(context.peer() or "")

    def _take_stream(self, player_id: str) -> None:
        """One of the player's TRIX_GATEWAY_MAX_STREAMS concurrent streams, or RESOURCE_EXHAUSTED."""
        if self.streams.get(player_id, 0) >= self.service.config.max_streams:
            raise ResourceExhausted("too many open streams: close one first")
        self.streams[player_id] = self.streams.get(player_id, 0) + 1

    def _release_stream(self, player_id: str) -> None:
        left = self.streams.get(player_id, 1) - 1
        if left > 0:
            self.streams[player_id] = left
        else:
            self.streams.pop(player_id, None)

    @contextlib.contextmanager
    def _stream_slot(self, player_id: str) -> Iterator[None]:
        self._take_stream(player_id)
        try:
            yield
        finally:
            self._release_stream(player_id)

    @staticmethod
    def _authorization(context: Context) -> str | None:
        authorization = None
        for key, value in context.invocation_metadata() or ():
            if key == "authorization" and isinstance(value, str):
                authorization = value
        return authorization

    def _auth(self, context: Context) -> Principal:
        return self.service.authenticate(self._authorization(context))

    def _enter(self, request: Any, context: Context, *, action: bool = False) -> tuple[Principal, Any]:
        principal = self._auth(context)
        self.service.allow_call(principal.player_id, action=action)
        return principal, _checked(request)

    # -- RPCs -------------------------------------------------------------------------------

    async def SignIn(self, request: Any, context: Context) -> gateway_pb2.SignInResponse:
        req: gateway_pb2.SignInRequest = _checked(request)
        address = self.client_address(context)
        player_id, token, expires = await self.service.sign_in(
            req.device_secret, req.display_name, address, time_left_s=context.time_remaining()
        )
        return gateway_pb2.SignInResponse(
            player_id=player_id, token=token, expires_at=timestamp_pb2.Timestamp(seconds=expires)
        )

    async def RefreshToken(self, request: Any, context: Context) -> gateway_pb2.RefreshTokenResponse:
        self._enter(request, context)
        token, expires = self.service.refresh_token(self._authorization(context))
        return gateway_pb2.RefreshTokenResponse(token=token, expires_at=timestamp_pb2.Timestamp(seconds=expires))

    async def Session(self, request_iterator: AsyncIterator[Any], context: Context) -> AsyncIterator[Any]:
        try:
            principal = self._auth(context)
            self._take_stream(principal.player_id)
        except (Unauthenticated, ResourceExhausted):
            await _settle_first_write(request_iterator)
            raise
        try:
            async for message in self._session(principal, request_iterator, context):
                yield message
        finally:
            self._release_stream(principal.player_id)

    async def _session(
        self, principal: Principal, request_iterator: AsyncIterator[Any], context: Context
    ) -> AsyncIterator[Any]:
        session = await self.service.open_session(principal)
        # Accepted: the session's headers go out now, before anything is read. A client
        # writes once it has them (`initial_metadata()`), so no write of its can race the
        # trailers of a refused stream (see `_settle_first_write`).
        await context.send_initial_metadata(((SESSION_HEADER, session.session_id),))

        async def read() -> None:
            try:
                async for request in request_iterator:
                    if isinstance(request, Malformed):
                        await session.handle_malformed()
                    else:
                        await session.handle(request)
            except (grpc.aio.AioRpcError, asyncio.InvalidStateError):
                pass  # the client went away
            finally:
                await session.close()

        reader = asyncio.ensure_future(read())
        try:
            async for message in session.messages():
                yield message
        finally:
            reader.cancel()
            with contextlib.suppress(BaseException):
                await reader
            await session.close()

    async def SubmitAction(self, request: Any, context: Context) -> gateway_pb2.SubmitActionResponse:
        principal, req = self._enter(request, context, action=True)
        return await self.service.act(principal.player_id, req.action)

    async def _stream(
        self, session: PlayerSession, start: Callable[[], Any]
    ) -> AsyncIterator[gateway_pb2.SessionResponse]:
        try:
            await start()
            async for message in session.messages():
                yield message
                if message.HasField("event") and message.event.HasField("game_ended"):
                    return
        finally:
            await session.close()

    async def Events(self, request: Any, context: Context) -> AsyncIterator[Any]:
        principal, req = self._enter(request, context)
        with self._stream_slot(principal.player_id):
            session = await self.service.open_session(principal, interactive=False)
            async for message in self._stream(
                session, lambda: session.resume(req.table_id, req.after_sequence, take_seat=not req.auto_play)
            ):
                yield gateway_pb2.EventsResponse(message=message)

    async def Spectate(self, request: Any, context: Context) -> AsyncIterator[Any]:
        principal, req = self._enter(request, context)
        with self._stream_slot(principal.player_id):
            session = await self.service.open_session(principal, interactive=False)

            async def start() -> None:
                await session.spectate(req.table_id, req.after_sequence, req.invitation)

            async for message in self._stream(session, start):
                if message.HasField("event"):
                    yield gateway_pb2.SpectateResponse(event=message.event)

    async def FindMatch(self, request: Any, context: Context) -> gateway_pb2.FindMatchResponse:
        principal, req = self._enter(request, context)
        ticket = await self.service.find_match(principal.player_id, req, principal.display_name)
        return gateway_pb2.FindMatchResponse(ticket=ticket)

    async def CancelMatch(self, request: Any, context: Context) -> gateway_pb2.CancelMatchResponse:
        principal, req = self._enter(request, context)
        ticket = await self.service.cancel_match(principal.player_id, req.ticket_id)
        return gateway_pb2.CancelMatchResponse(ticket=ticket)

    async def CreatePrivateGame(self, request: Any, context: Context) -> gateway_pb2.CreatePrivateGameResponse:
        principal, req = self._enter(request, context)
        return await self.service.create_private(principal.player_id, req, principal.display_name)

    async def JoinPrivateGame(self, request: Any, context: Context) -> gateway_pb2.JoinPrivateGameResponse:
        principal, req = self._enter(request, context)
        ticket = await self.service.join_private(principal.player_id, req, principal.display_name)
        return gateway_pb2.JoinPrivateGameResponse(ticket=ticket)

    async def StartPrivateGame(self, request: Any, context: Context) -> gateway_pb2.StartPrivateGameResponse:
        principal, req = self._enter(request, context)
        table_id = await self.service.start_private(principal.player_id, req.code, req.partner)
        return gateway_pb2.StartPrivateGameResponse(table_id=table_id)

    async def GetPrivateGame(self, request: Any, context: Context) -> gateway_pb2.GetPrivateGameResponse:
        principal, req = self._enter(request, context)
        return await self.service.get_private(principal.player_id, req.code)

    async def Query(self, request: Any, context: Context) -> gateway_pb2.QueryResponse:
        principal, req = self._enter(request, context)
        return await self.service.query(principal.player_id, req)

    async def InviteSpectator(self, request: Any, context: Context) -> gateway_pb2.InviteSpectatorResponse:
        principal, req = self._enter(request, context)
        invitation, table_id, expires = await self.service.invite_spectator(principal.player_id, req.table_id)
        return gateway_pb2.InviteSpectatorResponse(
            invitation=invitation, table_id=table_id, expires_at=timestamp_pb2.Timestamp(seconds=expires)
        )

    async def Social(self, request: Any, context: Context) -> gateway_pb2.SocialResponse:
        principal, req = self._enter(request, context)
        return await self.service.social.handle(principal.player_id, req, principal.display_name)

    async def SocialEvents(self, request: Any, context: Context) -> AsyncIterator[Any]:
        principal, _ = self._enter(request, context)

        async def opened(session_id: str) -> None:
            await context.send_initial_metadata(((SESSION_HEADER, session_id),))

        with self._stream_slot(principal.player_id):
            async for message in social_events(self.service, principal, opened):
                yield message

    async def GetView(self, request: Any, context: Context) -> gateway_pb2.GetViewResponse:
        principal, req = self._enter(request, context)
        return gateway_pb2.GetViewResponse(view=await self.service.view(principal.player_id, req.table_id))


def peer_host(peer: str) -> str:
    """The host of a gRPC peer string (`ipv4:1.2.3.4:5678`, `ipv6:[::1]:5678`, `unix:...`)."""
    kind, _, rest = peer.partition(":")
    if kind == "ipv4":
        return rest.rsplit(":", 1)[0]
    if kind == "ipv6":
        return rest.rsplit(":", 1)[0].strip("[]")
    return peer or "?"


def _handlers(api: GatewayApi) -> grpc.GenericRpcHandler:
    """The service's method handlers, built from the proto descriptor with safe decoders."""
    descriptor = gateway_pb2.DESCRIPTOR.services_by_name["GatewayService"]
    handlers: dict[str, grpc.RpcMethodHandler[Any, Any]] = {}
    for method in descriptor.methods:
        request_cls = getattr(gateway_pb2, method.input_type.name)
        response_cls = getattr(gateway_pb2, method.output_type.name)
        behavior = getattr(api, method.name)
        decode, encode = _decoder(request_cls), response_cls.SerializeToString
        if method.client_streaming and method.server_streaming:
            handlers[method.name] = grpc.stream_stream_rpc_method_handler(behavior, decode, encode)
        elif method.server_streaming:
            handlers[method.name] = grpc.unary_stream_rpc_method_handler(behavior, decode, encode)
        else:
            handlers[method.name] = grpc.unary_unary_rpc_method_handler(behavior, decode, encode)
    return grpc.method_handlers_generic_handler(SERVICE_NAME, handlers)


def binding(service: GatewayService, competitions: CompetitionsGateway | None = None) -> ServiceBinding:
    """How the runtime serves this API."""
    api = GatewayApi(service, competitions)

    def register(server: grpc.aio.Server) -> None:
        server.add_generic_rpc_handlers((_handlers(api),))

    return ServiceBinding(SERVICE_NAME, register)
