"""The social service (issue 44, docs/adr/0027) as a process of the platform: a real
nats-server with one user per service, the real table service and C engine making the tables
whose stored results the social service reads, real gRPC on 127.0.0.1. The test plays the
gateway's part on NATS as the gateway's own user: it publishes sessions' PRESENCE and
subscribes to the social service's events (`trix.social.evt.>`), the grant the gateway holds.
The social service runs on a clock the test moves (flood limits), nothing else is faked."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import grpc
import nats
import pytest
from nats.aio.client import Client
from nats.aio.msg import Msg

from support.nats import AuthNats
from support.table import KEYS, GatewayClient, create_request, table_env, token
from trix.natsio import subjects
from trix.natsio.online import BEAT_ENV
from trix.natsio.permissions import GATEWAY_INBOX_PREFIX, inbox_prefix
from trix.runtime.identity import DISPLAY_NAME_METADATA, IDENTITY_METADATA, ROLE_PLAYER, ROLE_SERVICE
from trix.runtime.server import Runtime
from trix.social.__main__ import build as build_social
from trix.social.config import SocialConfig
from trix.social.service import SocialService
from trix.table.__main__ import build as build_table
from trix.table.config import TableConfig
from trix.v1 import common_pb2, competitions_pb2, events_pb2, social_pb2_grpc, table_pb2
from trix.v1 import social_pb2 as pb

DEADLINE_S = 20.0
PLAYERS = ("p1", "p2", "p3", "p4")
PLAYERS_CHANNEL = pb.CHAT_CHANNEL_KIND_TABLE_PLAYERS
SPECTATORS_CHANNEL = pb.CHAT_CHANNEL_KIND_TABLE_SPECTATORS


class Clock:
    """Seconds that move only when the test says (the flood limits' clock)."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@dataclass
class Inbox:
    """What the gateway would forward: each social event received, by subject."""

    got: list[tuple[str, pb.SocialEvent, set[str]]] = field(default_factory=list)
    sent_by: list[str] = field(default_factory=list)
    """Each event's `Trix-Sent-By` (the gateway session that sent its line), in `got`'s order."""

    async def on(self, msg: Msg) -> None:
        hidden = set(filter(None, (msg.headers or {}).get(subjects.SOCIAL_HIDDEN_FROM_HEADER, "").split(",")))
        self.got.append((msg.subject, pb.SocialEvent.FromString(msg.data), hidden))
        self.sent_by.append((msg.headers or {}).get(subjects.SOCIAL_SENT_BY_HEADER, ""))

    def lines(self, subject: str, reader: str = "") -> list[pb.ChatLine]:
        return [
            e.chat_line
            for s, e, hidden in self.got
            if s == subject and e.HasField("chat_line") and reader not in hidden
        ]

    def of(self, player: str, kind: str) -> list[pb.SocialEvent]:
        return [e for s, e, _ in self.got if s == subjects.social_player_events(player) and e.HasField(kind)]


@dataclass
class Platform:
    nats: AuthNats
    clock: Clock
    table: Runtime
    social: Runtime
    channel: grpc.aio.Channel
    stub: Any
    gateway: GatewayClient
    gateway_nc: Client
    inbox: Inbox

    async def create_table(
        self,
        table_id: str,
        variant: int,
        options: common_pb2.TableOptions | None = None,
        players: tuple[str, ...] = PLAYERS,
        *,
        seen: bool = True,
    ) -> None:
        request = create_request(table_id, variant, players, options=options)
        await self.gateway.request(table_id, table_pb2.TableCommand(create_table=request), token("service", "table"))
        if seen:
            await until(
                lambda: table_id in self.social_service().tables.tables, f"{table_id} known to the social service"
            )

    def social_service(self) -> SocialService:
        assert isinstance(self.social.service, SocialService)
        return self.social.service

    async def connect(self, player: str, session: str) -> None:
        event = events_pb2.Event(player_connected=events_pb2.PlayerConnected(player_id=player, session_id=session))
        await self.gateway_nc.jetstream().publish(subjects.presence(player), event.SerializeToString())

    async def say(self, player: str, table_id: str, text: str, kind: int = PLAYERS_CHANNEL) -> pb.SendChatResponse:
        self.clock.now += 5.0  # well past the flood limits unless a test says otherwise
        channel = pb.ChatChannel(kind=kind, id=table_id)  # type: ignore[arg-type]
        return await self.stub.SendChat(pb.SendChatRequest(channel=channel, text=text), metadata=as_player(player))


def as_player(name: str) -> tuple[tuple[str, str]]:
    return ((IDENTITY_METADATA, token(ROLE_PLAYER, name)),)


def as_admin() -> tuple[tuple[str, str]]:
    return ((IDENTITY_METADATA, KEYS.token(ROLE_SERVICE, "admin")),)


async def until(check: Callable[[], object], what: str) -> None:
    deadline = time.monotonic() + DEADLINE_S
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        await asyncio.sleep(0.02)


FAST = {"TRIX_GRPC_PORT": "0", "TRIX_SHUTDOWN_GRACE_S": "0.5", BEAT_ENV: "3600"}
"""A long beat period: the test, playing the gateway, sends no beat (`trix.natsio.online`)."""


async def _start_social(auth_nats: AuthNats, clock: Clock) -> Runtime:
    social = build_social(SocialConfig.from_env(table_env(auth_nats.url("social"), "social", **FAST)), clock)
    await social.start()
    return social


@pytest.fixture
async def platform(auth_nats: AuthNats, tmp_path: Path) -> AsyncIterator[Platform]:
    table = build_table(TableConfig.from_env(table_env(auth_nats.url("table"), **FAST)))
    await table.start()
    clock = Clock()
    social = await _start_social(auth_nats, clock)
    gateway_nc = await nats.connect(auth_nats.url("gateway"), inbox_prefix=GATEWAY_INBOX_PREFIX.encode())
    inbox = Inbox()
    await gateway_nc.subscribe(subjects.all_social_events(), cb=inbox.on)
    gateway = await GatewayClient.connect(auth_nats.url("gateway"))
    channel = grpc.aio.insecure_channel(social.address)
    p = Platform(
        auth_nats, clock, table, social, channel, social_pb2_grpc.SocialServiceStub(channel), gateway, gateway_nc, inbox
    )
    try:
        yield p
    finally:
        await p.channel.close()  # a test may have restarted the social service: its current one
        await gateway.nc.close()
        await gateway_nc.close()
        await p.social.stop()
        await table.stop()


async def test_friends_see_each_other_online_and_invite_and_write_directly(platform: Platform) -> None:
    p, stub = platform, platform.stub
    named = (*as_player("p1"), (DISPLAY_NAME_METADATA, "ليلى\u202e".encode()))  # a bidi override is cleaned off
    asked = await stub.RequestFriend(pb.RequestFriendRequest(player_id="p2"), metadata=named)
    assert asked.state == pb.FRIEND_STATE_REQUESTED
    await until(lambda: p.inbox.of("p2", "friend_request_received"), "p2 told of the request")
    assert p.inbox.of("p2", "friend_request_received")[0].friend_request_received.display_name == "ليلى"
    answered = await stub.AnswerFriendRequest(
        pb.AnswerFriendRequestRequest(player_id="p1", accept=True), metadata=as_player("p2")
    )
    assert answered.state == pb.FRIEND_STATE_FRIENDS
    await until(lambda: p.inbox.of("p1", "friend_request_accepted"), "p1 told of the acceptance")

    await p.connect("p2", "s-2")
    online = lambda: [  # noqa: E731
        e.friend_presence_changed.presence
        for e in p.inbox.of("p1", "friend_presence_changed")
        if e.friend_presence_changed.player_id == "p2"
    ]
    await until(lambda: pb.PRESENCE_STATUS_IN_LOBBY in online(), "p2 online in the lobby for p1")
    listed = await stub.ListFriends(pb.ListFriendsRequest(), metadata=as_player("p1"))
    assert [(f.player_id, f.state, f.presence) for f in listed.friends] == [
        ("p2", pb.FRIEND_STATE_FRIENDS, pb.PRESENCE_STATUS_IN_LOBBY)
    ]
    await p.create_table("game-1", common_pb2.VARIANT_COMPLEX)  # p2 sits at it
    await until(lambda: pb.PRESENCE_STATUS_IN_GAME in online(), "p2 in a game for p1")
    listed = await stub.ListFriends(pb.ListFriendsRequest(), metadata=as_player("p1"))
    assert [(f.presence, f.table_id) for f in listed.friends] == [(pb.PRESENCE_STATUS_IN_GAME, "game-1")]
    # A stranger is never shown p2's presence.
    await stub.RequestFriend(pb.RequestFriendRequest(player_id="p2"), metadata=as_player("p9"))
    strangers = await stub.ListFriends(pb.ListFriendsRequest(), metadata=as_player("p9"))
    assert [(f.state, f.presence) for f in strangers.friends] == [
        (pb.FRIEND_STATE_REQUESTED, pb.PRESENCE_STATUS_UNSPECIFIED)
    ]

    invite = await stub.SendInvite(
        pb.SendInviteRequest(player_id="p2", kind=pb.INVITE_KIND_PRIVATE_TABLE, target="ABC123"),
        metadata=as_player("p1"),
    )
    assert "/invite/table/ABC123" in invite.link and "from=p1" in invite.link
    await until(lambda: p.inbox.of("p2", "invite_received"), "p2 given the invitation")
    assert p.inbox.of("p2", "invite_received")[0].invite_received.link == invite.link

    direct = pb.ChatChannel(kind=pb.CHAT_CHANNEL_KIND_DIRECT, id="p2")
    sent = await stub.SendChat(pb.SendChatRequest(channel=direct, text="salam"), metadata=as_player("p1"))
    assert sent.delivered
    await until(lambda: p.inbox.lines(subjects.social_player_events("p2")), "p2 given the direct line")
    assert p.inbox.lines(subjects.social_player_events("p2"))[0].channel.id == "p1"
    with pytest.raises(grpc.aio.AioRpcError) as refused:
        await stub.SendInvite(
            pb.SendInviteRequest(player_id="p2", kind=pb.INVITE_KIND_WATCH_TABLE, target="t1"), metadata=as_player("p9")
        )
    assert refused.value.code() == grpc.StatusCode.PERMISSION_DENIED


async def test_table_chat_is_delivered_and_its_history_paged(platform: Platform) -> None:
    p = platform
    await p.create_table("chat-1", common_pb2.VARIANT_COMPLEX)
    for i in range(7):
        assert (await p.say(PLAYERS[i % 4], "chat-1", f"line {i}")).delivered
    players_subject = subjects.social_channel_events("chat-1", "players")
    await until(lambda: len(p.inbox.lines(players_subject)) == 7, "the seven lines delivered")
    channel = pb.ChatChannel(kind=PLAYERS_CHANNEL, id="chat-1")
    seen, token_ = [], ""
    for size in (3, 3, 3):
        page = await p.stub.ListChatHistory(
            pb.ListChatHistoryRequest(channel=channel, page_size=size, page_token=token_), metadata=as_player("p2")
        )
        seen.append([line.text for line in page.lines])
        token_ = page.next_page_token
        if not token_:
            break
    assert seen == [["line 6", "line 5", "line 4"], ["line 3", "line 2", "line 1"], ["line 0"]]
    # A spectator reads the players' channel too.
    watched = await p.stub.ListChatHistory(pb.ListChatHistoryRequest(channel=channel), metadata=as_player("w1"))
    assert len(watched.lines) == 7


async def test_a_spectator_never_writes_into_the_players_channel(platform: Platform) -> None:
    p = platform
    await p.create_table("chat-2", common_pb2.VARIANT_COMPLEX)
    with pytest.raises(grpc.aio.AioRpcError) as refused:
        await p.say("w1", "chat-2", "I am only watching")
    assert refused.value.code() == grpc.StatusCode.PERMISSION_DENIED
    assert (await p.say("w1", "chat-2", "nice hand", SPECTATORS_CHANNEL)).delivered
    with pytest.raises(grpc.aio.AioRpcError) as seated:
        await p.say("p1", "chat-2", "hello watchers", SPECTATORS_CHANNEL)
    assert seated.value.code() == grpc.StatusCode.PERMISSION_DENIED
    assert (await p.say("p1", "chat-2", "hello table")).delivered
    players_subject = subjects.social_channel_events("chat-2", "players")
    await until(lambda: p.inbox.lines(players_subject), "the player's line delivered")
    await until(lambda: p.inbox.lines(subjects.social_channel_events("chat-2", "spectators")), "the spectator's line")
    assert [(line.author_id, line.text) for line in p.inbox.lines(players_subject)] == [("p1", "hello table")]


async def test_a_blocked_players_lines_are_hidden_from_the_blocker_both_ways(platform: Platform) -> None:
    p, stub = platform, platform.stub
    await p.create_table("chat-3", common_pb2.VARIANT_COMPLEX)
    await stub.SetBlocked(pb.SetBlockedRequest(player_id="p1", blocked=True), metadata=as_player("p3"))
    await stub.SetMuted(pb.SetMutedRequest(player_id="p4", muted=True), metadata=as_player("p2"))
    # His mutes are his to list (a client shows them after a reload), nobody else's.
    listed = await stub.ListFriends(pb.ListFriendsRequest(), metadata=as_player("p2"))
    assert list(listed.muted_player_ids) == ["p4"]
    assert not (await stub.ListFriends(pb.ListFriendsRequest(), metadata=as_player("p4"))).muted_player_ids
    await p.say("p1", "chat-3", "from p1")
    await p.say("p4", "chat-3", "from p4")
    await p.say("p3", "chat-3", "from p3")
    subject = subjects.social_channel_events("chat-3", "players")
    await until(lambda: len(p.inbox.lines(subject)) == 3, "the three lines published")
    assert [line.text for line in p.inbox.lines(subject, reader="p3")] == ["from p4", "from p3"]
    assert [line.text for line in p.inbox.lines(subject, reader="p1")] == ["from p1", "from p4"]
    assert [line.text for line in p.inbox.lines(subject, reader="p2")] == ["from p1", "from p3"]
    channel = pb.ChatChannel(kind=PLAYERS_CHANNEL, id="chat-3")
    history = await stub.ListChatHistory(pb.ListChatHistoryRequest(channel=channel), metadata=as_player("p3"))
    assert [line.text for line in history.lines] == ["from p3", "from p4"]
    # The blocked player is not told: his request is kept, never delivered.
    asked = await stub.RequestFriend(pb.RequestFriendRequest(player_id="p3"), metadata=as_player("p1"))
    assert asked.state == pb.FRIEND_STATE_REQUESTED
    await asyncio.sleep(0.2)
    assert not p.inbox.of("p3", "friend_request_received")
    # A block ends a friendship: no direct line, no invitation either way, nothing delivered.
    await stub.RequestFriend(pb.RequestFriendRequest(player_id="p4"), metadata=as_player("p2"))
    await stub.AnswerFriendRequest(pb.AnswerFriendRequestRequest(player_id="p2", accept=True), metadata=as_player("p4"))
    await stub.SetBlocked(pb.SetBlockedRequest(player_id="p4", blocked=True), metadata=as_player("p2"))
    direct = pb.ChatChannel(kind=pb.CHAT_CHANNEL_KIND_DIRECT, id="p2")
    invite = pb.SendInviteRequest(player_id="p2", kind=pb.INVITE_KIND_WATCH_TABLE, target="chat-3")
    for call in (
        stub.SendChat(pb.SendChatRequest(channel=direct, text="hey"), metadata=as_player("p4")),
        stub.SendInvite(invite, metadata=as_player("p4")),
    ):
        with pytest.raises(grpc.aio.AioRpcError) as blocked:
            await call
        assert blocked.value.code() == grpc.StatusCode.PERMISSION_DENIED
    await asyncio.sleep(0.2)
    assert not p.inbox.lines(subjects.social_player_events("p2")) and not p.inbox.of("p2", "invite_received")
    # A reported line is kept with its context for an operator alone.
    reported = history.lines[1]
    await stub.ReportLine(
        pb.ReportLineRequest(channel=channel, line_id=reported.line_id, reason="rude"), metadata=as_player("p3")
    )
    reports = await stub.ListReports(pb.ListReportsRequest(), metadata=as_admin())
    assert [(r.reporter_id, r.line.text, [c.text for c in r.context]) for r in reports.reports] == [
        ("p3", "from p4", ["from p1", "from p3"])
    ]
    with pytest.raises(grpc.aio.AioRpcError) as player_asks:
        await stub.ListReports(pb.ListReportsRequest(), metadata=as_player("p3"))
    assert player_asks.value.code() == grpc.StatusCode.PERMISSION_DENIED


async def test_a_flood_is_cut_and_the_others_lines_still_arrive(platform: Platform) -> None:
    p = platform
    await p.create_table("chat-4", common_pb2.VARIANT_COMPLEX)
    assert (await p.say("p1", "chat-4", "one")).delivered
    channel = pb.ChatChannel(kind=PLAYERS_CHANNEL, id="chat-4")
    with pytest.raises(grpc.aio.AioRpcError) as flood:
        await p.stub.SendChat(pb.SendChatRequest(channel=channel, text="two"), metadata=as_player("p1"))
    assert flood.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
    repeated = await p.say("p1", "chat-4", "one")
    assert not repeated.delivered  # a repeated line is dropped
    assert (
        await p.stub.SendChat(pb.SendChatRequest(channel=channel, text="hi all"), metadata=as_player("p2"))
    ).delivered
    subject = subjects.social_channel_events("chat-4", "players")
    await until(lambda: len(p.inbox.lines(subject)) == 2, "p1's first line and p2's")
    assert [line.text for line in p.inbox.lines(subject)] == ["one", "hi all"]
    with pytest.raises(grpc.aio.AioRpcError) as long_line:
        await p.say("p3", "chat-4", "x" * 281)
    assert long_line.value.code() == grpc.StatusCode.INVALID_ARGUMENT


async def test_partner_free_text_during_a_deal_is_refused_by_default(platform: Platform) -> None:
    p = platform
    await p.create_table("duo-1", common_pb2.VARIANT_TRIX_PARTNERSHIP)
    free = common_pb2.TableOptions(partner_chat=common_pb2.PARTNER_CHAT_FREE_TEXT)
    await p.create_table("duo-2", common_pb2.VARIANT_TRIX_PARTNERSHIP, free)
    await until(
        lambda: all(p.social_service().tables.tables[t].deal_in_progress for t in ("duo-1", "duo-2")),
        "both tables' first deal started",
    )
    with pytest.raises(grpc.aio.AioRpcError) as refused:
        await p.say("p1", "duo-1", "I have the king of hearts")
    assert refused.value.code() == grpc.StatusCode.PERMISSION_DENIED
    assert "quick phrases" in (refused.value.details() or "")
    channel = pb.ChatChannel(kind=PLAYERS_CHANNEL, id="duo-1")
    phrase = await p.stub.SendChat(
        pb.SendChatRequest(channel=channel, phrase_id="well_played"), metadata=as_player("p1")
    )
    assert phrase.delivered
    assert (await p.say("p1", "duo-2", "good luck partner")).delivered


async def test_a_restarted_social_service_is_given_the_results_it_missed(platform: Platform) -> None:
    """Its table facts come from TABLE_RESULTS by its durable consumer: a table created while
    it was down is known when it is back (its players in a game, §15 applied), and a table it
    saw before the restart is read back when its chat is used."""
    p = platform
    await p.create_table("before-1", common_pb2.VARIANT_COMPLEX)
    await p.social.stop()
    await p.channel.close()
    missed = ("q1", "q2", "q3", "q4")
    await p.create_table("missed-1", common_pb2.VARIANT_TRIX_PARTNERSHIP, players=missed, seen=False)
    p.social = await _start_social(p.nats, p.clock)
    p.channel = grpc.aio.insecure_channel(p.social.address)
    p.stub = social_pb2_grpc.SocialServiceStub(p.channel)
    await until(lambda: "missed-1" in p.social_service().tables.tables, "the missed table delivered")
    assert {q: p.social_service().tables.live_table.get(q) for q in missed} == dict.fromkeys(missed, "missed-1")
    with pytest.raises(grpc.aio.AioRpcError) as refused:
        await p.say("q1", "missed-1", "partner, lead hearts")
    assert refused.value.code() == grpc.StatusCode.PERMISSION_DENIED
    assert "before-1" not in p.social_service().tables.tables
    assert (await p.say("p1", "before-1", "still here")).delivered
    assert p.social_service().tables.live_table["p1"] == "before-1"


async def _competition(p: Platform, competition_id: str, chat: bool, entrants: tuple[str, ...]) -> None:
    """A competition's events as the competitions service appends them (its own NATS user)."""
    nc = await nats.connect(p.nats.url("competitions"), inbox_prefix=inbox_prefix("competitions").encode())
    try:
        js = nc.jetstream()
        options = competitions_pb2.CompetitionOptions(chat=chat)
        created = competitions_pb2.CompetitionCreated(
            competition=competitions_pb2.Competition(competition_id=competition_id, organiser_id="org", options=options)
        )
        events = [competitions_pb2.CompetitionEvent(competition_id=competition_id, sequence=1, created=created)]
        for i, player in enumerate(entrants, start=2):
            entrant = competitions_pb2.Entrant(player_id=player)
            registered = competitions_pb2.EntrantRegistered(entrant=entrant)
            events.append(
                competitions_pb2.CompetitionEvent(competition_id=competition_id, sequence=i, registered=registered)
            )
        for event in events:
            await js.publish(subjects.competition_events(competition_id), event.SerializeToString())
    finally:
        await nc.close()


async def test_a_competitions_chat_is_its_members_when_its_organiser_turned_it_on(platform: Platform) -> None:
    p = platform
    await _competition(p, "cup-1", True, ("p1", "p2"))
    await _competition(p, "cup-2", False, ("p1",))
    cup = pb.ChatChannel(kind=pb.CHAT_CHANNEL_KIND_COMPETITION, id="cup-1")
    assert (
        await p.stub.SendChat(pb.SendChatRequest(channel=cup, text="good luck all"), metadata=as_player("p1"))
    ).delivered
    await until(lambda: p.inbox.lines(subjects.social_channel_events("cup-1", "competition")), "the line delivered")
    for player, competition in (("p9", "cup-1"), ("p1", "cup-2")):
        channel = pb.ChatChannel(kind=pb.CHAT_CHANNEL_KIND_COMPETITION, id=competition)
        with pytest.raises(grpc.aio.AioRpcError) as refused:
            await p.stub.SendChat(pb.SendChatRequest(channel=channel, text="hello"), metadata=as_player(player))
        assert refused.value.code() == grpc.StatusCode.PERMISSION_DENIED
