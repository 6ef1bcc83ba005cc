"""A session's outbox (issue 16: a deque and one waiter future instead of an asyncio.Queue)
keeps what the Queue guaranteed the session: order, the bound (QueueFull, so a client that
does not read is closed, not buffered for ever), and a reader that waits without losing
anything when its wait is cancelled."""

from __future__ import annotations

import asyncio

import pytest

from trix.gateway.outbox import Outbox
from trix.v1 import events_pb2, gateway_pb2


def _event(sequence: int) -> events_pb2.Event:
    return events_pb2.Event(table_id="t1", sequence=sequence)


async def test_outbox_gives_back_in_order_what_was_put() -> None:
    box = Outbox(8)
    items = [_event(1), gateway_pb2.SessionResponse(pong=True), _event(2), None]
    for item in items:
        box.put_nowait(item)
    assert box.qsize() == 4 and not box.empty()
    assert [box.get_nowait(), await box.get(), box.get_nowait(), await box.get()] == items
    assert box.empty()
    with pytest.raises(asyncio.QueueEmpty):
        box.get_nowait()


async def test_outbox_refuses_past_its_bound() -> None:
    box = Outbox(2)
    box.put_nowait(_event(1))
    box.put_nowait(_event(2))
    with pytest.raises(asyncio.QueueFull):
        box.put_nowait(_event(3))
    assert box.get_nowait().sequence == 1  # type: ignore[union-attr]
    box.put_nowait(_event(3))  # room again
    assert box.qsize() == 2


async def test_a_waiting_reader_wakes_on_put_and_a_cancelled_wait_loses_nothing() -> None:
    box = Outbox(4)
    reader = asyncio.ensure_future(box.get())
    await asyncio.sleep(0)
    assert not reader.done()
    box.put_nowait(_event(7))
    assert (await asyncio.wait_for(reader, 5)).sequence == 7  # type: ignore[union-attr]

    cancelled = asyncio.ensure_future(box.get())
    await asyncio.sleep(0)
    cancelled.cancel()
    with pytest.raises(asyncio.CancelledError):
        await cancelled
    box.put_nowait(_event(8))  # put after the cancelled wait: still there for the next reader
    assert (await asyncio.wait_for(box.get(), 5)).sequence == 8  # type: ignore[union-attr]
