"""Issue 44, `make test-social`: friends and chat through the real gateway.

The whole platform runs as processes (a real nats-server, the table, timers, matchmaking,
scoring, the social service and the gateway, real gRPC on 127.0.0.1, the real C engine);
players are `trix.client.GatewayClient`s, each with a Session stream that carries his social
events (`SessionResponse.social_event`). Two players become friends and see each other
online, one invites the other to a private partnership table by a link, two more join it and
a fifth watches it; during the deal they chat: a partner's free text is refused under the
default `partner_chat` (docs/rules.md §15), a quick phrase passes; a blocked player's lines
and invitations never reach the player who blocked him; a spectator cannot write into the
players' channel and his own channel never reaches the players; a flood is cut and the
others' lines still arrive.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import re
import sys
import time
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

import grpc
import pexpect
import pytest

from trix.client import GatewayClient
from trix.embedded import EmbeddedPlatform
from trix.v1 import common_pb2, gateway_pb2, matchmaking_pb2, social_pb2

pytestmark = pytest.mark.timeout(240)

PLAYERS = social_pb2.CHAT_CHANNEL_KIND_TABLE_PLAYERS
SPECTATORS = social_pb2.CHAT_CHANNEL_KIND_TABLE_SPECTATORS
DIRECT = social_pb2.CHAT_CHANNEL_KIND_DIRECT
WAIT_S = 20.0
QUIET_S = 1.5
"""How long a line that must not arrive is waited for (after a later line did arrive)."""


@pytest.fixture(scope="module")
def target(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    state: Path = tmp_path_factory.mktemp("social-platform")
    env = {"TRIX_GATEWAY_RATE_PER_S": "400", "TRIX_GATEWAY_RATE_BURST": "400"}
    embedded = EmbeddedPlatform(state, fresh=True, env=env)
    try:
        yield embedded.start()
    finally:
        embedded.stop()


_ids = itertools.count(1)


@dataclass
class Player:
    """A signed-in player with his Session stream; what it brings, kept."""

    name: str
    client: GatewayClient
    stream: AsyncIterator[gateway_pb2.SessionResponse]
    seen: list[gateway_pb2.SessionResponse] = field(default_factory=list)
    reader: asyncio.Task[None] | None = None

    @property
    def id(self) -> str:
        return self.client.player_id

    async def read(self) -> None:
        async for message in self.stream:
            self.seen.append(message)

    async def social(self, **request: Any) -> gateway_pb2.SocialResponse:
        reply: gateway_pb2.SocialResponse = await self.client.stub.Social(
            gateway_pb2.SocialRequest(**request), metadata=self.client.metadata, timeout=10
        )
        return reply

    async def refused(self, **request: Any) -> grpc.StatusCode:
        with pytest.raises(grpc.aio.AioRpcError) as refused:
            await self.social(**request)
        return refused.value.code()

    def send(self, **request: object) -> str:
        rid = f"r{next(_ids)}"
        self.client.send(gateway_pb2.SessionRequest(request_id=rid, **request))  # type: ignore[arg-type]
        return rid

    def events(self) -> list[social_pb2.SocialEvent]:
        return [m.social_event for m in self.seen if m.HasField("social_event")]

    def lines(self) -> list[social_pb2.ChatLine]:
        return [e.chat_line for e in self.events() if e.HasField("chat_line")]

    def lines_of(self, author: str) -> list[social_pb2.ChatLine]:
        return [x for x in self.lines() if x.author_id == author]

    def phrases(self, phrase_id: str) -> list[social_pb2.ChatLine]:
        return [x for x in self.lines() if x.phrase.id == phrase_id]

    def has_event(self, kind: str) -> bool:
        return any(m.event.HasField(kind) for m in self.seen)  # type: ignore[arg-type]

    async def until(self, what: str, found: Callable[[], object]) -> object:
        deadline = time.monotonic() + WAIT_S
        while time.monotonic() < deadline:
            got = found()
            if got:
                return got
            errors = [m.error for m in self.seen if m.HasField("error")]
            assert not errors, (self.name, errors)
            await asyncio.sleep(0.05)
        raise AssertionError(f"{self.name}: no {what} in {WAIT_S} s")

    async def answer(self, rid: str, kind: str) -> gateway_pb2.SessionResponse:
        def got() -> gateway_pb2.SessionResponse | None:
            return next((m for m in self.seen if m.request_id == rid and m.HasField(kind)), None)  # type: ignore[arg-type]

        found = await self.until(f"{kind} answering {rid}", got)
        assert isinstance(found, gateway_pb2.SessionResponse)
        return found


async def player(target: str, name: str) -> Player:
    client = GatewayClient(target)
    await client.sign_in(f"device-secret-of-{name}-0123456789abcdef", name)
    p = Player(name, client, client.open())
    p.reader = asyncio.ensure_future(p.read())
    p.send(ping=True)  # the stream is open (and its presence published) once answered
    await p.until("pong", lambda: any(m.HasField("pong") for m in p.seen))
    return p


async def close(*players: Player) -> None:
    for p in players:
        if p.reader is not None:
            p.reader.cancel()
            with contextlib.suppress(BaseException):
                await p.reader
        await p.client.close()


def channel(kind: int, channel_id: str) -> social_pb2.ChatChannel:
    return social_pb2.ChatChannel(kind=kind, id=channel_id)  # type: ignore[arg-type]


def phrase(table_id: str, phrase_id: str, kind: int = PLAYERS) -> social_pb2.SendChatRequest:
    return social_pb2.SendChatRequest(channel=channel(kind, table_id), phrase_id=phrase_id)


def text(table_id: str, words: str, kind: int = PLAYERS) -> social_pb2.SendChatRequest:
    return social_pb2.SendChatRequest(channel=channel(kind, table_id), text=words)


async def befriend(one: Player, other: Player) -> None:
    asked = await one.social(request_friend=social_pb2.RequestFriendRequest(player_id=other.id))
    assert asked.request_friend.state == social_pb2.FRIEND_STATE_REQUESTED
    await other.until(
        f"friend request of {one.name}",
        lambda: any(e.friend_request_received.player_id == one.id for e in other.events()),
    )
    answered = await other.social(answer_friend=social_pb2.AnswerFriendRequestRequest(player_id=one.id, accept=True))
    assert answered.answer_friend.state == social_pb2.FRIEND_STATE_FRIENDS
    await one.until(
        f"acceptance of {other.name}",
        lambda: any(e.friend_request_accepted.player_id == other.id for e in one.events()),
    )


async def friend_entry(reader: Player, friend_id: str, presence: int) -> social_pb2.Friend:
    """`friend_id` in `reader`'s friends list once shown with `presence` (the social service
    hears presence from the gateway's stream, a moment after a session opens or closes)."""
    deadline = time.monotonic() + WAIT_S
    while True:
        listed = await reader.social(list_friends=social_pb2.ListFriendsRequest())
        entry = next((f for f in listed.list_friends.friends if f.player_id == friend_id), None)
        if entry is not None and entry.presence == presence:
            return entry
        assert time.monotonic() < deadline, (reader.name, friend_id, entry)
        await asyncio.sleep(0.1)


async def test_friends_invite_chat_block_spectators_flood_and_partners(target: str) -> None:
    names = ("amal", "بدر", "cyra", "dina", "eli", "fadi")  # an Arabic display name travels as UTF-8
    amal, badr, cyra, dina, eli, fadi = [await player(target, n) for n in names]
    try:
        # Two players become friends and see each other online.
        await befriend(amal, badr)
        entry = await friend_entry(amal, badr.id, social_pb2.PRESENCE_STATUS_IN_LOBBY)
        assert entry.state == social_pb2.FRIEND_STATE_FRIENDS
        assert entry.display_name == "بدر"

        # One invites the other to a private partnership table; the link opens after sign-in.
        wish = matchmaking_pb2.GameWish(variant=common_pb2.VARIANT_TRIX_PARTNERSHIP)
        rid = amal.send(create_private=gateway_pb2.CreatePrivateGameRequest(wish=wish))
        code = (await amal.answer(rid, "private_game")).private_game.code
        kind = social_pb2.INVITE_KIND_PRIVATE_TABLE
        sent = await amal.social(send_invite=social_pb2.SendInviteRequest(player_id=badr.id, kind=kind, target=code))
        received = await badr.until(
            "invitation", lambda: [e.invite_received for e in badr.events() if e.HasField("invite_received")]
        )
        assert isinstance(received, list)
        assert received[0].player_id == amal.id and received[0].link == sent.send_invite.link
        opened = await badr.social(open_invite=gateway_pb2.OpenInviteRequest(code=received[0].link))
        assert (opened.open_invite.kind, opened.open_invite.target) == (kind, code)
        assert opened.open_invite.player_id == amal.id
        # cyra is badr's friend too, until he blocks her (she is not told).
        await befriend(cyra, badr)
        for p in (badr, cyra, dina):
            rid = p.send(join_private=gateway_pb2.JoinPrivateGameRequest(code=opened.open_invite.target))
            await p.answer(rid, "ticket")
        await badr.social(set_blocked=social_pb2.SetBlockedRequest(player_id=cyra.id, blocked=True))
        rid = amal.send(start_private=gateway_pb2.StartPrivateGameRequest(code=code, partner=1))
        table_id = (await amal.answer(rid, "private_started")).private_started.table_id
        for p in (amal, badr, cyra, dina):  # each follows the table (its deal under way)
            await p.until("the deal", partial(p.has_event, "deal_started"))

        # A partner's free text during the deal is refused (default partner_chat); a phrase passes.
        assert await amal.refused(send_chat=text(table_id, "I hold the king of hearts")) == (
            grpc.StatusCode.PERMISSION_DENIED
        )
        said = await amal.social(send_chat=phrase(table_id, "greeting"))
        assert said.send_chat.delivered
        for p in (badr, cyra, dina):
            await p.until("amal's greeting", partial(p.phrases, "greeting"))

        # The blocked player's line reaches the others, never the player who blocked her.
        assert (await cyra.social(send_chat=phrase(table_id, "good_luck"))).send_chat.delivered
        for p in (amal, dina):
            await p.until("cyra's line", partial(p.lines_of, cyra.id))
        # ... nor her invitation or direct message.
        invite = social_pb2.SendInviteRequest(
            player_id=badr.id, kind=social_pb2.INVITE_KIND_WATCH_TABLE, target=table_id
        )
        with contextlib.suppress(grpc.aio.AioRpcError):
            await cyra.social(send_invite=invite)
        with contextlib.suppress(grpc.aio.AioRpcError):
            direct = social_pb2.SendChatRequest(channel=channel(DIRECT, badr.id), text="hello badr")
            assert not (await cyra.social(send_chat=direct)).send_chat.delivered

        # At a public table (fadi's, bots in the other seats), a spectator reads the players'
        # channel but never writes into it; his own channel never reaches the players.
        fadi.send(
            find_match=gateway_pb2.FindMatchRequest(wish=matchmaking_pb2.GameWish(variant=common_pb2.VARIANT_COMPLEX))
        )
        await fadi.until("his table", lambda: any(m.event.HasField("table_created") for m in fadi.seen))
        public = next(m.event.table_id for m in fadi.seen if m.event.HasField("table_created"))
        eli.send(watch=gateway_pb2.SpectateRequest(table_id=public))
        await eli.until("the table watched", lambda: any(m.event.HasField("table_created") for m in eli.seen))
        assert await eli.refused(send_chat=phrase(public, "oops")) == grpc.StatusCode.PERMISSION_DENIED
        assert (await eli.social(send_chat=phrase(public, "well_played", SPECTATORS))).send_chat.delivered
        await eli.until("his own spectators' line", lambda: [x for x in eli.lines() if x.author_id == eli.id])
        assert (await fadi.social(send_chat=phrase(public, "good_luck"))).send_chat.delivered
        await eli.until("the player's line", lambda: [x for x in eli.lines() if x.author_id == fadi.id])

        # A flood is cut; the others' lines still arrive.
        flood = ["hurry_up", "thank_you", "good_game", "oops", "bye", "well_played", "good_luck", "greeting"]
        answers = await asyncio.gather(
            *(dina.social(send_chat=phrase(table_id, p)) for p in flood * 2), return_exceptions=True
        )
        cut = [a for a in answers if isinstance(a, grpc.aio.AioRpcError)]
        assert cut and all(a.code() == grpc.StatusCode.RESOURCE_EXHAUSTED for a in cut), answers
        assert len(cut) < len(answers)
        assert (await badr.social(send_chat=phrase(table_id, "thank_you"))).send_chat.delivered
        for p in (amal, dina):
            await p.until("badr's line after the flood", partial(p.lines_of, badr.id))

        # What must never arrive: (waited for past the lines that did)
        await asyncio.sleep(QUIET_S)
        assert not [x for x in badr.lines() if x.author_id == cyra.id]
        assert not [x for x in cyra.lines() if x.author_id == badr.id]  # a block hides both ways
        assert not [e for e in badr.events() if e.invite_received.player_id == cyra.id]
        for p in (amal, badr, cyra, dina, fadi):
            assert not [x for x in p.lines() if x.author_id == eli.id], p.name
            assert all(x.channel.kind == PLAYERS for x in p.lines())
        # History holds the table's lines, newest first.
        history = await dina.social(chat_history=social_pb2.ListChatHistoryRequest(channel=channel(PLAYERS, table_id)))
        authors = [x.author_id for x in history.chat_history.lines]
        assert authors[-1] == amal.id and eli.id not in authors
    finally:
        await close(amal, badr, cyra, dina, eli, fadi)


async def test_a_seated_players_setting_reads_the_spectators_channel_live_and_his_mutes_are_listed(
    target: str,
) -> None:
    """docs/rules.md §15: a player reads the spectators' channel only if his own setting says
    so. Off (the default) their lines never reach him; on (`set_spectator_chat`), they arrive
    live, but a muted spectator's; off again, they stop. His mutes come back in his friends
    list (a client shows them after a reload)."""
    ines, jad, kamal = [await player(target, n) for n in ("ines", "jad", "kamal")]
    try:
        ines.send(
            find_match=gateway_pb2.FindMatchRequest(wish=matchmaking_pb2.GameWish(variant=common_pb2.VARIANT_COMPLEX))
        )
        await ines.until("her table", lambda: any(m.event.HasField("table_created") for m in ines.seen))
        public = next(m.event.table_id for m in ines.seen if m.event.HasField("table_created"))
        for p in (jad, kamal):
            p.send(watch=gateway_pb2.SpectateRequest(table_id=public))
            await p.until("the table watched", partial(p.has_event, "table_created"))

        def spectators_lines(phrase_id: str) -> Callable[[Player], list[social_pb2.ChatLine]]:
            return lambda p: [x for x in p.phrases(phrase_id) if x.channel.kind == SPECTATORS]

        async def says(who: Player, phrase_id: str) -> None:
            await asyncio.sleep(0.6)  # a spectator's pace (docs/adr/0027: 500 ms between lines)
            assert (await who.social(send_chat=phrase(public, phrase_id, SPECTATORS))).send_chat.delivered
            await jad.until(f"{who.name}'s {phrase_id}", partial(spectators_lines(phrase_id), jad))

        await says(jad, "greeting")  # the setting is off: not to ines
        await ines.social(set_spectator_chat=gateway_pb2.SetSpectatorChatRequest(table_id=public, on=True))
        await ines.social(set_muted=social_pb2.SetMutedRequest(player_id=kamal.id, muted=True))
        await says(kamal, "thank_you")  # muted by ines: never to her
        await says(jad, "well_played")
        await ines.until("the spectator's line, live", partial(spectators_lines("well_played"), ines))
        await ines.social(set_spectator_chat=gateway_pb2.SetSpectatorChatRequest(table_id=public, on=False))
        await says(jad, "good_game")  # the setting is off again
        await asyncio.sleep(QUIET_S)
        heard = [(x.author_id, x.phrase.id) for x in ines.lines() if x.channel.kind == SPECTATORS]
        assert heard == [(jad.id, "well_played")]

        listed = await ines.social(list_friends=social_pb2.ListFriendsRequest())
        assert list(listed.list_friends.muted_player_ids) == [kamal.id]
        bad = gateway_pb2.SetSpectatorChatRequest(table_id="no such table!", on=True)
        assert await ines.refused(set_spectator_chat=bad) == grpc.StatusCode.INVALID_ARGUMENT
    finally:
        await close(ines, jad, kamal)


async def test_the_social_events_stream_brings_a_web_player_online_and_his_friend_requests(target: str) -> None:
    """A web client has no Session stream: SocialEvents carries his social events, and while
    it is open his friends see him online; once it closes, offline."""
    gina, hadi = await player(target, "gina"), await player(target, "hadi")
    web = GatewayClient(target)
    try:
        await web.sign_in("device-secret-of-web-player-0123456789abcdef", "wafa")
        events = web.stub.SocialEvents(gateway_pb2.SocialEventsRequest(), metadata=web.metadata)
        await asyncio.wait_for(events.initial_metadata(), WAIT_S)
        await gina.social(request_friend=social_pb2.RequestFriendRequest(player_id=web.player_id))
        got = await asyncio.wait_for(events.read(), WAIT_S)
        assert isinstance(got, gateway_pb2.SocialEventsResponse)
        assert got.event.friend_request_received.player_id == gina.id
        assert got.event.friend_request_received.display_name == "gina"
        await web.stub.Social(
            gateway_pb2.SocialRequest(
                answer_friend=social_pb2.AnswerFriendRequestRequest(player_id=gina.id, accept=True)
            ),
            metadata=web.metadata,
            timeout=10,
        )
        await friend_entry(gina, web.player_id, social_pb2.PRESENCE_STATUS_IN_LOBBY)
        events.cancel()
        await gina.until(
            "wafa offline",
            lambda: any(
                e.friend_presence_changed.player_id == web.player_id
                and e.friend_presence_changed.presence == social_pb2.PRESENCE_STATUS_OFFLINE
                for e in gina.events()
            ),
        )
        # Bad requests: the right status and a message a client can show.
        assert await hadi.refused() == grpc.StatusCode.INVALID_ARGUMENT
        bad = gateway_pb2.OpenInviteRequest(code="https://example.org/not-an-invite")
        assert await hadi.refused(open_invite=bad) == grpc.StatusCode.INVALID_ARGUMENT
        expired = gateway_pb2.OpenInviteRequest(code=f"/invite/table/ABC123?from={gina.id}&expires=1000")
        assert await hadi.refused(open_invite=expired) == grpc.StatusCode.INVALID_ARGUMENT
    finally:
        await close(gina, hadi)
        await web.close()


def test_trix_play_says_a_quick_phrase_and_lists_friends(target: str, tmp_path: Path) -> None:
    """`trix play` (through a pty, plain lines): `/p 1` says the greeting at its table, in the
    reader's language, and `/friends` lists none yet."""
    argv = ["-m", "trix.cli", "play", "--server", target, "--lang", "ar", "--plain", "--name", "tarek"]
    argv += ["--device-file", str(tmp_path / "device")]
    child = pexpect.spawn(sys.executable, argv, encoding="utf-8", timeout=60, dimensions=(50, 160))
    try:
        child.expect("matched: table")
        child.sendline("/p 1")
        child.expect(re.escape("[tarek] السلام عليكم"))
        child.sendline("/friends")
        child.expect("no friends yet")
        child.sendline("/what")
        child.expect("chat: /say TEXT")
        child.sendline("q")
        child.expect(pexpect.EOF)
    finally:
        child.close(force=True)
