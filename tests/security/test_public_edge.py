"""Issue 18, findings 5 and 6 and the private tables of finding 7, on `trix up` (two gateway
replicas, the Envoy edge in front of the first; ADR 0018):

- public tokens: one key for every replica (each accepts the other's tokens), a key id in
  the header, the previous key still accepted after a rotation, a removed key refused, a
  short lifetime with RefreshToken;
- limits per player and per client address, never per TCP peer: through the real edge one
  flooding player does not get another player's call refused; the gateway believes the
  edge's client address only beside the edge's secret; new guest accounts per address are
  bounded; one player's concurrent streams are capped;
- a private table is watched by its players only (PERMISSION_DENIED for anyone else);
- the table service's own gRPC seat stream (tools and admin) follows a game live under the
  table's NATS user, as the gateway's does.
"""

from __future__ import annotations

import asyncio
import random
import secrets
import time
from collections.abc import AsyncIterator, Iterator
from typing import Any

import grpc
import pytest
from security_support import ACCOUNTS_BURST, ACCOUNTS_PER_HOUR, REFUSED, Backend, gateway_process, report

from trix.client import GatewayClient, pick
from trix.gateway.tokens import HmacTokens
from trix.runtime.identity import GATEWAY_KEY_ENV as GATEWAY_KEY
from trix.runtime.identity import PLAYER_KEY_ENV, ROLE_PLAYER, TOKEN_METADATA, sign
from trix.v1 import common_pb2, events_pb2, gateway_pb2, gateway_pb2_grpc, matchmaking_pb2, table_pb2, table_pb2_grpc

DEADLINE_S = 30.0
DENIED = grpc.StatusCode.PERMISSION_DENIED
ACCEPTED = "accepted"
NOT_BELIEVED = "not believed"
SHORT_TOKEN_S = 3
"""The token lifetime of the short-lived gateway (TRIX_GATEWAY_TOKEN_TTL_S)."""
SHORT_INVITATION_S = 2
"""Its invitations' lifetime (TRIX_GATEWAY_INVITATION_TTL_S)."""
LIVE_WITHIN_S = 5.0
"""A live event reaches a stream within this (milliseconds on an idle box); one served only when
the reader asks the owner again comes after a turn's deadline (8-15 s, docs/rules.md §9) and
5 s more."""


class Player:
    """One signed-in player on one gRPC target (a gateway replica or the edge)."""

    def __init__(self, target: str) -> None:
        self.channel = grpc.aio.insecure_channel(target)
        self.stub = gateway_pb2_grpc.GatewayServiceStub(self.channel)
        self.token = ""
        self.player_id = ""

    def on(self, target: str) -> Player:
        """The same player (his token) on another target."""
        other = Player(target)
        other.token, other.player_id = self.token, self.player_id
        return other

    @property
    def auth(self) -> tuple[tuple[str, str], ...]:
        return (("authorization", f"Bearer {self.token}"),)

    async def sign_in(self, name: str, metadata: tuple[tuple[str, str], ...] = ()) -> Player:
        reply = await self.stub.SignIn(
            gateway_pb2.SignInRequest(device_secret=f"device-of-{name}-{secrets.token_hex(8)}", display_name=name),
            metadata=metadata,
            timeout=DEADLINE_S,
        )
        self.token, self.player_id = reply.token, reply.player_id
        return self

    async def code_of_view(self) -> grpc.StatusCode:
        """The status of a plain call that needs only the token (no current table: NOT_FOUND)."""
        try:
            await self.stub.GetView(gateway_pb2.GetViewRequest(), metadata=self.auth, timeout=DEADLINE_S)
        except grpc.aio.AioRpcError as err:
            return err.code()
        return grpc.StatusCode.OK

    async def close(self) -> None:
        await self.channel.close()


async def _status(call: Any) -> grpc.StatusCode:
    try:
        await call
    except grpc.aio.AioRpcError as err:
        return err.code()
    return grpc.StatusCode.OK


@pytest.fixture(scope="module")
def short_gateway(up_platform: Backend, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A third gateway on trix up's NATS (its keys) whose tokens live SHORT_TOKEN_S seconds
    and invitations SHORT_INVITATION_S."""
    log_path = tmp_path_factory.mktemp("short-lived") / "gateway.log"
    lifetimes = {
        "TRIX_GATEWAY_TOKEN_TTL_S": str(SHORT_TOKEN_S),
        "TRIX_GATEWAY_INVITATION_TTL_S": str(SHORT_INVITATION_S),
    }
    with gateway_process(up_platform, log_path, **lifetimes) as target:
        yield target


# -- public tokens (finding 6) -------------------------------------------------------------


async def test_two_gateway_replicas_accept_each_others_tokens(up_platform: Backend) -> None:
    first, second = up_platform.gateways[:2]
    player = await Player(first).sign_in("replica-hopper")
    other = player.on(second)
    try:
        code = await other.code_of_view()
        outcome = ACCEPTED if code == grpc.StatusCode.NOT_FOUND else f"refused ({code.name})"
        report(up_platform, "token of replica 1 used on replica 2 (legitimate)", "player", outcome, ACCEPTED)
        assert code == grpc.StatusCode.NOT_FOUND, code  # authenticated; he has no current table
        refreshed = await other.stub.RefreshToken(gateway_pb2.RefreshTokenRequest(), metadata=other.auth, timeout=30)
        assert refreshed.token and refreshed.expires_at.seconds > time.time()  # (the same second: the same token)
        player.token = refreshed.token  # a token refreshed on replica 2 works on replica 1
        assert await player.code_of_view() == grpc.StatusCode.NOT_FOUND
    finally:
        await player.close()
        await other.close()


@pytest.fixture(scope="module")
def rotated_gateway(up_platform: Backend, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A gateway process after a key rotation: a new current key, trix up's as the previous."""
    log_path = tmp_path_factory.mktemp("rotated") / "gateway.log"
    rotation = {"TRIX_GATEWAY_TOKEN_KEY": NEW_KEY, "TRIX_GATEWAY_TOKEN_PREVIOUS_KEY": up_platform.env[GATEWAY_KEY]}
    with gateway_process(up_platform, log_path, **rotation) as target:
        yield target


NEW_KEY = secrets.token_hex(32)


async def test_a_token_survives_a_key_rotation_and_a_removed_keys_token_is_refused(
    up_platform: Backend, rotated_gateway: str
) -> None:
    player = await Player(up_platform.gateways[0]).sign_in("rotation-survivor")
    after = player.on(rotated_gateway)
    try:
        deadline = time.monotonic() + DEADLINE_S
        while True:
            code = await after.code_of_view()
            if code != grpc.StatusCode.UNAVAILABLE or time.monotonic() > deadline:
                break
            await asyncio.sleep(0.1)  # the rotated gateway is still connecting
        report(
            up_platform,
            "old key's token after a rotation (legitimate)",
            "player",
            ACCEPTED if code == grpc.StatusCode.NOT_FOUND else f"refused ({code.name})",
            ACCEPTED,
        )
        assert code == grpc.StatusCode.NOT_FOUND, code
        refreshed = await after.stub.RefreshToken(gateway_pb2.RefreshTokenRequest(), metadata=after.auth, timeout=30)
        # The refreshed token is under the new key: once the old key is removed, it alone works.
        finished = HmacTokens(NEW_KEY.encode(), 900)
        assert finished.verify(refreshed.token, time.time()).player_id == player.player_id
        with pytest.raises(Exception, match="key not accepted"):
            finished.verify(player.token, time.time())
        # And a replica still on the old key only refuses the new key's token (no kid it holds).
        newer = player.on(up_platform.gateways[1])
        newer.token = refreshed.token
        code = await newer.code_of_view()
        await newer.close()
        report(
            up_platform,
            "token of a key the gateway does not hold",
            "player",
            REFUSED if code.name == "UNAUTHENTICATED" else code.name,
        )
        assert code == grpc.StatusCode.UNAUTHENTICATED
    finally:
        await player.close()
        await after.close()


async def test_a_client_refreshes_its_token_by_itself_and_an_expired_token_is_refused(
    up_platform: Backend, short_gateway: str
) -> None:
    """trix.client's GatewayClient refreshes its token by itself (ADR 0018): on a gateway whose
    tokens live SHORT_TOKEN_S seconds, one client session lives three lifetimes and every call
    it makes meanwhile is authenticated, while its first token, never refreshed, is refused once
    expired (its own calls, a new stream and a refresh of it)."""
    client = GatewayClient(short_gateway)
    probe = Player(short_gateway)
    try:
        await client.sign_in(f"refresher-{secrets.token_hex(8)}", "refresher")
        first, first_expiry = client.token, client.expires_at
        assert first_expiry - time.time() <= SHORT_TOKEN_S + 1
        stream = aiter(client.open())
        pings = 0
        deadline = time.time() + 3 * SHORT_TOKEN_S
        while time.time() < deadline:
            client.send(gateway_pb2.SessionRequest(ping=True))  # the session goes on...
            reply = await asyncio.wait_for(anext(stream), DEADLINE_S)
            assert reply.pong, reply
            pings += 1
            # ...and every new call carries a valid token: the client's current one.
            view = client.stub.GetView(gateway_pb2.GetViewRequest(), metadata=client.metadata, timeout=DEADLINE_S)
            assert await _status(view) == grpc.StatusCode.NOT_FOUND  # authenticated; no current table
            await asyncio.sleep(0.5)
        assert client.token != first and client.expires_at > first_expiry + SHORT_TOKEN_S, "never refreshed"
        probe.token = first  # the first token, past its expiry, refreshed by nobody
        code = await probe.code_of_view()
        report(up_platform, "an expired token (no refresh) on a plain call", "player", _refused_if(code))
        assert code == grpc.StatusCode.UNAUTHENTICATED
        refresh = probe.stub.RefreshToken(gateway_pb2.RefreshTokenRequest(), metadata=probe.auth, timeout=DEADLINE_S)
        code = await _status(refresh)
        report(up_platform, "refresh of an expired token", "player", _refused_if(code))
        assert code == grpc.StatusCode.UNAUTHENTICATED
        watch = gateway_pb2.SpectateRequest(table_id="any-table")
        code = await _first(probe.stub.Spectate(watch, metadata=probe.auth))
        report(up_platform, "a new stream with an expired token", "player", _refused_if(code))
        assert code == grpc.StatusCode.UNAUTHENTICATED
        report(
            up_platform,
            f"a session living {3 * SHORT_TOKEN_S}s on {SHORT_TOKEN_S}s tokens (legitimate)",
            "player",
            ACCEPTED,
            ACCEPTED,
        )
        assert pings >= 3 * SHORT_TOKEN_S
    finally:
        await client.close()
        await probe.close()


def _refused_if(code: grpc.StatusCode, refusal: grpc.StatusCode = grpc.StatusCode.UNAUTHENTICATED) -> str:
    return REFUSED if code == refusal else f"ALLOWED ({code.name})"


# -- limits per player and per address through the edge (finding 5) ------------------------


async def test_one_flooding_player_does_not_get_anothers_call_refused_through_the_edge(up_platform: Backend) -> None:
    flooder = await Player(up_platform.edge).sign_in("flooder")
    victim = await Player(up_platform.edge).sign_in("victim")
    # Several connections, like several browser tabs: on the old per-connection limit each
    # got its own budget, and Envoy's few upstream connections were shared by everyone.
    floods = [flooder.on(up_platform.edge) for _ in range(6)]
    try:
        codes = await asyncio.gather(*(f.code_of_view() for f in floods for _ in range(25)))
        refused = sum(c == grpc.StatusCode.RESOURCE_EXHAUSTED for c in codes)
        assert refused > 0, "the flood was never limited"
        code = await victim.code_of_view()
        report(
            up_platform,
            "a flood gets another player's call refused (edge)",
            "player",
            REFUSED if code != grpc.StatusCode.RESOURCE_EXHAUSTED else "ALLOWED (victim limited)",
        )
        assert code == grpc.StatusCode.NOT_FOUND, code
    finally:
        for p in (flooder, victim, *floods):
            await p.close()


async def test_new_accounts_are_bounded_per_client_address_believed_only_from_the_edge(up_platform: Backend) -> None:
    """As the edge (its secret) an address gets its burst of new accounts (20), then
    RESOURCE_EXHAUSTED but for the budget's refill meanwhile; the
    same address claimed without the secret, directly or through Envoy, is not believed."""
    gateway = up_platform.gateways[1]
    edge_secret = up_platform.env["TRIX_GATEWAY_EDGE_SECRET"]
    address = "203.0.113.77"
    as_edge = (("x-trix-edge", edge_secret), ("x-trix-client-address", address))
    forged = (("x-trix-edge", "not-the-secret"), ("x-trix-client-address", address))
    client = Player(gateway)
    codes = []
    try:
        started = time.monotonic()
        for i in range(ACCOUNTS_BURST + 5):
            codes.append(await _status(client.sign_in(f"bulk-{i}", as_edge)))
        refill = (time.monotonic() - started) * ACCOUNTS_PER_HOUR / 3600
        assert codes[:ACCOUNTS_BURST] == [grpc.StatusCode.OK] * ACCOUNTS_BURST, codes
        refused = codes.count(grpc.StatusCode.RESOURCE_EXHAUSTED)
        bounded = refused > 0 and codes.count(grpc.StatusCode.OK) <= ACCOUNTS_BURST + refill
        report(
            up_platform,
            "new guest accounts past the budget from one address",
            "anyone",
            REFUSED if bounded else f"ALLOWED ({codes.count(grpc.StatusCode.OK)}/{len(codes)} made)",
        )
        assert bounded, codes
        assert set(codes) == {grpc.StatusCode.OK, grpc.StatusCode.RESOURCE_EXHAUSTED}, codes
        # Not believed without the secret: counted against the real peer (127.0.0.1).
        code = await _status(client.sign_in("forger-direct", forged))
        outcome = NOT_BELIEVED if code == grpc.StatusCode.OK else f"believed ({code.name})"
        report(up_platform, "claim a client address with a wrong edge secret", "anyone", outcome, NOT_BELIEVED)
        assert code == grpc.StatusCode.OK
        via_edge = Player(up_platform.edge)
        code = await _status(via_edge.sign_in("forger-edge", as_edge))  # Envoy overwrites both headers
        await via_edge.close()
        outcome = NOT_BELIEVED if code == grpc.StatusCode.OK else f"believed ({code.name})"
        report(up_platform, "claim a client address and the edge secret through Envoy", "anyone", outcome, NOT_BELIEVED)
        assert code == grpc.StatusCode.OK
    finally:
        await client.close()


# -- streams and private tables ---------------------------------------------------------------


async def _private_table(host: Player) -> str:
    wish = matchmaking_pb2.GameWish(variant=common_pb2.VARIANT_COMPLEX)
    request = gateway_pb2.CreatePrivateGameRequest(wish=wish)
    created = await host.stub.CreatePrivateGame(request, metadata=host.auth, timeout=30)
    started = await host.stub.StartPrivateGame(
        gateway_pb2.StartPrivateGameRequest(code=created.code), metadata=host.auth, timeout=30
    )
    # The table is created from the MatchFormed a moment later: until then it is NOT_FOUND.
    deadline = time.monotonic() + DEADLINE_S
    while True:
        view = host.stub.GetView(gateway_pb2.GetViewRequest(table_id=started.table_id), metadata=host.auth, timeout=30)
        code = await _status(view)
        if code == grpc.StatusCode.OK:
            return str(started.table_id)
        assert code == grpc.StatusCode.NOT_FOUND and time.monotonic() < deadline, code
        await asyncio.sleep(0.1)


async def _first(stream: AsyncIterator[Any]) -> grpc.StatusCode:
    return (await _first_of(stream))[0]


async def _first_of(stream: AsyncIterator[Any]) -> tuple[grpc.StatusCode, str, Any]:
    """The status of a stream's start, the refusal's message, its first message."""
    try:
        first = await asyncio.wait_for(anext(aiter(stream)), DEADLINE_S)
    except grpc.aio.AioRpcError as err:
        return err.code(), err.details() or "", None
    return grpc.StatusCode.OK, "", first


@pytest.fixture
async def private_table(up_platform: Backend) -> AsyncIterator[tuple[Player, str]]:
    """A private table (its host and three bots) and its host, on the first gateway."""
    host = await Player(up_platform.gateways[0]).sign_in("private-host")
    try:
        yield host, await _private_table(host)
    finally:
        await host.close()


async def test_a_private_table_is_watched_by_its_players_only(
    up_platform: Backend, private_table: tuple[Player, str]
) -> None:
    host, table_id = private_table
    stranger = await Player(up_platform.gateways[0]).sign_in("private-stranger")
    watch = gateway_pb2.SpectateRequest(table_id=table_id)
    try:
        code = await _first(stranger.stub.Spectate(watch, metadata=stranger.auth))
        outcome = REFUSED if code.name == "PERMISSION_DENIED" else code.name
        report(up_platform, "a stranger spectates a private table", "player", outcome)
        assert code == grpc.StatusCode.PERMISSION_DENIED
        assert await _first(host.stub.Spectate(watch, metadata=host.auth)) == grpc.StatusCode.OK
    finally:
        await stranger.close()


def _due_action(view: table_pb2.SeatView) -> gateway_pb2.Action | None:
    """The action the viewer's seat owes now (a client seed, or the bots' choice,
    `trix.client.pick`), None if none is due."""
    if view.seat not in view.turn.seats:
        return None
    if view.turn.client_seeds:
        action: gateway_pb2.Action | None = gateway_pb2.Action(client_seed="seed-of-the-host")
    else:
        action = pick(view, view.turn.decision, random.Random(18))
    if action is not None:
        action.table_id, action.action_id = view.table_id, secrets.token_hex(8)
        action.last_seen_sequence = view.sequence
    return action


async def test_the_table_services_seat_stream_follows_a_game_live_under_the_table_user(
    up_platform: Backend, private_table: tuple[Player, str]
) -> None:
    """`TableService.StreamSeatEvents` (the table's gRPC API for tools and admin) serves what
    the owner holds, then the seat's feed live (`TableBus.events`), under `trix up`'s NATS
    users: the table user may follow the feeds it writes. The host's own stream carries his
    hand (docs/rules.md §14) and, after he acts through the gateway, his action's events."""
    host, table_id = private_table
    target = next(t for name, t in up_platform.targets.items() if name.startswith("table"))
    key = up_platform.env[PLAYER_KEY_ENV].encode()
    caller = ((TOKEN_METADATA, sign(key, ROLE_PLAYER, host.player_id, time.time())),)
    seen: list[events_pb2.Event] = []
    async with grpc.aio.insecure_channel(target) as channel:
        deadline = time.monotonic() + DEADLINE_S
        while True:  # the bots act at once: the table waits for the host
            reply = await host.stub.GetView(gateway_pb2.GetViewRequest(table_id=table_id), metadata=host.auth)
            action = _due_action(reply.view)
            if action is not None:
                break
            assert time.monotonic() < deadline, "the host's turn never came"
            await asyncio.sleep(0.1)
        view = reply.view
        stream = table_pb2_grpc.TableServiceStub(channel).StreamSeatEvents(
            table_pb2.StreamSeatEventsRequest(table_id=table_id, seat=view.seat, after_sequence=0),
            metadata=caller,
            timeout=DEADLINE_S * 2,
        )
        events = aiter(stream)

        async def until(sequence: int) -> None:
            while not seen or seen[-1].sequence < sequence:
                seen.append((await asyncio.wait_for(anext(events), DEADLINE_S)).event)

        await until(view.sequence)  # the owner's history, through the view
        acted_at = time.monotonic()
        acted = await host.stub.SubmitAction(
            gateway_pb2.SubmitActionRequest(action=action), metadata=host.auth, timeout=DEADLINE_S
        )
        assert acted.sequence > view.sequence
        await until(acted.sequence)  # live: published after the stream reached the feed
        took = time.monotonic() - acted_at
        stream.cancel()
    # Live, not the owner asked again: a reader that hears nothing asks the owner 5 s after the
    # turn's deadline (`seatstream.DEADLINE_GRACE_S`), at least 13 s after a turn just begun.
    assert took < LIVE_WITHIN_S, f"the action's events came {took:.1f}s after it: not live"
    sequences = [e.sequence for e in seen]
    assert sequences == sorted(set(sequences)) and sequences[0] == 1, sequences
    assert seen[-1].sequence >= acted.sequence
    # Every DealStarted on the host's stream is his own copy: his 13 cards (§14).
    assert all(len(e.deal_started.hand) == 13 for e in seen if e.HasField("deal_started"))


async def test_one_players_concurrent_streams_are_capped(
    up_platform: Backend, private_table: tuple[Player, str]
) -> None:
    host, table_id = private_table
    watch = gateway_pb2.SpectateRequest(table_id=table_id)
    streams: list[Any] = []
    try:
        # At most TRIX_GATEWAY_MAX_STREAMS (8) streams at once per player.
        for _ in range(8):
            streams.append(host.stub.Spectate(watch, metadata=host.auth))
            assert await _first(streams[-1]) == grpc.StatusCode.OK
        code = await _first(host.stub.Spectate(watch, metadata=host.auth))
        outcome = REFUSED if code.name == "RESOURCE_EXHAUSTED" else code.name
        report(up_platform, "a 9th concurrent stream of one player", "player", outcome)
        assert code == grpc.StatusCode.RESOURCE_EXHAUSTED
        streams.pop().cancel()  # a closed stream frees its place
        deadline = time.monotonic() + DEADLINE_S
        while True:
            streams.append(host.stub.Spectate(watch, metadata=host.auth))
            if (code := await _first(streams[-1])) == grpc.StatusCode.OK:
                break
            assert time.monotonic() < deadline, code
            await asyncio.sleep(0.1)
    finally:
        for stream in streams:
            stream.cancel()


async def _invite(host: Player, table_id: str) -> gateway_pb2.InviteSpectatorResponse:
    request = gateway_pb2.InviteSpectatorRequest(table_id=table_id)
    reply: gateway_pb2.InviteSpectatorResponse = await host.stub.InviteSpectator(
        request, metadata=host.auth, timeout=DEADLINE_S
    )
    return reply


async def test_a_private_table_is_watched_with_an_invitation_from_one_of_its_players_only(
    up_platform: Backend, private_table: tuple[Player, str]
) -> None:
    """ADR 0018: a seated player asks the gateway for an invitation (signed with the player-role
    key, bound to the table, expiring); whoever holds it may Spectate that table, on any
    replica (the table checks it); without it, tampered, or for another table: PERMISSION_DENIED
    with a message that says why; nobody without a seat there can make one."""
    host, table_id = private_table
    guest = await Player(up_platform.gateways[1]).sign_in("invited-guest")
    other_host = await Player(up_platform.gateways[0]).sign_in("other-private-host")
    try:
        other_table = await _private_table(other_host)
        code = await _status(
            guest.stub.InviteSpectator(
                gateway_pb2.InviteSpectatorRequest(table_id=table_id), metadata=guest.auth, timeout=DEADLINE_S
            )
        )
        report(up_platform, "invite spectators to a table one holds no seat at", "player", _refused_if(code, DENIED))
        assert code == DENIED
        invited = await _invite(host, table_id)
        assert invited.table_id == table_id
        assert time.time() < invited.expires_at.seconds <= time.time() + 3600 + 2

        attempts = {
            "spectate a private table without an invitation": ("", table_id, "invitation from one of them"),
            "spectate a private table with a tampered invitation": (
                invited.invitation[:-1] + ("0" if invited.invitation[-1] != "0" else "1"),
                table_id,
                "not valid",
            ),
            "spectate a private table with another table's invitation": (
                invited.invitation,
                other_table,
                "another table",
            ),
        }
        for attack, (invitation, watched, says) in attempts.items():
            watch = gateway_pb2.SpectateRequest(table_id=watched, invitation=invitation)
            code, message, _ = await _first_of(guest.stub.Spectate(watch, metadata=guest.auth))
            report(up_platform, attack, "player", _refused_if(code, DENIED))
            assert code == DENIED and says in message, (attack, code, message)

        watch = gateway_pb2.SpectateRequest(table_id=table_id, invitation=invited.invitation)
        code, _, first = await _first_of(guest.stub.Spectate(watch, metadata=guest.auth))
        report(
            up_platform,
            "spectate a private table with its invitation (legitimate)",
            "player",
            ACCEPTED if code == grpc.StatusCode.OK else code.name,
            ACCEPTED,
        )
        assert code == grpc.StatusCode.OK and first.event.sequence >= 1
        assert not first.event.deal_started.hand  # the public events only (docs/rules.md §14)
        # A Session's `watch` takes the same invitation.
        session = GatewayClient(up_platform.gateways[1])
        session.token = guest.token
        stream = aiter(session.open())
        try:
            session.send(gateway_pb2.SessionRequest(watch=watch))
            reply = await asyncio.wait_for(anext(stream), DEADLINE_S)
            assert reply.WhichOneof("kind") in ("event", "snapshot"), reply
        finally:
            await session.close()
    finally:
        await guest.close()
        await other_host.close()


async def test_an_expired_invitation_is_refused(
    up_platform: Backend, private_table: tuple[Player, str], short_gateway: str
) -> None:
    host, table_id = private_table
    short_host = host.on(short_gateway)
    guest = await Player(up_platform.gateways[0]).sign_in("late-guest")
    try:
        invited = await _invite(short_host, table_id)  # lives SHORT_INVITATION_S seconds
        watch = gateway_pb2.SpectateRequest(table_id=table_id, invitation=invited.invitation)
        assert await _first(guest.stub.Spectate(watch, metadata=guest.auth)) == grpc.StatusCode.OK
        await asyncio.sleep(max(0.0, invited.expires_at.seconds + 1.1 - time.time()))
        code, message, _ = await _first_of(guest.stub.Spectate(watch, metadata=guest.auth))
        report(up_platform, "spectate a private table with an expired invitation", "player", _refused_if(code, DENIED))
        assert code == DENIED and "expired" in message, (code, message)
    finally:
        await short_host.close()
        await guest.close()
