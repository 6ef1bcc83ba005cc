"""A table's event stream as one seat (or a spectator) may see it, live, gaps filled by the owner.

Owns how the table's core-NATS event subjects are read (ADR 0003, 0009, 0012): `merge`
gives a seat its own copy of a sequence where one exists, else the public event (a
spectator none, docs/rules.md §14); `follow` asks what a reader missed of the table's owner
(`History`: TableCommand.read_events), never periodically; `LiveFeeds` shares one plain
subscription per table feed per hub among that table's readers, each message parsed once.
No server-side consumer per reader.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections import deque
from collections.abc import AsyncGenerator, Awaitable, Callable, Iterable
from dataclasses import dataclass, field

import structlog
from google.protobuf.message import DecodeError
from nats.aio.msg import Msg
from nats.aio.subscription import Subscription

from trix.errors import NotFound, Unavailable
from trix.natsio import subjects
from trix.natsio.coalesce import subscribe_direct
from trix.natsio.connection import NatsConnection
from trix.runtime.tasks import start_kept
from trix.v1 import events_pb2, table_pb2

log = structlog.get_logger("trix.natsio.seatstream")

HISTORY_BATCH = 512
"""Events asked of the owner at once (its `read_events` limit); a seat sees about a thousand
events in a whole game."""
DEADLINE_GRACE_S = 5.0
"""A turn's deadline passed this long ago and nothing came: the owner is asked (the timers'
move, or whatever followed, may have been lost on the way)."""
QUIET_RECHECK_S = 30.0
"""With no turn deadline ahead (it passed, or none is known), a quiet reader asks the owner
this often (a stalled table, e.g. while the timers restart)."""
WAIT_RECHECK_S = 0.2
"""While a gap stays open (the owner's answer did not close it yet), the owner is asked again
this often."""
LIVE_QUEUE_LIMIT = 1024
"""Live events a reader may have waiting (a game is about a thousand); past that a reader that
does not consume drops what comes and asks the owner for it when it resumes, so a slow reader
never holds up the others of its table."""

History = Callable[[int], Awaitable[list[events_pb2.Event]]]
"""`after` -> up to HISTORY_BATCH events the reader may see after that sequence, oldest first,
already merged for its seat (the owner's `read_events` with the reader's identity)."""
SendCommand = Callable[[table_pb2.TableCommand], Awaitable[table_pb2.TableCommandReply]]
"""Sends a command to the table's owner as the caller (its identity, its error policy)."""
Sink = Callable[[events_pb2.Event], bool]
"""Takes a reader's next event, in order, where it arrives (inside the live subscription's
callback, no task switch); False: the reader wants nothing more (it ended, or the event was
the GameEnded). It must not block or raise."""
OnCause = Callable[[str, events_pb2.ActionCause, int], None]
"""(table id, the seat action a feed batch answers, the batch's last sequence): told as the
batch arrives, before any reader sees its events (the gateway's acceptances)."""


def owner_history(
    table_id: str, seat: int | None, send: SendCommand, *, limit: int = HISTORY_BATCH, invitation: str = ""
) -> History:
    """The `History` of a reader of `table_id` as `seat` (None: the public events only, with a
    spectator's `invitation` to a private table): the owner's `read_events`, sent by `send`."""

    async def history(after: int) -> list[events_pb2.Event]:
        read = table_pb2.ReadEventsRequest(
            table_id=table_id, seat=-1 if seat is None else seat, after_sequence=after, limit=limit
        )
        read.invitation = invitation
        reply = await send(table_pb2.TableCommand(read_events=read))
        return list(reply.read_events.events)

    return history


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
    deadline_s: float = 0.0
    """The latest turn's deadline seen (epoch seconds; 0: none): a reader quiet past it asks."""

    def quiet_s(self, now_s: float) -> float:
        """How long a reader with nothing missing may wait before it asks the owner."""
        due = self.deadline_s + DEADLINE_GRACE_S - now_s
        return due if due > 0 else QUIET_RECHECK_S

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
            if event.HasField("turn_started") and event.turn_started.HasField("deadline"):
                self.deadline_s = event.turn_started.deadline.ToMicroseconds() / 1e6
            out.append(event)
        return out


class _Reader:
    """One reader's share of the live feeds: what came for it, in arrival order, bounded."""

    def __init__(self, limit: int, seat: int | None = None) -> None:
        self.limit = limit
        self.seat = seat
        """Whose own copies it is given (None: a spectator, none)."""
        self.items: deque[tuple[events_pb2.Event, bool]] = deque()
        self.behind = 0
        """The highest sequence dropped because the queue was full: the store has it."""
        self._waiter: asyncio.Future[None] | None = None
        """What a waiting reader awaits (a bare future, not an asyncio.Event: no loop lookup or
        waiter list per event); resolved by `_signal`."""
        self._loop: asyncio.AbstractEventLoop | None = None
        self._deadline = 0.0
        self._timer: asyncio.TimerHandle | None = None
        self._waiting = False
        self._timed_out = False
        self._woken = False
        self.direct: Callable[[list[tuple[events_pb2.Event, bool]]], None] | None = None
        """Set while the reader's follow waits with nothing queued and a `Sink` to give to:
        live events go straight through it (`follow`), never queued."""

    def offer(self, items: list[tuple[events_pb2.Event, bool]]) -> int:
        """A live batch for this reader, as merger items (never changed here: readers share
        them): given straight to `direct` while it is parked with nothing queued, else
        queued; how many were dropped (the queue was full)."""
        direct = self.direct
        if direct is not None and self._waiting and not self.items:
            direct(items)
            return 0
        dropped = 0
        for event, from_own in items:
            if not self.put(event, from_own):
                dropped += 1
        return dropped

    def put(self, event: events_pb2.Event, from_own: bool) -> bool:
        """Queue a live event; False if dropped (the queue is full)."""
        if self._waiter is not None:
            self._signal()
        if len(self.items) >= self.limit:
            self.behind = max(self.behind, event.sequence)
            return False
        self.items.append((event, from_own))
        return True

    async def wait(self, timeout_s: float) -> None:
        """Until something is queued or `timeout_s` passed. Cancel-safe (no `wait_for`, ADR
        0009). One timer serves many waits: a timer that fires before the current deadline is
        set again for it, so a busy reader does not arm and cancel a timer per event (with a
        thousand readers the loop's timer heap was a sixth of their CPU)."""
        if self.items or self._woken:
            self._woken = False
            return
        loop = self._loop
        if loop is None:
            loop = self._loop = asyncio.get_running_loop()
        self._arm(loop, loop.time() + timeout_s)
        self._waiting, self._timed_out = True, False
        try:
            while not self.items and not self._timed_out and not self._woken:
                self._waiter = loop.create_future()
                await self._waiter
        finally:
            self._waiter = None
            self._waiting = False
            self._woken = False

    def _arm(self, loop: asyncio.AbstractEventLoop, deadline: float) -> None:
        """The current wait ends at `deadline`: the armed timer is kept if it fires no later."""
        self._deadline = deadline
        if self._timer is None or self._timer.when() > deadline:
            if self._timer is not None:
                self._timer.cancel()
            self._timer = loop.call_at(deadline, self._on_timer)

    def _signal(self) -> None:
        waiter, self._waiter = self._waiter, None
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    def _on_timer(self) -> None:
        self._timer = None
        if not self._waiting:
            return  # the next wait arms a new one
        loop = self._loop or asyncio.get_running_loop()
        if loop.time() + 0.001 >= self._deadline:
            self._timed_out = True
            self._signal()
        else:
            self._timer = loop.call_at(self._deadline, self._on_timer)

    def hurry(self, timeout_s: float) -> None:
        """End the current wait within `timeout_s` (a directly fed reader found a gap: the
        owner is asked as soon as a stuck reader would ask it)."""
        loop = self._loop
        if not self._waiting or loop is None:
            return
        deadline = loop.time() + timeout_s
        if deadline < self._deadline:
            self._arm(loop, deadline)

    def wake(self) -> None:
        """End the current wait now, or the next one at once (NATS reconnected: the reader
        asks the owner what it missed)."""
        self._woken = True
        self._signal()

    def take(self) -> list[tuple[events_pb2.Event, bool]]:
        items = list(self.items)
        self.items.clear()
        return items

    def close(self) -> None:
        self.direct = None
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None


@dataclass(eq=False)
class _Feed:
    """One table feed's live subscription and the readers it feeds."""

    subject: str
    readers: set[_Reader] = field(default_factory=set)
    opened: asyncio.Future[Subscription] | None = None


class LiveFeeds:
    """The live part of `follow`, shared: one plain subscription per table feed for all of
    this hub's readers of the table. The first reader of a table subscribes, the last one
    leaving unsubscribes (a later reader gets a fresh subscription); each message is parsed
    once and queued for every current reader in arrival order, with its own seat's copies.
    A reader's queue is bounded (`queue_limit`): a reader that does not consume drops live
    events and reads them from the store instead, never delaying the others.

    One hub per NATS connection user (the gateway's `NatsTables`, the table service's
    `TableBus`); `follow` without one subscribes for itself alone."""

    def __init__(
        self, nats: NatsConnection, *, queue_limit: int = LIVE_QUEUE_LIMIT, on_cause: OnCause | None = None
    ) -> None:
        self.nats = nats
        self.queue_limit = queue_limit
        self.on_cause = on_cause
        self.dropped = 0
        """Live events dropped for readers whose queue was full (they read the store instead)."""
        self._feeds: dict[str, _Feed] = {}
        self._closing: set[asyncio.Task[None]] = set()
        nats.core_reconnect_hooks.append(self._on_reconnect)

    async def _on_reconnect(self) -> None:
        """Every reader asks the owner at once after a reconnect: a batch published meanwhile
        was lost for it, and a reader waiting for a turn's deadline (or the 30 s quiet recheck)
        would otherwise notice only then (games paused 26-33 s after a NATS fault)."""
        for feed in list(self._feeds.values()):
            for reader in list(feed.readers):
                reader.wake()

    def close(self) -> None:
        """Stop following reconnects (a hub of one `follow`)."""
        with contextlib.suppress(ValueError):
            self.nats.core_reconnect_hooks.remove(self._on_reconnect)

    def live(self, table_id: str) -> bool:
        """This hub's subscription to the table's feed is known to the server: a batch
        published from now on reaches it (while the connection holds)."""
        feed = self._feeds.get(subjects.table_feed(table_id))
        opened = None if feed is None else feed.opened
        return opened is not None and opened.done() and not opened.cancelled() and opened.exception() is None

    def subjects(self) -> dict[str, int]:
        """Each subscribed subject and how many readers it has."""
        return {subject: len(feed.readers) for subject, feed in self._feeds.items()}

    def _join(self, reader: _Reader, table_id: str, timeout_s: float) -> _Feed:
        subject = subjects.table_feed(table_id)
        feed = self._feeds.get(subject)
        if feed is None:
            feed = _Feed(subject)
            feed.opened = asyncio.ensure_future(self._open(feed, timeout_s))
            self._feeds[subject] = feed
        feed.readers.add(reader)
        return feed

    @staticmethod
    async def _ready(feed: _Feed) -> None:
        """Until the feed's subscription is known to the server (raises if it failed)."""
        assert feed.opened is not None
        await asyncio.shield(feed.opened)  # a reader cancelled meanwhile does not cancel it for the others

    async def _open(self, feed: _Feed, timeout_s: float) -> Subscription:
        nc = self.nats.client

        def on_msg(msg: Msg) -> None:  # direct: no await, called where the message is parsed
            try:
                batch = events_pb2.TableEventBatch.FromString(msg.data)
            except DecodeError:
                log.warning("undecodable live events dropped", subject=msg.subject)
                return  # the readers see a gap and ask the owner
            events = batch.events
            if self.on_cause is not None and events and batch.HasField("cause"):
                try:
                    self.on_cause(events[-1].table_id, batch.cause, events[-1].sequence)
                except Exception as exc:  # a bug of the hook: the events still go to their readers
                    log.error("cause hook failed", subject=msg.subject, exc_info=exc)
            public = [(event, False) for event in events]
            # docs/rules.md §14: a reader is given its own seat's copies, never another's.
            own = {copies.seat: copies.events for copies in batch.seats}
            for reader in feed.readers:  # no await in between (a sink never joins or leaves): a stable set
                mine = own.get(reader.seat) if own and reader.seat is not None else None
                items = public if mine is None else [*((event, True) for event in mine), *public]
                self.dropped += reader.offer(items)

        sub: Subscription | None = None
        try:
            sub = await subscribe_direct(nc, feed.subject, on_msg)
            await nc.flush(timeout=max(1, round(timeout_s)))  # subscribed before the owner is asked
        except BaseException:
            if self._feeds.get(feed.subject) is feed:
                del self._feeds[feed.subject]  # the next reader tries afresh
            if sub is not None:
                await _unsubscribe(sub)
            raise
        return sub

    async def _leave(self, feed: _Feed, reader: _Reader) -> None:
        feed.readers.discard(reader)
        if feed.readers or self._feeds.get(feed.subject) is not feed:
            return
        del self._feeds[feed.subject]  # a reader joining from now on subscribes afresh
        opened, feed.opened = feed.opened, None  # no cycle: feed -> its subscription -> on_msg -> feed
        assert opened is not None
        if opened.done():
            if not opened.cancelled() and opened.exception() is None:
                await _unsubscribe(opened.result())  # leaves the client's subscriptions at once
            return
        start_kept(self._closing, self._close_when_open(opened))  # not in a cancelled reader's way

    @staticmethod
    async def _close_when_open(opened: asyncio.Future[Subscription]) -> None:
        try:
            sub = await opened
        except BaseException:  # noqa: BLE001 - it never opened: nothing to close
            return
        await _unsubscribe(sub)


async def _unsubscribe(sub: Subscription) -> None:
    try:
        await sub.unsubscribe()
    except Exception as exc:  # noqa: BLE001 - the connection may be gone
        log.debug("unsubscribe failed", error=type(exc).__name__)
    # nats-py cancels the subscription's delivery task and keeps it: the task's CancelledError
    # holds the task's frame, which holds the subscription, which holds the task, a cycle
    # that outlives every closed follow (ADR 0024: cyclic garbage waits for a full collection
    # or the thaw). The task runs to its end all the same; only the reference goes.
    sub._wait_for_msgs_task = None


async def follow(
    nats: NatsConnection,
    table_id: str,
    seat: int | None,
    *,
    timeout_s: float,
    history: History,
    feeds: LiveFeeds | None = None,
    after: int = 0,
    sink: Sink | None = None,
) -> AsyncGenerator[events_pb2.Event, None]:
    """Every event `seat` may see (None: the public stream) after sequence `after`, then live,
    in order, each once, ending after GameEnded. Live events come through `feeds` (shared with
    its other readers; None: subscriptions of this reader alone); what is missed, from
    `history`. If the owner no longer holds the events right after `after` (an archived
    finished table), the first event yielded is the oldest it holds: the caller sees the jump.

    With a `sink`, a live event that comes in order while this reader waits (everything
    yielded so far consumed, nothing missing) goes to `sink` in the subscription's callback
    instead of being yielded: no task of the reader wakes for it (four readers per
    action at a gateway). What is read from the owner, and whatever follows a gap, is still
    yielded, so the consumer sees one ordered stream across both ways; an exception of the
    sink is raised here."""
    hub = feeds if feeds is not None else LiveFeeds(nats)
    reader = _Reader(hub.queue_limit, seat)
    feed: _Feed | None = None
    merger = _Merger(seat, last=after)
    ended = False
    failed: Exception | None = None

    def direct(items: list[tuple[events_pb2.Event, bool]]) -> None:
        nonlocal ended, failed
        assert sink is not None
        if merger.leftover:
            items = merger.leftover + items  # public events held behind a gap or a missing own copy
        try:
            for event in merger.feed(items):
                if not sink(event) or event.HasField("game_ended"):
                    ended = True
                    break
        except Exception as exc:  # noqa: BLE001 - the consumer's bug: raised in its own task
            failed = exc
        if ended or failed is not None:
            reader.direct = None
            reader.wake()
        elif merger.gap or merger.waiting:
            reader.hurry(WAIT_RECHECK_S)  # the owner is asked as a stuck reader asks it

    try:
        feed = hub._join(reader, table_id, timeout_s)
        await hub._ready(feed)  # subscribed before the owner is asked: nothing falls between
        reconnects = nats.reconnects
        items = await _missed(history, merger.last, seat)
        if items and merger.last and items[0][0].sequence > merger.last + 1:
            merger.last = items[0][0].sequence - 1  # the owner's history starts later: jump once
        waited = 0.0
        while True:
            for event in merger.feed(items):
                yield event
                if event.HasField("game_ended"):
                    return
            # The missing piece was lost on the way or is still on it, or live events were
            # dropped while this reader did not consume (its queue was full): the owner has them.
            stuck = merger.gap or merger.waiting or merger.last < reader.behind
            if stuck:
                waited += WAIT_RECHECK_S
                if waited > timeout_s:
                    raise Unavailable("the table's events have a hole; resuming")
            else:
                waited = 0.0
            given = merger.last  # only the sink moves it while this waits
            reader.direct = direct if sink is not None else None
            try:
                await reader.wait(WAIT_RECHECK_S if stuck else merger.quiet_s(time.time()))
            finally:
                reader.direct = None
            if failed is not None:
                raise failed
            if ended:
                return
            live = reader.take()  # everything that arrived meanwhile, in arrival order
            items = []
            if merger.last != given:  # the sink took some: where the merge stands now decides
                stuck = merger.gap or merger.waiting or merger.last < reader.behind
                if not live and not stuck and nats.reconnects == reconnects:
                    continue  # all came straight to the sink; the wait's old deadline passed: wait anew
            if not live or stuck or nats.reconnects != reconnects:
                reconnects = nats.reconnects
                items = await _missed(history, merger.last, seat)
            items += merger.leftover
            items += live
    finally:
        reader.close()
        if feed is not None:
            await hub._leave(feed, reader)
        if feeds is None:
            hub.close()


async def _missed(history: History, after: int, seat: int | None) -> list[tuple[events_pb2.Event, bool]]:
    """What the owner holds after `after`, as merger items: an event that has an own copy for
    `seat` is that copy (the owner merged it), fed as the own copy and as its public one."""
    items: list[tuple[events_pb2.Event, bool]] = []
    while True:
        try:
            got = await history(after)
        except NotFound:
            return items  # not created yet (a match is followed as soon as it is formed): live events will come
        for event in got:
            if seat is not None and has_seat_copies(event, seat):
                items.append((event, True))
            items.append((event, False))
        if len(got) < HISTORY_BATCH:
            return items
        after = got[-1].sequence
