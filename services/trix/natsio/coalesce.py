"""Coalesced socket reads and direct delivery for a busy NATS client (ADR 0019).

Owns `CoalescingClient`: after a read its socket is left unread until `window_s` has passed,
so one read takes everything that came meanwhile; the first message after a quiet spell is
read at once and writes are never delayed (`new_client(0)` reads at once). Owns
`subscribe_direct`: a plain callback called where the parser hands a message over, in
arrival order, with no queue or task step (so are the client's own replies); it must not
block or raise. The measurements are in ADR 0019.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from nats.aio.client import Client
from nats.aio.msg import Msg
from nats.aio.subscription import Subscription

DirectCallback = Callable[[Msg], None]
DIRECT_ATTR = "_trix_direct"
"""The attribute of a nats-py `Subscription` holding its direct callback (`subscribe_direct`)."""


class _WindowedReads:
    """A nats-py transport whose `read` comes at most once per window; all else is the
    wrapped transport's."""

    def __init__(self, inner: Any, window_s: float) -> None:
        self._inner = inner
        self._window_s = window_s
        self._next_read = 0.0

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    def _pausable(self) -> Any:
        """The socket's asyncio transport (TcpTransport, plain or TLS; asyncio's or uvloop's,
        which is no `asyncio.ReadTransport` subclass), or None (a WebSocket)."""
        writer = getattr(self._inner, "_io_writer", None)
        transport = getattr(writer, "transport", None)
        if all(hasattr(transport, name) for name in ("pause_reading", "resume_reading", "is_closing")):
            return transport
        return None

    async def read(self, buffer_size: int) -> bytes:
        loop = asyncio.get_running_loop()
        wait = self._next_read - loop.time()
        if wait > 0:
            transport = self._pausable()
            if transport is not None and not transport.is_closing():
                transport.pause_reading()  # the kernel keeps what comes meanwhile
                try:
                    await asyncio.sleep(wait)
                finally:
                    if not transport.is_closing():
                        transport.resume_reading()
            else:
                await asyncio.sleep(wait)
        data: bytes = await self._inner.read(buffer_size)
        self._next_read = loop.time() + self._window_s
        return data


class CoalescingClient(Client):
    """A nats-py client that reads its socket at most once per `window_s` (0: at once), and
    delivers the messages of direct subscriptions (`subscribe_direct`) and of its own
    requests' replies without a task step each."""

    def __init__(self, window_s: float) -> None:
        self._read_window_s = window_s
        super().__init__()

    async def _process_msg(self, sid: int, subject: bytes, reply: bytes, data: bytes, headers: bytes) -> None:
        sub = self._subs.get(sid)
        direct: DirectCallback | None = None if sub is None else getattr(sub, DIRECT_ATTR, None)
        if direct is None:
            await super()._process_msg(sid, subject, reply, data, headers)
            return
        self.stats["in_msgs"] += 1
        self.stats["in_bytes"] += len(data)
        sub._received += 1  # type: ignore[union-attr]  # `direct` is None without a subscription
        msg = self._build_message(sid, subject, reply, data, await self._process_headers(headers))
        try:
            direct(msg)
        except Exception as exc:  # noqa: BLE001 - as a queued callback's error: the connection's error callback
            await self._error_cb(exc)

    async def _init_request_sub(self) -> None:
        await super()._init_request_sub()
        # The replies' wildcard subscription nats-py just made: its callback only completes
        # the request's future, so it may run directly.
        assert self._resp_sub_prefix is not None
        mux_subject = self._resp_sub_prefix.decode() + "*"
        for sub in self._subs.values():
            if sub.subject == mux_subject and sub._cb == self._request_sub_callback:
                setattr(sub, DIRECT_ATTR, self._request_reply)

    def _request_reply(self, msg: Msg) -> None:
        """nats-py's `_request_sub_callback`, without its coroutine: the reply completes the
        future of the request its subject's last token names (an answer too late is dropped)."""
        prefix = self._resp_sub_prefix
        future = None if prefix is None else self._resp_map.get(msg.subject[len(prefix) :])
        if future is not None and not future.done():
            future.set_result(msg)

    @property
    def _transport(self) -> Any:
        return self.__dict__.get("_windowed_transport")

    @_transport.setter
    def _transport(self, transport: Any) -> None:
        # nats-py makes a new transport for every (re)connection: each gets the window.
        if transport is not None and self._read_window_s > 0 and not isinstance(transport, _WindowedReads):
            transport = _WindowedReads(transport, self._read_window_s)
        self.__dict__["_windowed_transport"] = transport


def new_client(window_s: float) -> Client:
    """The client for a read window (0: reads at once)."""
    return CoalescingClient(window_s)


async def subscribe_direct(nc: Client, subject: str, cb: DirectCallback, *, queue: str = "") -> Subscription:
    """A core subscription whose messages `cb` gets directly (see the module docstring), in
    order; on a client that is not a `CoalescingClient`, through nats-py's own task."""

    async def queued(msg: Msg) -> None:
        cb(msg)

    sub = await nc.subscribe(subject, queue=queue, cb=queued)
    setattr(sub, DIRECT_ATTR, cb)
    return sub
