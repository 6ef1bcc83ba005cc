"""The gRPC adapter of the gateway service: `trix.v1.GatewayService` <-> `GatewayService`.

Owns proto <-> domain translation, the bearer token of every call (metadata
`authorization: Bearer <token>`; every RPC but SignIn is refused with UNAUTHENTICATED
without a valid one, before anything else happens), the per-connection rate limit of
plain calls, and the decoding of requests: a request that does not decode is answered
with INVALID_ARGUMENT (never the library's INTERNAL), a message above
TRIX_GATEWAY_MAX_MESSAGE_BYTES with RESOURCE_EXHAUSTED by gRPC itself. Status codes
and messages come from `trix.errors` through the runtime interceptor: no exception
text or class name ever reaches a client.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections import OrderedDict
from collections.abc import AsyncIterator, Callable
from typing import Any

import grpc
from google.protobuf import timestamp_pb2
from google.protobuf.message import DecodeError, Message

from trix.errors import InvalidArgument, ResourceExhausted, Unauthenticated
from trix.gateway.service import GatewayService, RateLimiter
from trix.gateway.service import Session as PlayerSession
from trix.gateway.tokens import Principal
from trix.runtime.server import ServiceBinding
from trix.v1 import gateway_pb2

SERVICE_NAME = "trix.v1.GatewayService"
MAX_PEERS = 10000
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


class GatewayApi:
    """`trix.v1.GatewayService` over `GatewayService`."""

    def __init__(self, service: GatewayService) -> None:
        self.service = service
        self.limits: OrderedDict[str, RateLimiter] = OrderedDict()

    # -- cross-cutting ----------------------------------------------------------------------

    def _limit(self, context: Context) -> None:
        peer = context.peer() or "?"
        limiter = self.limits.get(peer)
        if limiter is None:
            cfg = self.service.config
            limiter = self.limits[peer] = RateLimiter(cfg.rate_per_s, cfg.rate_burst)
            while len(self.limits) > MAX_PEERS:
                self.limits.popitem(last=False)
        if not limiter.allow():
            raise ResourceExhausted("rate limit: slow down")

    def _auth(self, context: Context) -> Principal:
        authorization = None
        for key, value in context.invocation_metadata() or ():
            if key == "authorization" and isinstance(value, str):
                authorization = value
        return self.service.authenticate(authorization)

    def _enter(self, request: Any, context: Context) -> tuple[Principal, Any]:
        principal = self._auth(context)
        self._limit(context)
        return principal, _checked(request)

    # -- RPCs -------------------------------------------------------------------------------

    async def SignIn(self, request: Any, context: Context) -> gateway_pb2.SignInResponse:
        self._limit(context)
        req: gateway_pb2.SignInRequest = _checked(request)
        player_id, token, expires = await self.service.sign_in(req.device_secret, req.display_name)
        return gateway_pb2.SignInResponse(
            player_id=player_id, token=token, expires_at=timestamp_pb2.Timestamp(seconds=expires)
        )

    async def Session(self, request_iterator: AsyncIterator[Any], context: Context) -> AsyncIterator[Any]:
        try:
            principal = self._auth(context)
        except Unauthenticated:
            await _settle_first_write(request_iterator)
            raise
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
        principal, req = self._enter(request, context)
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
        session = await self.service.open_session(principal, interactive=False)
        async for message in self._stream(session, lambda: session.resume(req.table_id, req.after_sequence)):
            yield gateway_pb2.EventsResponse(message=message)

    async def Spectate(self, request: Any, context: Context) -> AsyncIterator[Any]:
        principal, req = self._enter(request, context)
        session = await self.service.open_session(principal, interactive=False)
        async for message in self._stream(session, lambda: session.spectate(req.table_id, req.after_sequence)):
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
        table_id = await self.service.start_private(principal.player_id, req.code)
        return gateway_pb2.StartPrivateGameResponse(table_id=table_id)

    async def Query(self, request: Any, context: Context) -> gateway_pb2.QueryResponse:
        principal, req = self._enter(request, context)
        return await self.service.query(principal.player_id, req)

    async def GetView(self, request: Any, context: Context) -> gateway_pb2.GetViewResponse:
        principal, req = self._enter(request, context)
        return gateway_pb2.GetViewResponse(view=await self.service.view(principal.player_id, req.table_id))


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


def binding(service: GatewayService) -> ServiceBinding:
    """How the runtime serves this API."""
    api = GatewayApi(service)

    def register(server: grpc.aio.Server) -> None:
        server.add_generic_rpc_handlers((_handlers(api),))

    return ServiceBinding(SERVICE_NAME, register)
