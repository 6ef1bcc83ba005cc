"""Following a seat costs the NATS server no consumer (issue 9, issue 10 scale, issue 16): a
stream holds at most 1,000 consumers by default and thousands of players follow their seats
at once, so the gateway takes live events through plain subscriptions, shared by the readers
of a table, and asks the table's owner for what a reader missed."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator, AsyncIterator
from typing import Any

import nats
from gateway_support import Platform, Seated, seated

from trix.gateway.adapters import NatsTables
from trix.gateway.ports import SPECTATOR
from trix.natsio import subjects
from trix.natsio.connection import NatsConnection
from trix.natsio.permissions import PROVISIONER, inbox_prefix
from trix.natsio.provisioning import STREAMS
from trix.runtime.identity import PLAYER_KEY_ENV
from trix.state_folder import nats_url_of
from trix.v1 import events_pb2, gateway_pb2


def nats_url(platform: Platform, user: str) -> str:
    """`trix up`'s NATS as one of its users (issue 18: it runs the production permissions)."""
    return nats_url_of(platform.state_dir, user)


async def stream_consumers(js: Any) -> int:
    """Consumers on the platform's streams, the KV buckets' aside (their watchers come and go
    with tickets and leases, whoever follows a seat)."""
    return sum([(await js.stream_info(spec.name)).state.consumer_count for spec in STREAMS])


async def test_following_seats_costs_the_server_no_consumer(platform: Platform) -> None:
    nc = await nats.connect(nats_url(platform, PROVISIONER), inbox_prefix=inbox_prefix(PROVISIONER).encode())
    players: list[Seated] = []
    try:
        js = nc.jetstream()
        before = await stream_consumers(js)
        players = [await seated(platform.target, f"follower{i}") for i in range(3)]
        for p in players:  # each one's seat events flow: stored, then live
            await asyncio.wait_for(_an_event(p.stream, p.table_id), 30)
        spectator = await seated(platform.target, "follower-watch")
        players.append(spectator)
        watched = players[0].table_id
        spectator.client.send(gateway_pb2.SessionRequest(watch=gateway_pb2.SpectateRequest(table_id=watched)))
        await asyncio.wait_for(_an_event(spectator.stream, watched), 30)
        after = await stream_consumers(js)
        assert after <= before, (before, after)
    finally:
        for p in players:
            await p.client.close()
        await nc.close()


async def _an_event(stream: AsyncIterator[gateway_pb2.SessionResponse], table_id: str) -> None:
    async for m in stream:
        if m.HasField("event") and m.event.table_id == table_id:
            return
    raise AssertionError("the session ended")


async def test_the_readers_of_a_table_share_one_live_subscription(platform: Platform) -> None:
    """The gateway's `NatsTables` follows a table's readers (here the seated player twice, as
    after a reconnect, and two spectators) through one subscription on the table's feed (one
    delivery of each batch, parsed once); each reader still gets the whole stream, the seat's
    with its own hand, a spectator's with none (ADR 0009 amendment, docs/rules.md §14)."""
    player = await seated(platform.target, "follower-shared")
    conn = NatsConnection(nats_url(platform, "gateway"), "test-shared-feeds", streams=(), buckets=())
    await conn.connect(give_up_after_s=30)
    streams: list[AsyncGenerator[events_pb2.Event, None]] = []
    try:
        tables = NatsTables(conn, platform.env[PLAYER_KEY_ENV].encode(), 10)
        table_id, seat, pid = player.table_id, player.seat, player.client.player_id
        streams = [tables.events(table_id, s, pid) for s in (seat, seat, SPECTATOR, SPECTATOR)]
        got = [await asyncio.wait_for(_until_dealt(s), 30) for s in streams]
        feed = subjects.table_feed(table_id)
        assert [sub.subject for sub in conn.client._subs.values()].count(feed) == 1
        assert tables.feeds.subjects() == {feed: 4}
        assert len({tuple(e.sequence for e in events) for events in got}) == 1  # the same sequences
        seat_hands = [tuple(c.id for c in events[-1].deal_started.hand) for events in got[:2]]
        assert all(len(h) == 13 for h in seat_hands) and len(set(seat_hands)) == 1  # the seat's own hand
        assert not got[2][-1].deal_started.hand and not got[3][-1].deal_started.hand  # spectators: public copy
    finally:
        for s in streams:
            await s.aclose()
        await player.client.close()
        await conn.drain()
    assert tables.feeds.subjects() == {}


async def _until_dealt(stream: AsyncIterator[events_pb2.Event]) -> list[events_pb2.Event]:
    """The stream's events up to and with its first DealStarted."""
    events: list[events_pb2.Event] = []
    async for event in stream:
        events.append(event)
        if event.HasField("deal_started"):
            return events
    raise AssertionError("the stream ended before a deal")
