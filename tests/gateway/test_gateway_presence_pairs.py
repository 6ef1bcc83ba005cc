"""A gateway's presence events pair up: a PlayerConnected when a player's first session that
counts for presence opens on the replica (an interactive Session or a SocialEvents stream;
a Session opened later sends one again, naming the same id), one PlayerDisconnected, naming
the same session id, when his last one there closes, however
his sessions overlap (two browser tabs, a tab beside `trix play`, a Session replaced by a
newer one). The social service keeps a player online while a session id his PlayerConnected
named is not closed by a PlayerDisconnected, and the timers' disconnect grace (docs/rules.md
§10) starts from the PlayerDisconnected: a pair whose ids differ left a friend shown online
after he had gone, and one sent while a tab stayed open started his grace while he was there.

The real `GatewayService` and `social_events`, its presence port on a real nats-server (the
PRESENCE stream, `NatsPresence`), read back from the stream."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

from support.nats import NatsServer
from trix.gateway.adapters import NatsPresence
from trix.gateway.config import GatewayConfig
from trix.gateway.presence_beat import online_players
from trix.gateway.service import GatewayService
from trix.gateway.session import Session
from trix.gateway.social_api import social_events
from trix.gateway.tokens import Principal
from trix.natsio import names, subjects
from trix.natsio.connection import NatsConnection
from trix.natsio.provisioning import STREAMS
from trix.natsio.stored import stored_messages
from trix.v1 import events_pb2

PLAYER = "amal"


class NoTables:
    def hear_causes(self, listener: object) -> None:
        pass


async def _stored(conn: NatsConnection) -> list[tuple[bool, str]]:
    """The player's presence events on PRESENCE, in order: (connected, session id)."""
    out: list[tuple[bool, str]] = []
    async for msg in stored_messages(conn, names.PRESENCE_STREAM, subjects.presence(PLAYER)):
        event = events_pb2.Event.FromString(msg.data)
        if event.HasField("player_connected"):
            out.append((True, event.player_connected.session_id))
        else:
            out.append((False, event.player_disconnected.session_id))
    return out


def _online(events: list[tuple[bool, str]]) -> set[str]:
    """The player's sessions online as the social service keeps them (`SocialGraph.connected`)."""
    sessions: set[str] = set()
    for connected, session_id in events:
        if connected:
            sessions.add(session_id)
        else:
            sessions.discard(session_id)
    return sessions


class Tab:
    """A SocialEvents stream held open, as a browser tab does."""

    def __init__(self, gateway: GatewayService) -> None:
        self.opened = asyncio.Event()

        async def opened(_session_id: str) -> None:
            self.opened.set()

        async def read(stream: AsyncIterator[object]) -> None:
            async for _ in stream:
                pass

        self.task = asyncio.ensure_future(read(social_events(gateway, Principal(PLAYER, PLAYER, 0), opened)))

    async def close(self) -> None:
        self.task.cancel()
        await asyncio.gather(self.task, return_exceptions=True)


async def test_a_players_overlapping_sessions_make_one_connected_disconnected_pair_with_one_session_id(
    nats_server: NatsServer,
) -> None:
    presence = [s for s in STREAMS if s.name == names.PRESENCE_STREAM]
    conn = NatsConnection(nats_server.url, "gateway-presence", streams=presence, buckets=())
    await conn.connect(give_up_after_s=30)
    env = {"TRIX_NATS_URL": "none", "TRIX_PLAYER_TOKEN_KEY": "k" * 32, "TRIX_GATEWAY_TOKEN_KEY": "g" * 32}
    gateway = GatewayService(GatewayConfig.from_env(env), NoTables(), NoTables(), NatsPresence(conn, 5.0))  # type: ignore[arg-type]

    async def tab() -> Tab:
        opened = Tab(gateway)
        await asyncio.wait_for(opened.opened.wait(), 10)
        return opened

    async def session() -> Session:
        return await gateway.open_session(Principal(PLAYER, PLAYER, 0))

    try:
        # Two tabs: the first opened is closed first.
        first, second = await tab(), await tab()
        await first.close()
        assert _online(await _stored(conn)) and online_players(gateway) == {PLAYER}
        await second.close()
        assert _online(await _stored(conn)) == set() and online_players(gateway) == set()

        # A Session, and a tab that outlives it: online until the tab closes.
        playing = await session()
        web = await tab()
        await playing.close()
        assert _online(await _stored(conn)) and online_players(gateway) == {PLAYER}
        assert (await _stored(conn))[-1][0], "no PlayerDisconnected while a tab is open"
        await web.close()
        assert _online(await _stored(conn)) == set()

        # A Session replaced by a newer one, which closes last.
        old = await session()
        new = await session()
        await old.close()
        assert _online(await _stored(conn))
        await new.close()
        assert _online(await _stored(conn)) == set() and online_players(gateway) == set()

        stay = ""  # each stay's events name one session id, and it ends with a PlayerDisconnected
        stays = 0
        for connected, session_id in await _stored(conn):
            assert session_id == (stay or session_id)
            stay = session_id if connected else ""
            stays += 0 if connected else 1
        assert stay == "" and stays == 3
        # A Session opened within a stay is announced again (the timers take it as his return).
        assert [c for c, _ in (await _stored(conn))[-3:]] == [True, True, False]
    finally:
        await conn.drain()
