"""Issue 44: presence expires with its gateway (docs/adr/0027's amendment "presence that
expires"). A gateway killed with SIGKILL publishes no PlayerDisconnected; its beat
(`trix.natsio.online`) stops, and the social service marks its players offline: a friend's
session is told within the documented bound, (MISSED_BEATS + 1) beat periods. A player with a
session on the gateway that lives too stays online. While both gateways live, nobody is marked
offline by the beats, and none for beats the social service could not hear (a stall of its
own: its sweep came late).

The first test: the whole platform as processes (`trix.embedded.EmbeddedPlatform`, two gateway replicas, a
real nats-server, the social service, real gRPC on 127.0.0.1); the beat period is short
(TRIX_PRESENCE_BEAT_S) so the test waits a few seconds, not the default's 40. The second: the
sweep on a clock the test moves, the social graph on a real nats-server (its buckets).
"""

from __future__ import annotations

import asyncio
import os
import signal
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from test_social_gateway import Player, befriend, close, friend_entry, player

from support.clock import ManualClock
from support.nats import NatsServer
from trix.embedded import EmbeddedPlatform
from trix.natsio.connection import NatsConnection
from trix.natsio.names import SOCIAL_FRIENDS_BUCKET, SOCIAL_PRESENCE_BUCKET
from trix.natsio.online import BEAT_ENV, MISSED_BEATS
from trix.natsio.provisioning import KV_BUCKETS
from trix.social.adapters import CoreOutbox, KvPresence, KvRelations
from trix.social.graph import SocialGraph
from trix.social.online import GatewaysOnline
from trix.social.tables import TableBook
from trix.v1 import social_pb2

pytestmark = pytest.mark.timeout(180)

BEAT_S = 0.5
BOUND_S = (MISSED_BEATS + 1) * BEAT_S
"""The documented bound: a dead gateway's player is offline for his friends within this."""
DELIVERY_S = 2.5
"""On top of the bound: the notice's way to the friend's session on a loaded machine."""
OFFLINE = social_pb2.PRESENCE_STATUS_OFFLINE
IN_LOBBY = social_pb2.PRESENCE_STATUS_IN_LOBBY


@pytest.fixture
def two_gateways(tmp_path: Path) -> Iterator[tuple[str, str, int]]:
    """The platform with two gateway replicas: their targets and the second one's pid."""
    env = {BEAT_ENV: str(BEAT_S), "TRIX_GATEWAY_RATE_PER_S": "400", "TRIX_GATEWAY_RATE_BURST": "400"}
    embedded = EmbeddedPlatform(tmp_path / "state", fresh=True, env=env, replicas={"gateway": 2})
    try:
        embedded.start()
        one, two = [c for c in embedded.supervisor.services if c.name.startswith("gateway")]
        assert two.proc is not None
        yield f"127.0.0.1:{one.grpc_port}", f"127.0.0.1:{two.grpc_port}", two.proc.pid
    finally:
        embedded.stop()


def told(reader: Player, about: str, presence: int) -> bool:
    return any(
        e.friend_presence_changed.player_id == about and e.friend_presence_changed.presence == presence
        for e in reader.events()
    )


async def test_a_killed_gateways_player_goes_offline_for_his_friend_and_one_on_both_gateways_stays_online(
    two_gateways: tuple[str, str, int],
) -> None:
    lives, dies, dies_pid = two_gateways
    amal = await player(lives, "amal")
    badr = await player(dies, "badr")
    cyra, cyra_too = await player(lives, "cyra"), await player(dies, "cyra")
    assert cyra.id == cyra_too.id
    try:
        await befriend(amal, badr)
        await befriend(amal, cyra)
        await friend_entry(amal, badr.id, IN_LOBBY)
        await friend_entry(amal, cyra.id, IN_LOBBY)
        await asyncio.sleep(BOUND_S + BEAT_S)  # beats go on: nobody alive expires
        assert not told(amal, badr.id, OFFLINE) and not told(amal, cyra.id, OFFLINE)

        os.kill(dies_pid, signal.SIGKILL)
        killed = time.monotonic()
        await amal.until("badr offline", lambda: told(amal, badr.id, OFFLINE))
        took = time.monotonic() - killed
        assert took <= BOUND_S + DELIVERY_S, f"badr offline {took:.1f} s after his gateway died"

        await asyncio.sleep(2 * BEAT_S)  # the sweep that expired badr has ended
        assert not told(amal, cyra.id, OFFLINE)
        assert (await friend_entry(amal, cyra.id, IN_LOBBY)).presence == IN_LOBBY
    finally:
        await close(amal, cyra)
        for gone in (badr, cyra_too):  # their gateway is dead: their streams ended with it
            if gone.reader is not None:
                gone.reader.cancel()


async def _sweeping(
    nats_server: NatsServer, players: tuple[str, ...]
) -> tuple[NatsConnection, SocialGraph, ManualClock, GatewaysOnline]:
    """The sweep on a clock the test moves (a 1 s period, from 100), the graph on a real
    nats-server's buckets, `players` connected (a session each) and named at 100."""
    buckets = [b for b in KV_BUCKETS if b.bucket in (SOCIAL_FRIENDS_BUCKET, SOCIAL_PRESENCE_BUCKET)]
    nats = NatsConnection(nats_server.url, "presence-sweep", streams=(), buckets=buckets)
    await nats.connect(give_up_after_s=30)
    graph = SocialGraph(KvRelations(nats), KvPresence(nats), CoreOutbox(nats), TableBook())
    clock = ManualClock(100.0)
    online = GatewaysOnline(nats, graph, 1.0, clock=clock)
    for one in players:
        await graph.connected(one, f"{one}-session", True)
        online.named_now((one,))
    return nats, graph, clock, online


async def test_a_player_is_expired_after_missed_beats_but_never_for_a_stall_of_the_social_service(
    nats_server: NatsServer,
) -> None:
    nats, graph, clock, online = await _sweeping(nats_server, ("named", "silent"))
    try:

        async def sweep_at(now: float) -> set[str]:
            clock.set(now)
            online.named_now(("named", "nobody"))  # the beat of a gateway that lives
            await online.sweep()
            return set(graph.sessions)

        assert await sweep_at(101.0) == {"named", "silent"}
        assert await sweep_at(103.5) == {"named", "silent"}  # a late sweep: a stall, not missed beats
        for now in (104.5, 105.5, 106.5):
            assert await sweep_at(now) == {"named", "silent"}
        assert await sweep_at(107.5) == {"named"}  # three periods since it could hear them all
        assert online.expired == 1 and "nobody" not in online.named
        assert await KvPresence(nats).load() == {"named": (frozenset({"named-session"}), "")}
    finally:
        await nats.drain()


async def test_a_player_expired_while_his_gateway_lived_is_online_again_at_its_next_beat(
    nats_server: NatsServer,
) -> None:
    """The beats and PRESENCE never disagree for good: a gateway cut from NATS for three
    periods (its beats lost, its players still there) has its players expired; its first beat
    after the cut names them and they are online again with the sessions they had. One whose
    PlayerDisconnected came meanwhile is not brought back by a beat sent before it."""
    nats, graph, clock, online = await _sweeping(nats_server, ("stays", "leaves"))
    try:
        for now in (101.0, 102.0, 103.0, 104.0):  # the gateway cut: no beat heard
            clock.set(now)
            await online.sweep()
        assert set(graph.sessions) == set()  # both expired

        online.disconnected("leaves", "leaves-session")  # his stay ended during the cut
        await graph.connected("leaves", "leaves-session", False)
        clock.set(104.5)
        online.named_now(("stays", "leaves"))  # the gateway's first beat after the cut (sent before)
        await online.named_again(("stays", "leaves"))
        assert graph.sessions == {"stays": frozenset({"stays-session"})}
        assert await KvPresence(nats).load() == {"stays": (frozenset({"stays-session"}), "")}
        for now in (105.0, 106.0, 107.0):  # named at each beat: he stays online
            clock.set(now)
            online.named_now(("stays",))
            await online.sweep()
        assert set(graph.sessions) == {"stays"}
    finally:
        await nats.drain()
