"""A pull consumer acking each batch's last message (ack "last", AckPolicy.ALL) checks its first
batch too: a delivery made after it bound its durable and before its first fetch, that it never
received (lost in transit: a NATS node killed between the bind and the fetch), would be acked
away by the first batch's ack and never come again (a game never settled). The loop reads the
consumer's ack floor once when it binds; a first batch starting past it rewinds the consumer;
one starting right after it (a fresh consumer, a durable bound as another process left it) is
applied as it is, with no rewind. Real nats-server; the lost delivery is a fetch on the loop's
own durable by a subscription that drops what it got."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Callable

import nats
import pytest
from nats.aio.client import Client
from nats.aio.msg import Msg
from nats.js.api import AckPolicy, ConsumerConfig, DeliverPolicy
from nats.js.client import JetStreamContext

from support.nats import NatsServer
from trix.natsio.consumer import PullConsumer

STREAM = "FIRST_BATCH"
SUBJECT = "first.batch.*"
DURABLE = "first-batch"


def _config(start: int = 1) -> ConsumerConfig:
    return ConsumerConfig(
        durable_name=DURABLE,
        deliver_policy=DeliverPolicy.BY_START_SEQUENCE,
        opt_start_seq=start,
        ack_policy=AckPolicy.ALL,
        ack_wait=30,
    )


class _Loop:
    """A PullConsumer with ack "last" on the test stream, recording the stream sequences it applied."""

    def __init__(self, nc: Client, gate: asyncio.Event | None = None) -> None:
        self.applied: list[int] = []
        self.pull = PullConsumer("first-batch", nc, self._apply, batch=16, fetch_timeout_s=0.5, ack="last", gate=gate)

    async def _apply(self, msg: Msg) -> None:
        self.applied.append(int(msg.metadata.sequence.stream))

    async def start(self, js: JetStreamContext, start: int = 1) -> None:
        await self.pull.start(js, SUBJECT, stream=STREAM, config=_config(start))

    async def stopped_once(self, applied: list[int], what: str) -> int:
        """Stopped once it applied `applied` (in this order, nothing more); the times it rewound."""
        await _until(lambda: self.applied == applied, what)
        await self.pull.stop()
        return self.pull.rewound


async def _until(done: Callable[[], bool], what: str, timeout_s: float = 10.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not done():
        assert time.monotonic() < deadline, f"{what} not within {timeout_s:.0f}s"
        await asyncio.sleep(0.05)


@pytest.fixture
async def stream(nats_server: NatsServer) -> AsyncIterator[tuple[Client, JetStreamContext]]:
    """A connection and the test stream with three messages (stream sequences 1 to 3)."""
    nc = await nats.connect(nats_server.url)
    try:
        js = nc.jetstream(timeout=10)
        await js.add_stream(name=STREAM, subjects=[SUBJECT])
        await _publish(js, 0, 3)
        yield nc, js
    finally:
        await nc.close()


async def _publish(js: JetStreamContext, first: int, end: int) -> None:
    for i in range(first, end):
        await js.publish(f"first.batch.m{i}", b"x")


async def _left_acked(nc: Client, js: JetStreamContext, start: int = 1) -> _Loop:
    """A loop that consumed the stream from `start` and stopped, its last ack in; then two
    messages more (4 and 5)."""
    loop = _Loop(nc)
    await loop.start(js, start)
    await loop.stopped_once(list(range(start, 4)), "the first loop's messages")
    await _acked_through(js, 3)
    await _publish(js, 3, 5)
    return loop


async def _lose_one(js: JetStreamContext) -> int:
    """One delivery of the durable fetched by another subscription and dropped (never acked);
    its stream sequence."""
    ghost = await js.pull_subscribe(SUBJECT, durable=DURABLE, stream=STREAM)
    lost = await ghost.fetch(1, timeout=10)
    await ghost.unsubscribe()
    assert len(lost) == 1
    return int(lost[0].metadata.sequence.stream)


async def _acked_through(js: JetStreamContext, stream_seq: int) -> None:
    for _ in range(200):
        info = await js.consumer_info(STREAM, DURABLE)
        if info.ack_floor is not None and int(info.ack_floor.stream_seq or 0) >= stream_seq:
            return
        await asyncio.sleep(0.05)
    raise AssertionError(f"the ack of {stream_seq} never reached the consumer")


async def test_a_delivery_lost_between_the_bind_and_the_first_fetch_rewinds_the_consumer(
    stream: tuple[Client, JetStreamContext],
) -> None:
    nc, js = stream
    hold = asyncio.Event()  # cleared: the loop binds (creates the durable) and waits to fetch
    loop = _Loop(nc, gate=hold)
    await loop.start(js)
    assert await _lose_one(js) == 1
    hold.set()
    assert await loop.stopped_once([1, 2, 3], "the lost first message applied") == 1  # ack wait: 30 s


async def test_a_durable_bound_with_a_delivery_it_never_had_resumes_after_its_ack_floor(
    stream: tuple[Client, JetStreamContext],
) -> None:
    nc, js = stream
    await _left_acked(nc, js)
    assert await _lose_one(js) == 4  # a process that died holding it
    second = _Loop(nc)
    await second.start(js)
    assert await second.stopped_once([4, 5], "the lost message applied, resuming after the floor") == 1


async def test_a_first_batch_right_after_the_ack_floor_is_applied_without_a_rewind(
    stream: tuple[Client, JetStreamContext],
) -> None:
    nc, js = stream
    fresh = await _left_acked(nc, js, start=2)  # a consumer created from a start sequence
    bound = _Loop(nc)  # binds to the durable as the first loop left it
    await bound.start(js)
    await _until(lambda: bound.applied == [4, 5], "a bound consumer's messages")
    await asyncio.sleep(0.6)  # another fetch: nothing delivered twice
    assert bound.applied == [4, 5]
    assert (fresh.pull.rewound, bound.pull.rewound) == (0, 0)
    await bound.pull.stop()
