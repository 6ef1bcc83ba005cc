"""Following a seat costs the NATS server no consumer (issue 9, issue 10 scale): a stream
holds at most 1,000 consumers by default and thousands of players follow their seats at
once, so the gateway reads stored events through short-lived pull consumers it deletes and
live ones through plain subscriptions."""

from __future__ import annotations

import asyncio
import re
from collections.abc import AsyncIterator

import nats
from gateway_support import Platform, Seated, seated

from trix.v1 import gateway_pb2

EVENTS_STREAM = "TABLE_EVENTS"


def nats_url(platform: Platform) -> str:
    conf = (platform.state_dir / "nats.conf").read_text()
    found = re.search(r"listen: (127\.0\.0\.1:\d+)", conf)
    assert found, conf
    return f"nats://{found.group(1)}"


async def test_following_seats_leaves_no_consumer_on_the_events_stream(platform: Platform) -> None:
    nc = await nats.connect(nats_url(platform))
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
