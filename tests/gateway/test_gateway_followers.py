"""Following a seat costs the NATS server no consumer (issue 9, issue 10 scale): a stream
holds at most 1,000 consumers by default and thousands of players follow their seats at
once, so the gateway reads stored events through short-lived pull consumers it deletes and
live ones through plain subscriptions."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator, AsyncIterator

import nats
from gateway_support import Platform, Seated, seated

from trix.gateway.service import SPECTATOR
from trix.gateway.subscribers import NatsTables
from trix.natsio import subjects
from trix.natsio.connection import NatsConnection
from trix.natsio.permissions import inbox_prefix
from trix.up import nats_url_of
from trix.v1 import events_pb2, gateway_pb2

EVENTS_STREAM = "TABLE_EVENTS"


def nats_url(platform: Platform, user: str) -> str:
    """`trix up`'s NATS as one of its users (issue 18: it runs the production permissions)."""
    return nats_url_of(platform.state_dir, user)


async def test_following_seats_leaves_no_consumer_on_the_events_stream(platform: Platform) -> None:
    nc = await nats.connect(nats_url(platform, "table"), inbox_prefix=inbox_prefix("table").encode())
    players: list[Seated] = []
    try:
        js = nc.jetstream()
        before = (await js.stream_info(EVENTS_STREAM)).state.consumer_count
        players = [await seated(platform.target, f"follower{i}") for i in range(3)]
        for p in players:  # each one's seat events flow: stored, then live
            await asyncio.wait_for(_an_event(p.stream, p.table_id), 30)
        spectator = await seated(platform.target, "follower-watch")
        players.append(spectator)
        watched = players[0].table_id
        spectator.client.send(gateway_pb2.SessionRequest(watch=gateway_pb2.SpectateRequest(table_id=watched)))
        await asyncio.wait_for(_an_event(spectator.stream, watched), 30)
        after = (await js.stream_info(EVENTS_STREAM)).state.consumer_count
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


async def test_the_four_seats_of_a_table_share_one_live_subscription(platform: Platform) -> None:
    """The gateway's `NatsTables` follows every seat of a table through one subscription on
    the public subject (one delivery of each public event, parsed once) and one per seat
    subject; each seat still gets the whole stream with its own hand (ADR 0009 amendment)."""
    player = await seated(platform.target, "follower-shared")
    conn = NatsConnection(nats_url(platform, "gateway"), "test-shared-feeds", streams=(), buckets=())
    await conn.connect(give_up_after_s=30)
    streams: list[AsyncGenerator[events_pb2.Event, None]] = []
    try:
        tables = NatsTables(conn, b"s" * 32, 10)
        table_id = player.table_id
        streams = [tables.events(table_id, seat) for seat in (0, 1, 2, 3, SPECTATOR)]
        got = [await asyncio.wait_for(_until_dealt(s), 30) for s in streams]
        public = subjects.public_events(table_id)
        assert [sub.subject for sub in conn.client._subs.values()].count(public) == 1
        assert tables.feeds.subjects() == {
            public: 5,
            **{subjects.seat_events(table_id, seat): 1 for seat in range(4)},
        }
        assert len({tuple(e.sequence for e in events) for events in got}) == 1  # the same sequences
        seat_hands = [tuple(c.id for c in events[-1].deal_started.hand) for events in got[:4]]
        assert all(len(h) == 13 for h in seat_hands) and len(set(seat_hands)) == 4  # each its own hand
        assert not got[4][-1].deal_started.hand  # the spectator: the public copy
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
