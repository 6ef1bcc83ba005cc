"""Chat, friends and invitations through the gateway (issue 44, docs/adr/0031).

Owns `SocialGateway`: the `Social` requests forwarded to the social service as the caller
(the token's player, never a field; `SocialPort`), the opening of an invitation link
(`open_invite`), and the social events of the sessions of this replica: which subjects of
the social service (`trix.natsio.subjects.social_*_events`) each player reads, one NATS
subscription per subject for all of them (`SocialEventsPort`), and each event pushed to the
player's social sessions (his Session stream and his SocialEvents streams) as
`SessionResponse.social_event`, never to a reader the social service named hidden (a block
either way, a mute).

Who reads what: a player his own subject (direct lines, friends' notices and presence,
invitations) while a social session of his is open; a table's players' channel while one of
his sessions follows the table (seated or watching), its spectators' channel while he
watches it, or while he sits there and his setting says so (`set_spectator_chat`, kept per
player while a social session of his is open here, docs/rules.md §15); a competition's chat
once he read its history or wrote there. Nothing of this runs per action: a follow starts, a session
opens or closes. Must not import grpc or nats.
"""

from __future__ import annotations

import asyncio
import time
import urllib.parse
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import TYPE_CHECKING, Protocol

import structlog

from trix.errors import InvalidArgument, Unavailable
from trix.gateway.ports import SPECTATOR
from trix.gateway.validation import check_id
from trix.natsio import subjects
from trix.runtime.tasks import start_kept
from trix.v1 import gateway_pb2, social_pb2

if TYPE_CHECKING:
    from trix.gateway.service import GatewayService
    from trix.gateway.session import Session
    from trix.gateway.tokens import Principal

log = structlog.get_logger("trix.gateway.social")

MAX_TABLE_CHANNELS = 8
"""Tables whose chat one session reads at once (its latest follows; TRIX_GATEWAY_MAX_STREAMS)."""
INVITE_KINDS = {
    "table": social_pb2.INVITE_KIND_PRIVATE_TABLE,
    "watch": social_pb2.INVITE_KIND_WATCH_TABLE,
    "competition": social_pb2.INVITE_KIND_COMPETITION,
}
"""An invitation link's kind (`/invite/<kind>/...`, made by the social service)."""


class SocialPort(Protocol):
    async def call(
        self, player_id: str, request: gateway_pb2.SocialRequest, display_name: str = "", sent_by: str = ""
    ) -> gateway_pb2.SocialResponse:
        """The social service's answer, asked as `player_id`; raises its domain error. `sent_by`:
        the Session stream asking, which has its chat line in the answer, not as an event."""
        ...


class OnSocialMessage(Protocol):
    def __call__(self, subject: str, data: bytes, hidden_from: str, sent_by: str = "") -> None:
        """`(subject, SocialEvent bytes, hidden-from, the session that sent its line)`."""


class SocialEventsPort(Protocol):
    on_message: OnSocialMessage | None
    """Hears every message of every subscribed subject."""

    async def subscribe(self, subject: str) -> None: ...
    async def unsubscribe(self, subject: str) -> None: ...


def open_invite(code: str, now_ms: int) -> gateway_pb2.OpenInviteResponse:
    """What an invitation link (or its part after `/invite/`) is to; InvalidArgument when it
    is none, or expired. The link holds nothing secret: its target is what a friend may be
    told, and joining or watching is checked by the table and matchmaking as for anyone."""
    tail = code.strip().rsplit("/invite/", 1)[-1]
    path, _, query = tail.partition("?")
    kind_name, _, target = path.partition("/")
    kind = INVITE_KINDS.get(kind_name)
    params = urllib.parse.parse_qs(query)
    expires = params.get("expires", [""])[0]
    inviter = params.get("from", [""])[0]
    if kind is None or not target or not expires.isdigit() or not inviter:
        raise InvalidArgument("not an invitation link")
    if int(expires) < now_ms:
        raise InvalidArgument("this invitation has expired: ask for a new one")
    out = gateway_pb2.OpenInviteResponse(
        kind=kind,
        target=check_id(urllib.parse.unquote(target), "invitation target"),
        player_id=check_id(inviter, "inviter"),
    )
    out.expires_at.FromMilliseconds(int(expires))
    return out


class SocialGateway:
    """The gateway's side of chat and friends (see the module docstring)."""

    def __init__(
        self,
        port: SocialPort | None,
        events: SocialEventsPort | None,
        *,
        wall_ms: Callable[[], int] = lambda: time.time_ns() // 1_000_000,
    ) -> None:
        self.port = port
        """None when the configuration names no social service (its calls: UNAVAILABLE)."""
        self.events = events
        if events is not None:
            events.on_message = self.on_message
        self.wall_ms = wall_ms
        self.social_sessions: dict[str, dict[str, Session]] = {}
        """Per player: his sessions that receive social events (Session, SocialEvents streams),
        by session id."""
        self.interests: dict[str, dict[str, None]] = {}
        """Per session id: the subjects it reads for its player, oldest first."""
        self.readers: dict[str, dict[str, Session]] = {}
        """Per subject: the sessions reading it, by id (subscribed while any)."""
        self.spectator_chat: dict[str, dict[str, None]] = {}
        """Per player: the tables whose spectators' channel he reads while seated there (his
        setting, docs/rules.md §15), oldest first, at most MAX_TABLE_CHANNELS."""
        self._subscribed: set[str] = set()
        self._dirty: set[str] = set()
        self._wake = asyncio.Event()
        self._worker: set[asyncio.Task[None]] = set()
        self.delivered = 0
        """Social events pushed to sessions (the load test's count)."""

    # -- requests ---------------------------------------------------------------------------

    async def handle(
        self, player_id: str, request: gateway_pb2.SocialRequest, display_name: str = "", sent_by: str = ""
    ) -> gateway_pb2.SocialResponse:
        """One `Social` request of `player_id`; `sent_by`: the Session stream it came on (its
        own chat line comes back in the answer, `SendChatResponse.line`, not as an event)."""
        which = request.WhichOneof("request")
        if which is None:
            raise InvalidArgument("the social request is empty")
        if which == "open_invite":
            return gateway_pb2.SocialResponse(open_invite=open_invite(request.open_invite.code, self.wall_ms()))
        if which == "set_spectator_chat":
            setting = request.set_spectator_chat
            table_id = check_id(setting.table_id, "table")
            self.set_spectator_chat(player_id, table_id, on=setting.on)
            await self._settled(subjects.social_channel_events(table_id, "spectators"))
            return gateway_pb2.SocialResponse(set_spectator_chat=gateway_pb2.SetSpectatorChatResponse())
        if self.port is None:
            raise Unavailable("chat and friends are not reachable; retry")
        reply = await self.port.call(player_id, request, display_name, sent_by)
        if which in ("send_chat", "chat_history"):
            channel = request.send_chat.channel if which == "send_chat" else request.chat_history.channel
            if channel.kind == social_pb2.CHAT_CHANNEL_KIND_COMPETITION:
                # He may read it (the social service answered): his sessions here hear it live.
                subject = subjects.social_channel_events(channel.id, "competition")
                for session in list(self.social_sessions.get(player_id, {}).values()):
                    self._read(session, subject)
        return reply

    def set_spectator_chat(self, player_id: str, table_id: str, *, on: bool) -> None:
        """A seated player's setting (docs/rules.md §15): his sessions that follow `table_id`
        read its spectators' channel (on) or stop (off; a session watching it reads it still),
        and so do those that start following it while the setting is kept."""
        tables = self.spectator_chat.setdefault(player_id, {})
        tables.pop(table_id, None)
        if on:
            tables[table_id] = None
            for old in list(tables)[: max(0, len(tables) - MAX_TABLE_CHANNELS)]:
                del tables[old]
        elif not tables:
            del self.spectator_chat[player_id]
        players = subjects.social_channel_events(table_id, "players")
        spectators = subjects.social_channel_events(table_id, "spectators")
        for session in list(self.readers.get(players, {}).values()):
            if session.player_id != player_id:
                continue
            if on:
                self._read(session, spectators)
            elif (table_id, SPECTATOR) not in session.follows:
                self._unread(session, spectators)

    async def _settled(self, subject: str, timeout_s: float = 2.0) -> None:
        """Waits (a while at most) until `subject`'s subscription is what its readers want, so
        a client answered reads what it asked for from then on."""
        deadline = time.monotonic() + timeout_s
        while self.events is not None and time.monotonic() < deadline:
            if (subject in self.readers) == (subject in self._subscribed):
                return
            await asyncio.sleep(0.01)

    # -- sessions ---------------------------------------------------------------------------

    def attach(self, session: Session) -> None:
        """`session` receives its player's social events from now on (until `detach`)."""
        self.social_sessions.setdefault(session.player_id, {})[session.session_id] = session
        self._read(session, subjects.social_player_events(session.player_id))

    def follow(self, session: Session, table_id: str, seat: int, *, invited: bool = False) -> None:
        """`session` follows `table_id` (a seat, or SPECTATOR): its player reads the table's
        players' chat, and its spectators' chat when he watches or his setting says so
        (`set_spectator_chat`). A spectator let in by an
        invitation (a private table's) reads neither: a private table's talk is its players'
        (the social service's rule, docs/adr/0027)."""
        if seat == SPECTATOR and invited:
            return
        self._read(session, subjects.social_channel_events(table_id, "players"))
        if seat == SPECTATOR or table_id in self.spectator_chat.get(session.player_id, {}):
            self._read(session, subjects.social_channel_events(table_id, "spectators"))
        own = self.interests.get(session.session_id, {})
        tables = [s for s in own if s.rsplit(".", 2)[-2] in ("players", "spectators")]
        for subject in tables[: max(0, len(tables) - 2 * MAX_TABLE_CHANNELS)]:
            self._unread(session, subject)

    def detach(self, session: Session) -> None:
        """`session` ended: it reads nothing more."""
        mine = self.social_sessions.get(session.player_id)
        if mine is not None:
            mine.pop(session.session_id, None)
            if not mine:
                del self.social_sessions[session.player_id]
        if session.player_id not in self.social_sessions:  # his settings go with his last one
            self.spectator_chat.pop(session.player_id, None)
        for subject in list(self.interests.get(session.session_id, ())):
            self._unread(session, subject)
        self.interests.pop(session.session_id, None)

    def _read(self, session: Session, subject: str) -> None:
        own = self.interests.setdefault(session.session_id, {})
        own.pop(subject, None)
        own[subject] = None  # the newest last
        readers = self.readers.setdefault(subject, {})
        readers[session.session_id] = session
        if len(readers) == 1:
            self._changed(subject)

    def _unread(self, session: Session, subject: str) -> None:
        self.interests.get(session.session_id, {}).pop(subject, None)
        readers = self.readers.get(subject)
        if readers is None:
            return
        readers.pop(session.session_id, None)
        if not readers:
            del self.readers[subject]
            self._changed(subject)

    def _changed(self, subject: str) -> None:
        if self.events is None:
            return
        self._dirty.add(subject)
        self._wake.set()
        if not self._worker:
            start_kept(self._worker, self._subscriptions())

    async def _subscriptions(self) -> None:
        """Makes the NATS subscriptions what the readers want, one change at a time, in order."""
        assert self.events is not None
        while True:
            if not self._dirty:
                self._wake.clear()
                await self._wake.wait()
                continue
            subject = self._dirty.pop()
            wanted = subject in self.readers
            if wanted == (subject in self._subscribed):
                continue
            try:
                if wanted:
                    await self.events.subscribe(subject)
                    self._subscribed.add(subject)
                else:
                    self._subscribed.discard(subject)
                    await self.events.unsubscribe(subject)
            except Exception as exc:  # noqa: BLE001 - asked again after a pause
                log.warning("social subscription failed, retrying", error=type(exc).__name__)
                self._dirty.add(subject)
                await asyncio.sleep(0.5)

    # -- events -----------------------------------------------------------------------------

    def on_message(self, subject: str, data: bytes, hidden_from: str, sent_by: str = "") -> None:
        """One social event: to the social sessions of the players reading `subject`, but
        those the social service named hidden, and the session that sent its line (`sent_by`:
        it has the line in its answer)."""
        readers = self.readers.get(subject)
        if not readers:
            return
        out = gateway_pb2.SessionResponse()
        try:
            out.social_event.ParseFromString(data)  # decoded once, in place: one message for every reader
        except Exception:  # noqa: BLE001 - a bad message is dropped, never sent on
            log.warning("social event did not decode", subject=subject)
            return
        hidden = set(hidden_from.split(",")) if hidden_from else set()
        players = {session.player_id for session in readers.values()} - hidden
        for player_id in players:
            for session in self.social_sessions.get(player_id, {}).values():
                if session.session_id != sent_by:
                    session.push(out)
                    self.delivered += 1


async def social_events(
    gateway: GatewayService, principal: Principal, opened: Callable[[str], Awaitable[None]]
) -> AsyncIterator[gateway_pb2.SocialEventsResponse]:
    """The SocialEvents stream: the player's social events while it is open. A web player
    has no Session stream: while this is open he counts as online for his friends (and his
    table's timers, docs/rules.md §10): a PlayerConnected when it is his first session on
    this replica, a PlayerDisconnected when his last one here closes
    (`GatewayService.came_online`). `opened(session id)` is awaited once the stream reads
    (its headers go out: the client may act then)."""
    session = await gateway.open_session(principal, interactive=False)
    gateway.social.attach(session)
    try:
        await gateway.came_online(session)
        await opened(session.session_id)
        async for message in session.messages():
            if message.HasField("social_event"):
                yield gateway_pb2.SocialEventsResponse(event=message.social_event)
    finally:
        await session.close()
