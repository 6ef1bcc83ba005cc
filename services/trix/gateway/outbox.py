"""A session's outbox: `Outbox`, bounded, one reader, and what it holds (`Outgoing`)."""

from __future__ import annotations

import asyncio
from collections import deque

from trix.v1 import events_pb2, gateway_pb2

Outgoing = gateway_pb2.SessionResponse | events_pb2.Event | None
"""What a session's outbox holds: a message, a table event (wrapped or batched on the way out),
or None, the end."""


class Outbox:
    """A session's bounded outbox with its one reader (`Session.messages`): a deque and one
    bare future to wake the reader. asyncio.Queue's bookkeeping (its getter and putter lists,
    unfinished-task counter and event, a loop lookup per call) was a visible share of the
    gateway's CPU with four messages per action."""

    __slots__ = ("_items", "_maxsize", "_waiter")

    def __init__(self, maxsize: int) -> None:
        self._items: deque[Outgoing] = deque()
        self._maxsize = maxsize
        self._waiter: asyncio.Future[None] | None = None

    def empty(self) -> bool:
        return not self._items

    def qsize(self) -> int:
        return len(self._items)

    def put_nowait(self, item: Outgoing) -> None:
        """Queue `item`; asyncio.QueueFull when `maxsize` are waiting."""
        if len(self._items) >= self._maxsize:
            raise asyncio.QueueFull
        self._items.append(item)
        waiter = self._waiter
        if waiter is not None:
            self._waiter = None
            if not waiter.done():
                waiter.set_result(None)

    def get_nowait(self) -> Outgoing:
        if not self._items:
            raise asyncio.QueueEmpty
        return self._items.popleft()

    async def get(self) -> Outgoing:
        """The next item, waiting for one (a single reader). Cancel-safe: nothing is taken
        until it returns."""
        while not self._items:
            waiter = self._waiter = asyncio.get_running_loop().create_future()
            try:
                await waiter
            finally:
                if self._waiter is waiter:
                    self._waiter = None
        return self._items.popleft()
