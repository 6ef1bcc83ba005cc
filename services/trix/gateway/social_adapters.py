"""The gateway's ports to the social service (issue 44, docs/adr/0031).

Owns `GrpcSocial` (`SocialPort`): `trix.v1.SocialService` called as the signed-in player
(his player-role token in `x-trix-identity`, like matchmaking: the player is the token,
never a field), every call with a deadline; a refusal becomes the domain error of its status
with the social service's public message, a failure UNAVAILABLE without its text; a chat
line, the one call a table's talk makes many of, goes instead as a NATS request
(`NatsChatLines`, its player the same token as his table commands'). Owns
`NatsSocialEvents` (`SocialEventsPort`): the social service's core NATS events
(`trix.natsio.subjects.social_player_events`, `social_channel_events`), one subscription per
subject for every session of this process that reads it, counted, dropped with its last
reader. Nothing here is on the move path: a subscription is made when a session opens or
starts following a table, never per action.
"""

from __future__ import annotations

import asyncio
import time
import urllib.parse
from collections.abc import Callable

import grpc
import nats.errors
import structlog
from nats.aio.client import Client
from nats.aio.msg import Msg
from nats.aio.subscription import Subscription

from trix.errors import DomainError, InvalidArgument, ResourceExhausted, Unavailable, from_kind
from trix.gateway.config import CHAT_WINDOW_S
from trix.gateway.social_api import OnSocialMessage
from trix.gateway.upstream import PASSED_ERRORS, PlayerUpstream, domain_error
from trix.natsio.coalesce import subscribe_direct
from trix.natsio.connection import NatsConnection
from trix.natsio.subjects import (
    SOCIAL_DISPLAY_NAME_HEADER,
    SOCIAL_ERROR_HEADER,
    SOCIAL_HIDDEN_FROM_HEADER,
    SOCIAL_RETRY_AFTER_HEADER,
    SOCIAL_SENT_BY_HEADER,
    social_send_chat,
)
from trix.runtime.identity import DISPLAY_NAME_METADATA, IDENTITY_METADATA, ROLE_PLAYER, TOKEN_HEADER, sign
from trix.v1 import gateway_pb2, social_pb2, social_pb2_grpc

log = structlog.get_logger("trix.gateway.social")

CHAT_AND_FRIENDS = "chat and friends"
MAX_QUOTED_NAMES = 20000

# The SocialService method of each SocialRequest kind (the oneof member's name).
METHODS: dict[str, str] = {
    "send_chat": "SendChat",
    "chat_history": "ListChatHistory",
    "request_friend": "RequestFriend",
    "answer_friend": "AnswerFriendRequest",
    "remove_friend": "RemoveFriend",
    "set_blocked": "SetBlocked",
    "list_friends": "ListFriends",
    "send_invite": "SendInvite",
    "set_muted": "SetMuted",
    "report_line": "ReportLine",
}


class NatsChatLines:
    """A chat line (`SendChatRequest`) as a core NATS request to the social service
    (`trix.natsio.subjects.social_send_chat`, docs/adr/0031): the player's caller token in
    `TOKEN_HEADER` (the one his table commands carry, `NatsTables.player_token`), his display
    name percent-encoded in `SOCIAL_DISPLAY_NAME_HEADER`, a deadline; its refusal raised as
    `GrpcSocial` raises the gRPC one's (a rate limit's delay kept), no answer UNAVAILABLE."""

    def __init__(
        self,
        nats: NatsConnection,
        player_token: Callable[[str], str],
        timeout_s: float,
        *,
        window_s: float = CHAT_WINDOW_S,
    ) -> None:
        self.nats = nats
        self.player_token = player_token
        self.timeout_s = timeout_s
        self.window_s = window_s
        self._window: asyncio.Future[None] | None = None
        """The open window: its lines go out when it closes (None: no line waiting)."""
        self._quoted: dict[str, str] = {}
        """Display name -> its header value (a name is quoted once, not once per line)."""

    def _name_header(self, display_name: str) -> str:
        quoted = self._quoted.get(display_name)
        if quoted is None:
            if len(self._quoted) >= MAX_QUOTED_NAMES:
                self._quoted.clear()
            quoted = self._quoted[display_name] = urllib.parse.quote(display_name, safe="")
        return quoted

    async def send(
        self, player_id: str, request: social_pb2.SendChatRequest, display_name: str = "", sent_by: str = ""
    ) -> social_pb2.SendChatResponse:
        headers = {TOKEN_HEADER: self.player_token(player_id)}
        if display_name:
            headers[SOCIAL_DISPLAY_NAME_HEADER] = self._name_header(display_name)
        if sent_by:  # a Session stream: its line comes back in the answer, not as an event
            headers[SOCIAL_SENT_BY_HEADER] = sent_by
        await self._gathered()
        try:
            reply = await self.nats.client.request(
                social_send_chat(), request.SerializeToString(), timeout=self.timeout_s, headers=headers
            )
        except nats.errors.Error:  # no answer in time, no responder, the connection down
            raise Unavailable(f"{CHAT_AND_FRIENDS} is unavailable; retry") from None
        kind = (reply.headers or {}).get(SOCIAL_ERROR_HEADER)
        if kind is None:
            return social_pb2.SendChatResponse.FromString(reply.data)
        raise _refusal(kind, reply.data.decode("utf-8", "replace"), (reply.headers or {}))

    async def _gathered(self) -> None:
        """Returns when the window this line fell into closes (the first line of a window opens
        it for `window_s`): every line of a window resumes in the same tick, so their
        requests leave together. At ~100 lines a second a line costs the gateway, the NATS
        server and the social service one wake-up and socket read or write per window
        instead of several per line; a line waits `window_s` at most, nothing on the move path."""
        if self.window_s <= 0:
            return
        window = self._window
        if window is None:
            loop = asyncio.get_running_loop()
            window = self._window = loop.create_future()
            loop.call_later(self.window_s, self._close_window, window)
        await asyncio.shield(window)

    def _close_window(self, window: asyncio.Future[None]) -> None:
        if self._window is window:
            self._window = None
        if not window.done():
            window.set_result(None)


def _refusal(kind: str, message: str, headers: dict[str, str]) -> DomainError:
    """The social service's refusal as the gRPC door's would reach the player (`domain_error`)."""
    err = from_kind(kind, message[:300] or CHAT_AND_FRIENDS)
    if type(err) not in PASSED_ERRORS:
        return Unavailable(f"{CHAT_AND_FRIENDS} is unavailable; retry")
    delay_ms = headers.get(SOCIAL_RETRY_AFTER_HEADER, "")
    if isinstance(err, ResourceExhausted) and delay_ms.isdigit():
        err.retry_after_s = int(delay_ms) / 1000
    return err


class GrpcSocial(PlayerUpstream):
    """`SocialPort` over `trix.v1.SocialService`, a chat line over NATS when `chat` is set."""

    _stub: social_pb2_grpc.SocialServiceAsyncStub | None = None
    chat: NatsChatLines | None = None

    @property
    def stub(self) -> social_pb2_grpc.SocialServiceAsyncStub:
        if self._stub is None:
            self._stub = social_pb2_grpc.SocialServiceStub(self.opened())
        return self._stub

    async def call(
        self, player_id: str, request: gateway_pb2.SocialRequest, display_name: str = "", sent_by: str = ""
    ) -> gateway_pb2.SocialResponse:
        """The social service's answer to `request`, asked as `player_id` (whose display name,
        his token's, it judges by its own filter before anyone is shown it)."""
        which = request.WhichOneof("request")
        method = METHODS.get(which or "")
        if which is None or method is None:
            raise InvalidArgument("the social request is empty")
        if which == "send_chat" and self.chat is not None:
            sent = await self.chat.send(player_id, request.send_chat, display_name, sent_by)
            return gateway_pb2.SocialResponse(send_chat=sent)
        metadata: list[tuple[str, str | bytes]] = []
        if self.key:
            metadata.append((IDENTITY_METADATA, sign(self.key, ROLE_PLAYER, player_id, time.time())))
        if display_name:
            metadata.append((DISPLAY_NAME_METADATA, display_name.encode()))  # a binary key: UTF-8
        try:
            reply = await getattr(self.stub, method)(
                getattr(request, which), timeout=self.timeout_s, metadata=tuple(metadata)
            )
        except grpc.aio.AioRpcError as err:
            raise domain_error(err, CHAT_AND_FRIENDS) from None
        out = gateway_pb2.SocialResponse()
        getattr(out, which).CopyFrom(reply)
        return out


class NatsSocialEvents:
    """`SocialEventsPort`: one core subscription per social subject this process reads."""

    def __init__(self, nats: NatsConnection) -> None:
        self.nats = nats
        self.on_message: OnSocialMessage | None = None
        """`SocialGateway.on_message`."""
        self._subs: dict[str, tuple[Client, Subscription]] = {}

    async def subscribe(self, subject: str) -> None:
        nc = self.nats.client
        held = self._subs.get(subject)
        if held is not None and held[0] is nc:
            return

        def deliver(msg: Msg) -> None:
            if self.on_message is not None:
                headers = msg.headers or {}
                hidden, sent_by = headers.get(SOCIAL_HIDDEN_FROM_HEADER, ""), headers.get(SOCIAL_SENT_BY_HEADER, "")
                self.on_message(msg.subject, msg.data, hidden, sent_by)

        sub = await subscribe_direct(nc, subject, deliver)
        await nc.flush(timeout=2)  # the server has it: a client answered after this reads it
        if subject in self._subs:  # a reconnect replaced the client; or another call raced this one
            await self._drop(subject)
        self._subs[subject] = (nc, sub)

    async def unsubscribe(self, subject: str) -> None:
        await self._drop(subject)

    async def _drop(self, subject: str) -> None:
        held = self._subs.pop(subject, None)
        if held is not None:
            try:
                await held[1].unsubscribe()
            except Exception as exc:  # noqa: BLE001 - a closed connection has dropped it already
                log.debug("social unsubscribe failed", error=type(exc).__name__)
