"""A table's event stream as one seat (or a spectator) may see it, stored then live.

Owns how the table's event subjects are read back (ADR 0003 decision 14, ADR 0009):
- The public subject `trix.table.evt.<t>.public` carries every table sequence number
  exactly once: each public event, and the public copy of an event that has one copy per
  seat. It is gapless, so a reader knows when it missed something.
- A seat's subject `trix.table.evt.<t>.seat.<s>` carries only that seat's own copies (its
  hand in DealStarted, its legal moves in a TurnStarted with `seat_copies` for the seats
  due, RULES.md §14), each under the sequence of its public copy, and is published before
  that public copy.
- A seat sees, for each sequence, its own copy where one exists, else the public event
  (`merge`). Public events used to be copied to all four seat subjects as well: five
  stored, fsynced messages per event instead of one.

`follow` reads a stream without a server-side consumer per reader (a stream allows 1,000
consumers by default; thousands of players follow at once): live events through plain
subscriptions, stored ones through short-lived pull consumers deleted after each read. The
store is read when the reader starts, when the public subject shows a gap, when a
per-seat event's own copy has not arrived yet, after a NATS reconnect, and after a quiet
spell, so a live message lost on the way is still delivered, in order, once.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Iterable
from dataclasses import dataclass, field

import structlog
from nats.aio.msg import Msg
from nats.js.api import AckPolicy, ConsumerConfig, DeliverPolicy

from trix.errors import Unavailable
from trix.natsio import subjects
from trix.natsio.connection import NatsConnection
from trix.v1 import events_pb2

log = structlog.get_logger("trix.natsio.seatstream")

EVENTS_STREAM = "TABLE_EVENTS"
STATUS_HEADER = "Status"
"""Header of a JetStream status message (no messages, request timeout) on a pull's inbox."""
HISTORY_BATCH = 512
"""Stored messages read per pull; a seat sees about a thousand events in a whole game."""
QUIET_RECHECK_S = 30.0
"""A stream quiet this long is checked against the store (its last message may be lost)."""
WAIT_RECHECK_S = 0.2
"""While a per-seat event's own copy is missing, the store is read again this often."""
CONSUMER_IDLE_S = 30.0
"""The server removes a history consumer left behind (e.g. by a crash) after this long."""


def has_seat_copies(event: events_pb2.Event, seat: int) -> bool:
    """Whether this public event stands beside an own copy for `seat` (the seat's copy wins):
    a DealStarted has one per seat (the hand); a TurnStarted with `seat_copies` one for each
    seat in `seats` (its legal moves, ADR 0003 decision 15), so another seat or a spectator
    takes the public copy without waiting."""
    body = event.WhichOneof("body")
    if body == "deal_started":
        return True
    if body == "turn_started":
        turn = event.turn_started
        return turn.seat_copies and seat in turn.seats
    return False


def merge(public: Iterable[events_pb2.Event], own: Iterable[events_pb2.Event]) -> list[events_pb2.Event]:
    """A seat's stream from the public subject's events and the seat's own copies."""
    mine = {e.sequence: e for e in own}
    return [mine.get(e.sequence, e) for e in public]


@dataclass
class _Merger:
    """The ordered, deduplicated merge of what arrives (stored or live) for one reader."""

    seat: int | None
    last: int = 0
    own: dict[int, events_pb2.Event] = field(default_factory=dict)
    gap: bool = False
    """A public event came with sequence > last + 1: something was missed."""
    waiting: bool = False
    """A per-seat event's public copy came before the seat's own copy."""
    leftover: list[tuple[events_pb2.Event, bool]] = field(default_factory=list)

    def feed(self, items: list[tuple[events_pb2.Event, bool]]) -> list[events_pb2.Event]:
        """Items in arrival order, each (event, from the seat's own subject); what to emit.
        On a gap or a missing own copy it stops and keeps the rest in `leftover`, to be fed
        again after what the store holds."""
        for event, from_own in items:
            if from_own and event.sequence > self.last:
                self.own[event.sequence] = event
        out: list[events_pb2.Event] = []
        self.gap = self.waiting = False
        self.leftover = []
        for i, (event, from_own) in enumerate(items):
            if from_own or event.sequence <= self.last:
                continue
            if self.last and event.sequence > self.last + 1:
                self.gap = True
            elif self.seat is not None and event.sequence not in self.own and has_seat_copies(event, self.seat):
                self.waiting = True
            if self.gap or self.waiting:
                self.leftover = [item for item in items[i:] if not item[1]]
                break
            event = self.own.pop(event.sequence, event)
            self.last = event.sequence
            out.append(event)
        return out


async def follow(
    nats: NatsConnection, table_id: str, seat: int | None, *, timeout_s: float
) -> AsyncIterator[events_pb2.Event]:
    """Every event `seat` may see (None: the public stream), from the table's start, then
    live, in order, each once, ending after GameEnded."""
    public = subjects.public_events(table_id)
    own = subjects.seat_events(table_id, seat) if seat is not None else None
    wanted = [public] if own is None else [public, own]
    live: asyncio.Queue[Msg] = asyncio.Queue()

    async def on_live(msg: Msg) -> None:
        live.put_nowait(msg)

    subs = [await nats.client.subscribe(s, cb=on_live) for s in wanted]
    merger = _Merger(seat)
    try:
        await nats.client.flush(timeout=max(1, round(timeout_s)))
        reconnects = nats.reconnects
        items, next_seq = await _stored(nats, wanted, own, 0, timeout_s)
        waited = 0.0
        while True:
            for event in merger.feed(items):
                yield event
                if event.HasField("game_ended"):
                    return
            stuck = merger.gap or merger.waiting  # the missing piece is on its way to the store
            if stuck:
                waited += WAIT_RECHECK_S
                if waited > timeout_s:
                    raise Unavailable("the table's events have a hole; resuming")
            else:
                waited = 0.0
            msg: Msg | None = None
            try:
                async with asyncio.timeout(WAIT_RECHECK_S if stuck else QUIET_RECHECK_S):
                    msg = await live.get()
            except TimeoutError:
                pass
            items = []
            if msg is None or stuck or nats.reconnects != reconnects:
                reconnects = nats.reconnects
                items, next_seq = await _stored(nats, wanted, own, next_seq, timeout_s)
            items += merger.leftover
            while msg is not None:  # everything that arrived meanwhile, in arrival order
                items.append((events_pb2.Event.FromString(msg.data), msg.subject == own))
                msg = live.get_nowait() if not live.empty() else None
    finally:
        for sub in subs:
            try:
                await sub.unsubscribe()
            except Exception as exc:  # noqa: BLE001 - the connection may be gone
                log.debug("unsubscribe failed", error=type(exc).__name__)


async def _stored(
    nats: NatsConnection, wanted: list[str], own: str | None, start_seq: int, timeout_s: float
) -> tuple[list[tuple[events_pb2.Event, bool]], int]:
    """The subjects' stored events from stream sequence `start_seq` (0: all) in stream
    order, each with whether it is the seat's own copy, and the stream sequence to read from
    next time; one ephemeral pull consumer, deleted after."""
    js = nats.jetstream
    config = ConsumerConfig(
        ack_policy=AckPolicy.NONE,
        deliver_policy=DeliverPolicy.BY_START_SEQUENCE if start_seq else DeliverPolicy.ALL,
        opt_start_seq=start_seq or None,
        inactive_threshold=CONSUMER_IDLE_S,
        mem_storage=True,
        num_replicas=1,
    )
    if len(wanted) == 1:
        config.filter_subject = wanted[0]
    else:
        config.filter_subjects = list(wanted)
    info = await js.add_consumer(EVENTS_STREAM, config=config, timeout=timeout_s)
    items: list[tuple[events_pb2.Event, bool]] = []
    next_seq = start_seq
    try:
        while True:
            batch = await _pull(nats, info.name, timeout_s)
            for msg in batch:
                next_seq = msg.metadata.sequence.stream + 1
                items.append((events_pb2.Event.FromString(msg.data), msg.subject == own))
            if len(batch) < HISTORY_BATCH or (batch and batch[-1].metadata.num_pending == 0):
                break
    finally:
        try:
            await js.delete_consumer(EVENTS_STREAM, info.name)
        except Exception as exc:  # noqa: BLE001 - its inactivity threshold removes it anyway
            log.debug("consumer not deleted", error=type(exc).__name__)
    return items, next_seq  # next_seq still 0 if nothing is stored yet: next time reads all


async def _pull(nats: NatsConnection, consumer: str, timeout_s: float) -> list[Msg]:
    """One no-wait pull of up to HISTORY_BATCH messages: what is stored, then a status."""
    nc = nats.client
    got: asyncio.Queue[Msg] = asyncio.Queue()

    async def on_msg(msg: Msg) -> None:
        got.put_nowait(msg)

    inbox = nc.new_inbox()
    sub = await nc.subscribe(inbox, cb=on_msg)
    try:
        request = json.dumps({"batch": HISTORY_BATCH, "no_wait": True}).encode()
        await nc.publish(f"$JS.API.CONSUMER.MSG.NEXT.{EVENTS_STREAM}.{consumer}", request, reply=inbox)
        batch: list[Msg] = []
        async with asyncio.timeout(timeout_s):
            while len(batch) < HISTORY_BATCH:
                msg = await got.get()
                if msg.headers and msg.headers.get(STATUS_HEADER):
                    break  # 404 no (more) messages, 408 request done
                batch.append(msg)
        return batch
    except TimeoutError:
        raise Unavailable("the table's events could not be read; retrying") from None
    finally:
        await sub.unsubscribe()
