"""The gateway's ports to the social service (issue 44, docs/adr/0031).

Owns `GrpcSocial` (`SocialPort`): `trix.v1.SocialService` called as the signed-in player
(his player-role token in `x-trix-identity`, like matchmaking: the player is the token,
never a field), every call with a deadline; a refusal becomes the domain error of its status
with the social service's public message, a failure UNAVAILABLE without its text. Owns
`NatsSocialEvents` (`SocialEventsPort`): the social service's core NATS events
(`trix.natsio.subjects.social_player_events`, `social_channel_events`), one subscription per
subject for every session of this process that reads it, counted, dropped with its last
reader. Nothing here is on the move path: a subscription is made when a session opens or
starts following a table, never per action.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import grpc
import structlog
from nats.aio.client import Client
from nats.aio.msg import Msg
from nats.aio.subscription import Subscription

from trix.errors import InvalidArgument
from trix.gateway.upstream import PlayerUpstream, domain_error
from trix.natsio.coalesce import subscribe_direct
from trix.natsio.connection import NatsConnection
from trix.natsio.subjects import SOCIAL_HIDDEN_FROM_HEADER
from trix.runtime.identity import DISPLAY_NAME_METADATA, IDENTITY_METADATA, ROLE_PLAYER, sign
from trix.v1 import gateway_pb2, social_pb2_grpc

log = structlog.get_logger("trix.gateway.social")

OnSocialMessage = Callable[[str, bytes, str], None]
"""`(subject, SocialEvent bytes, hidden-from header)`: one message of a social subject."""

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


class GrpcSocial(PlayerUpstream):
    """`SocialPort` over `trix.v1.SocialService`."""

    _stub: social_pb2_grpc.SocialServiceAsyncStub | None = None

    @property
    def stub(self) -> social_pb2_grpc.SocialServiceAsyncStub:
        if self._stub is None:
            self._stub = social_pb2_grpc.SocialServiceStub(self.opened())
        return self._stub

    async def call(
        self, player_id: str, request: gateway_pb2.SocialRequest, display_name: str = ""
    ) -> gateway_pb2.SocialResponse:
        """The social service's answer to `request`, asked as `player_id` (whose display name,
        his token's, it judges by its own filter before anyone is shown it)."""
        which = request.WhichOneof("request")
        method = METHODS.get(which or "")
        if which is None or method is None:
            raise InvalidArgument("the social request is empty")
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
            raise domain_error(err, "chat and friends") from None
        out = gateway_pb2.SocialResponse()
        getattr(out, which).CopyFrom(reply)
        return out


class NatsSocialEvents:
    """`SocialEventsPort`: one core subscription per social subject this process reads."""

    def __init__(self, nats: NatsConnection) -> None:
        self.nats = nats
        self.on_message: OnSocialMessage | None = None
        self._subs: dict[str, tuple[Client, Subscription]] = {}

    async def subscribe(self, subject: str) -> None:
        nc = self.nats.client
        held = self._subs.get(subject)
        if held is not None and held[0] is nc:
            return

        def deliver(msg: Msg) -> None:
            if self.on_message is not None:
                hidden = (msg.headers or {}).get(SOCIAL_HIDDEN_FROM_HEADER, "")
                self.on_message(msg.subject, msg.data, hidden)

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
