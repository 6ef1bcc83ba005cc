"""Issue 18, findings 5 and 6 and the private tables of finding 7, on `trix up` (two gateway
replicas, the Envoy edge in front of the first; ADR 0018):

- public tokens: one key for every replica (each accepts the other's tokens), a key id in
  the header, the previous key still accepted after a rotation, a removed key refused, a
  short lifetime with RefreshToken;
- limits per player and per client address, never per TCP peer: through the real edge one
  flooding player does not get another player's call refused; the gateway believes the
  edge's client address only beside the edge's secret; new guest accounts per address are
  bounded; one player's concurrent streams are capped;
- a private table is watched by its players only (PERMISSION_DENIED for anyone else).
"""

from __future__ import annotations

import asyncio
import os
import secrets
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import grpc
import pytest
from security_support import REFUSED, Backend, report

from support.ports import wait_port
from trix.gateway.tokens import HmacTokens
from trix.up import free_port
from trix.v1 import common_pb2, gateway_pb2, gateway_pb2_grpc, matchmaking_pb2

REPO = Path(__file__).resolve().parents[2]
DEADLINE_S = 30.0


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


# -- public tokens (finding 6) -------------------------------------------------------------


async def test_two_gateway_replicas_accept_each_others_tokens(up_platform: Backend) -> None:
    first, second = up_platform.gateways[:2]
    player = await Player(first).sign_in("replica-hopper")
    other = player.on(second)
    try:
        code = await other.code_of_view()
        outcome = REFUSED if code == grpc.StatusCode.UNAUTHENTICATED else f"accepted ({code.name})"
        report(up_platform, "token of replica 1 used on replica 2", "player", outcome)
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
    env = {k: v for k, v in os.environ.items() if not k.startswith("TRIX_")}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO / "services"), env.get("PYTHONPATH", "")]))
    port = free_port()
    env.update(
        TRIX_NATS_URL=up_platform.url("gateway"),
        TRIX_GRPC_HOST="127.0.0.1",
        TRIX_GRPC_PORT=str(port),
        TRIX_METRICS_PORT="-1",
        TRIX_LOG_LEVEL="warning",
        TRIX_SHUTDOWN_GRACE_S="1",
        TRIX_DRAIN_DELAY_S="0",
        TRIX_PLAYER_TOKEN_KEY=secrets.token_hex(32),
        TRIX_GATEWAY_TOKEN_KEY=NEW_KEY,
        TRIX_GATEWAY_TOKEN_PREVIOUS_KEY=up_platform.env["TRIX_GATEWAY_TOKEN_KEY"],
    )
    log_path = tmp_path_factory.mktemp("rotated") / "gateway.log"
    with open(log_path, "ab") as log:
        proc = subprocess.Popen([sys.executable, "-m", "trix.gateway"], env=env, stdout=log, stderr=log)
    try:
        wait_port(port, 60.0)
        yield f"127.0.0.1:{port}"
    finally:
        proc.terminate()
        try:
            proc.wait(15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


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
            "old key's token after a rotation",
            "player",
            "accepted" if code == grpc.StatusCode.NOT_FOUND else f"refused ({code.name})",
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
    """As the edge (its secret) an address gets 20 new accounts, then RESOURCE_EXHAUSTED; the
    same address claimed without the secret, directly or through Envoy, is not believed."""
    gateway = up_platform.gateways[1]
    edge_secret = up_platform.env["TRIX_GATEWAY_EDGE_SECRET"]
    address = "203.0.113.77"
    as_edge = (("x-trix-edge", edge_secret), ("x-trix-client-address", address))
    forged = (("x-trix-edge", "not-the-secret"), ("x-trix-client-address", address))
    client = Player(gateway)
    codes = []
    try:
        for i in range(21):
            codes.append(await _status(client.sign_in(f"bulk-{i}", as_edge)))
        assert codes[:20] == [grpc.StatusCode.OK] * 20, codes
        report(
            up_platform,
            "a 21st new guest account from one address",
            "anyone",
            REFUSED if codes[20] == grpc.StatusCode.RESOURCE_EXHAUSTED else codes[20].name,
        )
        assert codes[20] == grpc.StatusCode.RESOURCE_EXHAUSTED
        # Not believed without the secret: counted against the real peer (127.0.0.1).
        assert await _status(client.sign_in("forger-direct", forged)) == grpc.StatusCode.OK
        via_edge = Player(up_platform.edge)
        code = await _status(via_edge.sign_in("forger-edge", as_edge))  # Envoy overwrites both headers
        await via_edge.close()
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
    try:
        await asyncio.wait_for(anext(aiter(stream)), DEADLINE_S)
    except grpc.aio.AioRpcError as err:
        return err.code()
    return grpc.StatusCode.OK


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
