"""Coalesced NATS reads (`trix.natsio.coalesce`, ADR 0019), on a real nats-server: a busy
connection reads its socket at most once per window and takes what came in one read; the
first message after a quiet spell is read at once; the window survives a reconnect; no
message is lost or reordered; a window of 0 reads at once. Direct delivery (ADR 0019
addendum): a direct subscription's callback, and the reply of a request, run right where the
read loop parses the message, in order, with no task step; a direct callback's error goes to
the connection's error callback and the messages after it still come."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator
from typing import Any

from foundation_support import connected
from nats.aio.msg import Msg

from support.nats import NatsServer
from support.waiting import eventually
from trix.natsio.coalesce import DIRECT_ATTR, CoalescingClient, _WindowedReads, subscribe_direct
from trix.runtime.config import NATS_READ_WINDOW_MS, RuntimeConfig

WINDOW_S = 1.5
"""Long against a loaded 2-core box's scheduling noise, so the assertions have wide margins."""
QUIET_PING_S = 60
"""The readers' PING interval: each PONG is a read, which must not keep the window busy here."""
QUIET_S = 6.0
"""A quiet spell: past the window of the last read, including the server's first PING to a new
connection (about 1-2 s after it connects; the next one comes minutes later)."""


@contextlib.asynccontextmanager
async def windowed(url: str, window_s: float = WINDOW_S, **options: Any) -> AsyncIterator[CoalescingClient]:
    nc = CoalescingClient(window_s)
    await nc.connect(url, ping_interval=QUIET_PING_S, **options)
    try:
        yield nc
    finally:
        await nc.close()


class _Received:
    """What a subscription got, each message stamped when its callback ran."""

    def __init__(self) -> None:
        self.items: list[tuple[float, bytes]] = []

    async def on_msg(self, msg: Msg) -> None:
        self.items.append((time.monotonic(), msg.data))

    async def until(self, count: int) -> None:
        await eventually(lambda: len(self.items) >= count, what=f"{count} messages")


async def test_a_busy_connection_reads_once_per_window_and_a_quiet_one_at_once(nats_server: NatsServer) -> None:
    async with (
        windowed(nats_server.url) as reader,
        connected(nats_server.url, "window-writer") as writer,
    ):
        got = _Received()
        await reader.subscribe("window.>", cb=got.on_msg)
        await reader.flush()
        await asyncio.sleep(QUIET_S)  # quiet: the next message is read at once

        sent = time.monotonic()
        await writer.client.publish("window.a", b"first")
        await writer.client.flush()
        await got.until(1)
        assert got.items[0][0] - sent < WINDOW_S / 2, "the first message after a quiet spell waited"

        # Right behind that read: these wait for the window, then come in together, in order.
        for i in range(20):
            await writer.client.publish("window.b", b"%d" % i)
        await writer.client.flush()
        await got.until(21)
        first_read = got.items[0][0]
        times = [t for t, _ in got.items[1:]]
        assert min(times) - first_read >= WINDOW_S * 0.6, "a message was read inside the window"
        assert max(times) - min(times) < WINDOW_S / 2, "the window's messages did not come in one read"
        assert [d for _, d in got.items] == [b"first", *(b"%d" % i for i in range(20))]


async def test_the_read_window_holds_across_a_reconnect(nats_server: NatsServer) -> None:
    reconnected = asyncio.Event()

    async def on_reconnect() -> None:
        reconnected.set()

    options: dict[str, Any] = {"max_reconnect_attempts": -1, "reconnect_time_wait": 0.2}
    async with windowed(nats_server.url, reconnected_cb=on_reconnect, **options) as reader:
        got = _Received()
        await reader.subscribe("again.>", cb=got.on_msg)
        await reader.flush()
        await asyncio.to_thread(nats_server.stop)
        await asyncio.to_thread(nats_server.start)
        await asyncio.wait_for(reconnected.wait(), 60)
        await reader.flush(timeout=30)  # PING/PONG: answered through the window
        async with connected(nats_server.url, "window-writer-2") as writer:
            await asyncio.sleep(QUIET_S)
            sent = time.monotonic()
            await writer.client.publish("again.a", b"1")
            await writer.client.flush()
            await got.until(1)
            read_at = got.items[0][0]
            assert read_at - sent < WINDOW_S / 2
            await writer.client.publish("again.b", b"2")
            await writer.client.flush()
            await got.until(2)
            assert got.items[1][0] - read_at >= WINDOW_S * 0.6, "the new connection's reads are not windowed"


async def test_a_zero_window_reads_at_once_and_services_default_to_theirs(nats_server: NatsServer) -> None:
    async with connected(nats_server.url, "window-none") as conn:
        assert isinstance(conn.client, CoalescingClient)
        assert not isinstance(conn.client._transport, _WindowedReads)
    async with connected(nats_server.url, "window-some", read_window_s=0.005) as conn:
        assert isinstance(conn.client._transport, _WindowedReads)
    assert RuntimeConfig.from_env("timers", {}).nats_read_window_s == NATS_READ_WINDOW_MS["timers"] / 1000
    for service in ("gateway", "table", "matchmaking", "scoring"):  # the move path reads at once
        assert RuntimeConfig.from_env(service, {}).nats_read_window_s == 0.0
    assert RuntimeConfig.from_env("gateway", {"TRIX_NATS_READ_WINDOW_MS": "5"}).nats_read_window_s == 0.005
    assert RuntimeConfig.from_env("timers", {"TRIX_NATS_READ_WINDOW_MS": "0"}).nats_read_window_s == 0.0


async def test_a_direct_subscription_gets_every_message_in_order_on_the_read_loop(nats_server: NatsServer) -> None:
    errors: list[Exception] = []

    async def on_error(exc: Exception) -> None:
        errors.append(exc)

    async with (
        windowed(nats_server.url, 0.0, error_cb=on_error) as reader,
        connected(nats_server.url, "direct-writer") as writer,
    ):
        got: list[bytes] = []
        ran_on: set[asyncio.Task[Any] | None] = set()

        def on_msg(msg: Msg) -> None:
            ran_on.add(asyncio.current_task())
            if msg.data == b"boom":
                raise ValueError("a direct callback's bug")
            got.append(msg.data)

        sub = await subscribe_direct(reader, "direct.*", on_msg)
        await reader.flush()
        sent = [str(i).encode() for i in range(300)]
        for data in [*sent[:150], b"boom", *sent[150:]]:
            await writer.client.publish("direct.x", data)
        await writer.client.flush()
        await eventually(lambda: len(got) >= len(sent), what="every direct message")
        assert got == sent  # none lost, none reordered, the ones after the error too
        assert ran_on == {reader._reading_task}  # called where the read loop parses, no task of its own
        assert sub._pending_queue.qsize() == 0 and sub._received == len(sent) + 1
        assert [str(e) for e in errors] == ["a direct callback's bug"]


async def test_a_requests_reply_is_delivered_directly(nats_server: NatsServer) -> None:
    async with windowed(nats_server.url, 0.0) as client, connected(nats_server.url, "direct-answerer") as answerer:

        async def answer(msg: Msg) -> None:
            await msg.respond(b"re:" + msg.data)

        await answerer.client.subscribe("ask", cb=answer)
        await answerer.client.flush()
        replies = [await client.request("ask", f"q{i}".encode(), timeout=10) for i in range(20)]
        assert [r.data for r in replies] == [f"re:q{i}".encode() for i in range(20)]
        muxes = [sub for sub in client._subs.values() if getattr(sub, DIRECT_ATTR, None) is not None]
        assert len(muxes) == 1 and muxes[0].subject.endswith(".*")  # the replies' wildcard, direct
