"""The social service's NATS door for chat lines (docs/adr/0031, amendment "a chat line over NATS").

Owns `ChatRequests`: the gateways' `SendChatRequest`s as core NATS requests on
`trix.natsio.subjects.social_send_chat` (one subscription, a task per line, answered on the
request's reply subject), so a line costs no gRPC call at either end; every other social
call stays on `trix.v1.SocialService` (`trix.social.grpc_api`). Who writes is the player
token in `trix.runtime.identity.TOKEN_HEADER`, signed by the gateway with the player-role key
and verified here (once per token: `VerifiedTokens`), exactly as the gRPC door takes it from
`x-trix-identity`; only a player's token is accepted (a service token is refused, as
there). Only the gateway's NATS user may publish on the subject (`trix.declarations`,
`make test-security`). The writer's display name rides percent-encoded in
`SOCIAL_DISPLAY_NAME_HEADER` and is judged like the gRPC door's
(`SocialGraph.offer_name`).

The reply: the `SendChatResponse`; or a refusal, its kind in `SOCIAL_ERROR_HEADER`
(`trix.errors.error_kind`), its public message the body, a rate limit's delay in
`SOCIAL_RETRY_AFTER_HEADER`. Anything else is `Internal` with an error id, logged here once,
never its text; NATS not answering in time is `Unavailable` (the gateway retries nothing: the
player's client resends with the same `client_line_id`, stored once).
"""

from __future__ import annotations

import asyncio
import time
import urllib.parse
import uuid

import structlog
from google.protobuf.message import DecodeError
from nats.aio.msg import Msg
from nats.aio.subscription import Subscription

from trix.errors import DomainError, InvalidArgument, PermissionDenied, ResourceExhausted, Unavailable, error_kind
from trix.natsio import subjects
from trix.natsio.coalesce import subscribe_direct
from trix.natsio.connection import NatsConnection
from trix.runtime.identity import TOKEN_HEADER, Keys, VerifiedTokens
from trix.runtime.interceptors import NATS_TRANSIENT
from trix.runtime.tasks import cancel_and_wait, start_kept
from trix.social.service import SocialService
from trix.v1 import social_pb2 as pb

log = structlog.get_logger("trix.social.chat")

INTERNAL_KIND = "Internal"
QUEUE = "social"
"""The subscription's queue group: one replica answers each line."""


def refusal_headers(err: DomainError) -> dict[str, str]:
    """The headers of a refusal's reply (its body: `err.public_message`)."""
    headers = {subjects.SOCIAL_ERROR_HEADER: error_kind(err)}
    if isinstance(err, ResourceExhausted) and err.retry_after_s is not None:
        headers[subjects.SOCIAL_RETRY_AFTER_HEADER] = str(err.retry_delay_ns() // 1_000_000)
    return headers


class ChatRequests:
    """The chat lines of every gateway, one task each (the module docstring)."""

    def __init__(self, nats: NatsConnection, service: SocialService, keys: Keys) -> None:
        self.nats = nats
        self.service = service
        self.tokens = VerifiedTokens(keys)
        self.sub: Subscription | None = None
        self.inflight: set[asyncio.Task[None]] = set()
        self.answered = 0

    async def start(self) -> None:
        self.sub = await subscribe_direct(self.nats.client, subjects.social_send_chat(), self._on_line, queue=QUEUE)

    def _on_line(self, msg: Msg) -> None:
        if msg.reply:
            start_kept(self.inflight, self._answer(msg))

    async def _answer(self, msg: Msg) -> None:
        headers: dict[str, str] | None = None
        try:
            body = (await self.send(msg)).SerializeToString()
        except DomainError as err:
            headers, body = refusal_headers(err), err.public_message.encode()
        except NATS_TRANSIENT as exc:
            log.warning("chat line unavailable: nats did not answer", error=type(exc).__name__)
            unavailable = Unavailable("chat is briefly unavailable, try again")
            headers, body = refusal_headers(unavailable), unavailable.public_message.encode()
        except Exception:  # a bug: logged with its id, never its text to a client
            error_id = uuid.uuid4().hex
            log.exception("chat line failed", error_id=error_id)
            headers = {subjects.SOCIAL_ERROR_HEADER: INTERNAL_KIND}
            body = f"internal error (id {error_id})".encode()
        try:
            await self.nats.client.publish(msg.reply, body, headers=headers)
        except Exception as exc:  # noqa: BLE001 - the gateway's call times out; the client resends
            log.warning("chat reply failed", error=type(exc).__name__)
        self.answered += 1

    async def send(self, msg: Msg) -> pb.SendChatResponse:
        """One line as the token's player; raises what he is told."""
        headers = msg.headers or {}
        caller = self.tokens.verify(headers.get(TOKEN_HEADER), time.time())
        if caller.is_service:
            raise PermissionDenied("a player's own token is needed")
        name = headers.get(subjects.SOCIAL_DISPLAY_NAME_HEADER)
        if name:
            self.service.graph.offer_name(caller.name, urllib.parse.unquote(name))
        try:
            request = pb.SendChatRequest.FromString(msg.data)
        except DecodeError:
            raise InvalidArgument("the chat line does not decode") from None
        which = request.WhichOneof("content")
        sent_by = headers.get(subjects.SOCIAL_SENT_BY_HEADER, "")
        delivered, line = await self.service.send_line(
            caller.name,
            request.channel,
            request.text if which == "text" else None,
            request.phrase_id if which == "phrase_id" else None,
            request.client_line_id,
            sent_by,
        )
        if line is None:
            return pb.SendChatResponse(delivered=delivered)
        # The sending session has its line here, not again as an event (`SOCIAL_SENT_BY_HEADER`).
        return pb.SendChatResponse(delivered=delivered, line_id=line.line_id, line=line if sent_by else None)

    async def stop(self) -> None:
        if self.sub is not None:
            try:
                await self.sub.unsubscribe()
            except Exception as exc:  # noqa: BLE001 - a closed connection dropped it already
                log.debug("chat unsubscribe failed", error=type(exc).__name__)
            self.sub = None
        await cancel_and_wait(self.inflight, 3.0)
