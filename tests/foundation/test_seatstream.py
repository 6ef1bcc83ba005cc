"""A seat's stream from the table feed's public copies and the seat's own copies (ADR 0003
decision 14): every sequence once and in order, the seat's own copy where there is one
(docs/rules.md §14: the hand), whatever order they come in, what was missed then live, holes
filled from the table's owner (issue 16); a spectator's stream is the public copies alone.

`Owner` plays the table owner's two parts these tests need, on the real nats-server: it
publishes each copy as a core NATS batch of its own on the table's feed and answers `History` the way
`TableService.read_events` does (the seat's own copy where it has one, else the public one).
The real owner's side is tested in tests/table (test_turn_copies, test_event_sink)."""

from __future__ import annotations

import asyncio
import contextlib
import gc
from collections.abc import AsyncIterator

from foundation_support import connected

from support.nats import NatsServer
from support.waiting import eventually
from trix.natsio import seatstream, subjects
from trix.natsio.connection import NatsConnection
from trix.natsio.seatstream import _Merger, _Reader
from trix.v1 import common_pb2, events_pb2

T = "ss1"


class Owner:
    """A table's events as its owner publishes and serves them (see the module docstring)."""

    def __init__(self, conn: NatsConnection, table_id: str) -> None:
        self.conn = conn
        self.table_id = table_id
        self.public: dict[int, events_pb2.Event] = {}
        self.own: dict[int, dict[int, events_pb2.Event]] = {s: {} for s in range(4)}
        self.asked = 0

    async def put(self, seat: int | None, event: events_pb2.Event, *, lost: bool = False) -> None:
        """Publish one event on the table's feed as a batch of its own: a public copy (`seat`
        None) or `seat`'s own copy; `lost`: kept, never delivered."""
        event.table_id = self.table_id
        if seat is None:
            self.public[event.sequence] = event
        else:
            self.own[seat][event.sequence] = event
        if not lost:
            await self.deliver(seat, event.sequence)

    async def deliver(self, seat: int | None, sequence: int) -> None:
        """Publish a copy put with `lost=True`, late."""
        if seat is None:
            batch = events_pb2.TableEventBatch(events=[self.public[sequence]])
        else:
            copies = events_pb2.SeatCopies(seat=seat, events=[self.own[seat][sequence]])
            batch = events_pb2.TableEventBatch(seats=[copies])
        await self.conn.client.publish(subjects.table_feed(self.table_id), batch.SerializeToString())

    def history(self, seat: int | None) -> seatstream.History:
        async def read(after: int) -> list[events_pb2.Event]:
            self.asked += 1
            mine = self.own[seat] if seat is not None else {}
            out = [mine.get(q, e) for q, e in sorted(self.public.items()) if q > after]
            return out[: seatstream.HISTORY_BATCH]

        return read

    def follow(self, seat: int | None, feeds: seatstream.LiveFeeds | None = None) -> AsyncIterator[events_pb2.Event]:
        return seatstream.follow(self.conn, self.table_id, seat, timeout_s=10, history=self.history(seat), feeds=feeds)


async def no_consumer(conn: NatsConnection) -> bool:
    """Following cost the server no JetStream consumer."""
    return (await conn.jetstream.account_info()).consumers == 0


def turn(seq: int) -> events_pb2.Event:
    return events_pb2.Event(table_id=T, sequence=seq, turn_started=events_pb2.TurnStarted(seats=[seq % 4]))


def dealt(seq: int, hand: list[int]) -> events_pb2.Event:
    cards = [common_pb2.Card(id=c) for c in hand]
    return events_pb2.Event(table_id=T, sequence=seq, deal_started=events_pb2.DealStarted(hand=cards))


def ended(seq: int) -> events_pb2.Event:
    return events_pb2.Event(table_id=T, sequence=seq, game_ended=events_pb2.GameEnded())


def hands(events: list[events_pb2.Event]) -> list[list[int]]:
    return [[c.id for c in e.deal_started.hand] for e in events if e.HasField("deal_started")]


def test_a_seats_own_copy_replaces_the_public_one_of_the_same_sequence() -> None:
    merged = seatstream.merge([turn(1), dealt(2, []), turn(3)], [dealt(2, [7, 8])])
    assert [e.sequence for e in merged] == [1, 2, 3]
    assert hands(merged) == [[7, 8]]


def test_merger_holds_a_public_deal_until_its_own_copy_comes() -> None:
    m = _Merger(seat=1)
    assert [e.sequence for e in m.feed([(turn(1), False), (dealt(2, []), False), (turn(3), False)])] == [1]
    assert m.waiting and not m.gap and [e.sequence for e, _ in m.leftover] == [2, 3]
    out = m.feed([(dealt(2, [5]), True), *m.leftover])  # the store had it: fed before the leftover
    assert [e.sequence for e in out] == [2, 3] and hands(out) == [[5]]
    assert not m.waiting


def test_merger_stops_at_a_gap_and_skips_what_it_already_gave() -> None:
    m = _Merger(seat=None)
    assert [e.sequence for e in m.feed([(turn(1), False), (turn(2), False), (turn(4), False)])] == [1, 2]
    assert m.gap and [e.sequence for e, _ in m.leftover] == [4]
    out = m.feed([(turn(1), False), (turn(2), False), (turn(3), False), (turn(4), False), *m.leftover])
    assert [e.sequence for e in out] == [3, 4] and not m.gap
    assert m.feed([(dealt(5, []), False)])[0].sequence == 5  # a spectator takes the public copy


async def test_follow_reads_what_it_missed_then_live_with_own_copies_in_any_order(nats_server: NatsServer) -> None:
    async with connected(nats_server.url, "test-seatstream") as conn:
        public, own, other = None, 2, 3
        owner = Owner(conn, T)
        put = owner.put

        async def take(stream: AsyncIterator[events_pb2.Event], n: int) -> list[events_pb2.Event]:
            return [await asyncio.wait_for(anext(stream), 30) for _ in range(n)]

        # Published before anyone follows: a deal whose public copy went out before the seat's.
        await put(public, turn(1))
        await put(public, dealt(2, []))
        await put(own, dealt(2, [10, 11]))
        await put(other, dealt(2, [20, 21]))
        seat = owner.follow(2)
        watcher = owner.follow(None)
        first = await take(seat, 2)
        assert [e.sequence for e in first] == [1, 2] and hands(first) == [[10, 11]]
        assert hands(await take(watcher, 2)) == [[]]
        # Live: the public copy of a deal ahead of the seat's own copy (the owner holds both, as
        # a table publishes an action's copies together); then the end.
        await put(public, turn(3))
        await put(own, dealt(4, [12]), lost=True)
        await put(other, dealt(4, [22]), lost=True)
        await put(public, dealt(4, []))
        await asyncio.sleep(0.3)
        await owner.deliver(own, 4)  # late: the reader has it from the owner already, once
        await owner.deliver(other, 4)
        await put(public, ended(5))
        rest = await take(seat, 3)
        assert [e.sequence for e in rest] == [3, 4, 5] and hands(rest) == [[12]]
        assert [e.sequence for e in await take(watcher, 3)] == [3, 4, 5]
        for stream in (seat, watcher):  # both end after GameEnded
            assert [e async for e in stream] == []
        assert await no_consumer(conn)


def due(seq: int, seat: int, cards: list[int] | None = None) -> events_pb2.Event:
    """A card turn with seat copies (ADR 0003 decision 15): the public copy (`cards` None, no
    legal moves, docs/rules.md §14) or the own copy of the seat due with its legal cards."""
    turn = events_pb2.TurnStarted(
        seats=[seat],
        decision=common_pb2.DECISION_CARD,
        turn_seq=seq,
        seat_copies=True,
        legal_cards=[common_pb2.Card(id=c) for c in cards or []],
    )
    return events_pb2.Event(table_id=T, sequence=seq, turn_started=turn)


def legal(events: list[events_pb2.Event]) -> list[list[int]]:
    return [[c.id for c in e.turn_started.legal_cards] for e in events if e.HasField("turn_started")]


def test_a_turn_has_an_own_copy_only_for_the_seats_due_a_deal_for_every_seat() -> None:
    for seat in range(4):
        assert seatstream.has_seat_copies(dealt(1, []), seat)
        assert seatstream.has_seat_copies(due(2, 1), seat) == (seat == 1)
        assert not seatstream.has_seat_copies(turn(3), seat)  # no seat_copies: public only


def test_merger_holds_a_public_turn_for_the_seat_due_until_its_own_copy_comes() -> None:
    m = _Merger(seat=1)
    assert [e.sequence for e in m.feed([(turn(1), False), (due(2, 1), False), (turn(3), False)])] == [1]
    assert m.waiting and [e.sequence for e, _ in m.leftover] == [2, 3]
    out = m.feed([(due(2, 1, [5, 6]), True), *m.leftover])
    assert [e.sequence for e in out] == [2, 3] and legal(out) == [[5, 6], []]  # the own copy wins


def test_other_seats_and_spectators_take_a_public_turn_without_waiting() -> None:
    for seat in (0, 2, 3, None):
        m = _Merger(seat=seat)
        out = m.feed([(turn(1), False), (due(2, 1), False), (turn(3), False)])
        assert [e.sequence for e in out] == [1, 2, 3] and not m.waiting and legal(out) == [[], [], []]


async def test_follow_gives_the_seat_due_its_own_turn_and_the_others_the_public_one(nats_server: NatsServer) -> None:
    async with connected(nats_server.url, "test-seatstream-turns") as conn:
        t = "ss2"
        public, own = None, 1
        owner = Owner(conn, t)
        put = owner.put

        await put(public, turn(1))
        seat_due, other, watcher = (owner.follow(s) for s in (1, 2, None))
        for stream in (seat_due, other, watcher):
            assert (await asyncio.wait_for(anext(stream), 30)).sequence == 1
        # The public copy arrives, the own copy was lost on the way: the seat due never takes the
        # public copy for its own, it asks the owner, which has it (published together).
        await put(own, due(2, 1, [7, 9]), lost=True)
        asked = owner.asked
        await put(public, due(2, 1))
        for stream in (other, watcher):
            got = await asyncio.wait_for(anext(stream), 30)
            assert got.sequence == 2 and legal([got]) == [[]]
        got = await asyncio.wait_for(anext(seat_due), 30)
        assert got.sequence == 2 and legal([got]) == [[7, 9]]
        assert owner.asked > asked
        await put(public, ended(3))
        for stream in (seat_due, other, watcher):
            assert [e.sequence async for e in stream] == [3]


# One live subscription per subject per hub (ADR 0009 amendment "one live subscription per
# table"): the readers of a table share it, each with its own merge, refills and queue.


def subscribed(conn: NatsConnection, subject: str) -> list[int]:
    """The client's subscriptions on `subject` (their ids)."""
    return [sid for sid, sub in conn.client._subs.items() if sub.subject == subject]


async def test_four_seats_and_a_spectator_share_one_subscription_each_gets_its_own_stream(
    nats_server: NatsServer,
) -> None:
    async with connected(nats_server.url, "test-seatstream-shared") as conn:
        t = "ss3"
        public, feed = None, subjects.table_feed(t)
        owner = Owner(conn, t)
        put = owner.put
        feeds = seatstream.LiveFeeds(conn)
        await put(public, turn(1))
        readers = {s: owner.follow(s, feeds) for s in (0, 1, 2, 3, None)}
        for stream in readers.values():
            assert (await asyncio.wait_for(anext(stream), 30)).sequence == 1
        first = subscribed(conn, feed)
        assert len(first) == 1 and feeds.subjects()[feed] == 5
        assert [sub.subject for sub in conn.client._subs.values() if t in sub.subject] == [feed]  # the table's one
        # Live: a deal (own copies first), a turn with seat 1's legal cards, a plain turn, the end.
        for s in range(4):
            await put(s, dealt(2, [10 * s, 10 * s + 1]))
        await put(public, dealt(2, []))
        await put(1, due(3, 1, [7, 9]))
        await put(public, due(3, 1))
        await put(public, turn(4))
        await put(public, ended(5))
        for s, stream in readers.items():
            got = await asyncio.wait_for(_all(stream), 30)
            assert [e.sequence for e in got] == [2, 3, 4, 5], s
            assert hands(got) == [[] if s is None else [10 * s, 10 * s + 1]], s
            assert legal(got) == [[7, 9] if s == 1 else [], []], s
        # The last reader gone, so is the subscription; a new reader gets a fresh one.
        assert subscribed(conn, feed) == [] and feeds.subjects() == {}
        again = owner.follow(2, feeds)
        assert (await asyncio.wait_for(anext(again), 30)).sequence == 1
        fresh = subscribed(conn, feed)
        assert len(fresh) == 1 and fresh != first
        rest = await asyncio.wait_for(_all(again), 30)
        assert [e.sequence for e in rest] == [2, 3, 4, 5] and hands(rest) == [[20, 21]]
        assert not [sub for sub in conn.client._subs.values() if t in sub.subject]
        assert await no_consumer(conn)


async def test_a_late_reader_gets_the_missed_events_then_the_live_ones_once(nats_server: NatsServer) -> None:
    async with connected(nats_server.url, "test-seatstream-late") as conn:
        t = "ss4"
        public, feed = None, subjects.table_feed(t)
        owner = Owner(conn, t)
        put = owner.put
        feeds = seatstream.LiveFeeds(conn)
        await put(public, turn(1))
        early = owner.follow(0, feeds)
        assert (await asyncio.wait_for(anext(early), 30)).sequence == 1
        await put(0, dealt(2, [4]))
        await put(1, dealt(2, [5]))
        await put(public, dealt(2, []))
        await put(public, turn(3))
        assert [e.sequence for e in await _take(early, 2)] == [2, 3]
        late = owner.follow(1, feeds)
        got = await _take(late, 3)  # from the owner
        assert [e.sequence for e in got] == [1, 2, 3] and hands(got) == [[5]]
        assert len(subscribed(conn, feed)) == 1 and feeds.subjects()[feed] == 2
        for seq in (4, 5, 6):
            await put(public, turn(seq))
        await put(public, ended(7))
        for stream in (early, late):  # live, each once
            assert [e.sequence for e in await asyncio.wait_for(_all(stream), 30)] == [4, 5, 6, 7]
        assert feeds.subjects() == {}


async def test_a_batch_lost_while_the_reader_reconnects_is_asked_of_the_owner_at_once(
    nats_server: NatsServer,
) -> None:
    """Issue 19: a reader whose connection dropped while the owner published lost that batch;
    with nothing later to show the gap, it noticed only at its quiet recheck (30 s) and the
    game waited. A reconnect now wakes every reader, which asks the owner at once."""
    async with connected(nats_server.url, "test-seatstream-reconnect") as conn:
        t = "ss6"
        public = None
        owner = Owner(conn, t)
        stream = owner.follow(None, seatstream.LiveFeeds(conn))
        await owner.put(public, turn(1))
        assert (await _take(stream, 1))[0].sequence == 1
        before = conn.reconnects
        await owner.put(public, turn(2), lost=True)  # published into the connection that dies
        conn.client._transport.close()  # the reader's TCP connection cut under it
        deadline = asyncio.get_running_loop().time() + 30
        while conn.reconnects == before:
            assert asyncio.get_running_loop().time() < deadline, "no reconnect"
            await asyncio.sleep(0.05)
        got = await asyncio.wait_for(anext(stream), seatstream.QUIET_RECHECK_S / 3)
        assert got.sequence == 2  # from the owner, long before the quiet recheck
        await stream.aclose()


async def test_a_stalled_reader_delays_no_one_and_resumes_from_the_owner(nats_server: NatsServer) -> None:
    async with connected(nats_server.url, "test-seatstream-stalled") as conn:
        t = "ss5"
        public = None
        owner = Owner(conn, t)
        put = owner.put
        feeds = seatstream.LiveFeeds(conn, queue_limit=4)
        await put(public, turn(1))
        slow, fast, watcher = (owner.follow(s, feeds) for s in (2, 0, None))
        for stream in (slow, fast, watcher):
            assert (await asyncio.wait_for(anext(stream), 30)).sequence == 1
        # `slow` stops consuming; the others keep up, event by event.
        for seq in range(2, 30):
            if seq == 10:
                await put(0, dealt(seq, [1]))
                await put(2, dealt(seq, [2]))
                await put(public, dealt(seq, []))
            else:
                await put(public, turn(seq))
            for stream in (fast, watcher):
                assert (await asyncio.wait_for(anext(stream), 5)).sequence == seq
        assert feeds.dropped > 0  # the slow reader's queue overflowed
        await put(public, ended(30))
        for stream in (fast, watcher):
            assert [e.sequence for e in await asyncio.wait_for(_all(stream), 30)] == [30]
        got = await asyncio.wait_for(_all(slow), 30)  # resumes: everything once, in order
        assert [e.sequence for e in got] == list(range(2, 31)) and hands(got) == [[2]]
        assert feeds.subjects() == {}


async def test_a_readers_wait_ends_on_an_event_or_its_own_timeout_whatever_timer_is_armed() -> None:
    loop = asyncio.get_running_loop()
    reader = _Reader(limit=2)
    started = loop.time()
    await reader.wait(0.05)  # nothing comes: times out
    assert 0.04 <= loop.time() - started < 2 and reader.take() == []
    waiting = asyncio.ensure_future(reader.wait(30))
    await asyncio.sleep(0.01)
    reader.put(turn(1), False)
    await asyncio.wait_for(waiting, 2)  # an event ends the wait at once
    started = loop.time()
    await reader.wait(0.05)  # items are waiting: returns at once
    assert loop.time() - started < 0.04
    assert [e.sequence for e, _ in reader.take()] == [1]
    started = loop.time()
    await reader.wait(0.05)  # a shorter deadline than the armed 30 s timer
    assert 0.04 <= loop.time() - started < 2
    reader.put(turn(2), False)
    reader.put(turn(3), False)
    assert not reader.put(turn(4), False) and reader.behind == 4  # full: dropped, the owner has it
    reader.close()


async def _take(stream: AsyncIterator[events_pb2.Event], n: int) -> list[events_pb2.Event]:
    return [await asyncio.wait_for(anext(stream), 30) for _ in range(n)]


async def _all(stream: AsyncIterator[events_pb2.Event]) -> list[events_pb2.Event]:
    return [e async for e in stream]


async def test_a_sink_takes_live_events_in_order_where_they_arrive_and_what_was_missed_is_yielded(
    nats_server: NatsServer,
) -> None:
    async with connected(nats_server.url, "test-seatstream-sink") as conn:
        t = "ss7"
        public, own = None, 2
        owner = Owner(conn, t)
        seen: list[tuple[str, int]] = []
        hand: list[list[int]] = []

        def sink(event: events_pb2.Event) -> bool:
            seen.append(("sink", event.sequence))
            hand.extend(hands([event]))
            return True

        stream = seatstream.follow(
            conn, t, 2, timeout_s=10, history=owner.history(2), feeds=seatstream.LiveFeeds(conn), sink=sink
        )

        async def consume() -> None:
            async for event in stream:
                seen.append(("yield", event.sequence))
                hand.extend(hands([event]))

        async def until(count: int) -> None:
            deadline = asyncio.get_running_loop().time() + 30
            while len(seen) < count:
                assert asyncio.get_running_loop().time() < deadline, seen
                await asyncio.sleep(0.01)

        await owner.put(public, turn(1))  # before the reader: read from the owner
        consumer = asyncio.ensure_future(consume())
        await until(1)
        await owner.put(public, turn(2))
        await owner.put(public, turn(3))
        await until(3)
        await owner.put(public, turn(4), lost=True)  # a hole: 5 waits, both come from the owner
        await owner.put(public, turn(5))
        await until(5)
        await owner.put(own, dealt(6, [9]))
        await conn.client.flush()
        await asyncio.sleep(0.2)  # the own copy is in before its public one
        asked = owner.asked
        await owner.put(public, dealt(6, []))
        await owner.put(public, ended(7))
        await asyncio.wait_for(consumer, 30)  # the GameEnded given to the sink ends the stream
        assert seen == [("yield", 1), ("sink", 2), ("sink", 3), ("yield", 4), ("yield", 5), ("sink", 6), ("sink", 7)]
        assert hand == [[9]] and owner.asked == asked


async def test_a_sinks_failure_is_raised_to_the_reader_and_its_refusal_ends_the_stream(
    nats_server: NatsServer,
) -> None:
    async with connected(nats_server.url, "test-seatstream-sink-fails") as conn:
        t = "ss8"
        public = None
        owner = Owner(conn, t)
        feeds = seatstream.LiveFeeds(conn)
        await owner.put(public, turn(1))

        def broken(event: events_pb2.Event) -> bool:
            raise ValueError("the consumer's bug")

        def refusing(event: events_pb2.Event) -> bool:
            return event.sequence < 3

        failing = seatstream.follow(conn, t, 0, timeout_s=10, history=owner.history(0), feeds=feeds, sink=broken)
        done = seatstream.follow(conn, t, 1, timeout_s=10, history=owner.history(1), feeds=feeds, sink=refusing)
        for stream in (failing, done):
            assert (await asyncio.wait_for(anext(stream), 30)).sequence == 1
        nexts = [asyncio.ensure_future(anext(stream)) for stream in (failing, done)]
        await asyncio.sleep(0.1)
        await owner.put(public, turn(2))
        await owner.put(public, turn(3))
        results = await asyncio.wait_for(asyncio.gather(*nexts, return_exceptions=True), 30)
        assert isinstance(results[0], ValueError)
        assert isinstance(results[1], StopAsyncIteration)  # took 2, refused 3: the follow ended
        await asyncio.sleep(0.1)
        assert feeds.subjects() == {}


async def test_a_follow_cancelled_and_left_leaves_no_cyclic_garbage_of_its_feed(nats_server: NatsServer) -> None:
    """A closed session's follows are freed by reference counting, not left for a full
    collection (ADR 0024: the process freezes what outlives its young collections, so cyclic
    garbage would wait for the thaw): the feed, its subscription and the subscription's
    delivery task form no cycle once the last reader has left."""
    async with connected(nats_server.url, "test-seatstream-garbage") as conn:
        owner, feeds = Owner(conn, "ss-gc"), seatstream.LiveFeeds(conn)
        public, feed = None, subjects.table_feed(owner.table_id)
        await owner.put(public, turn(1))
        gc.collect()
        gc.set_debug(gc.DEBUG_SAVEALL)  # what a collection finds unreachable is kept to look at
        try:
            for _ in range(5):
                stream = owner.follow(0, feeds)
                reader = asyncio.ensure_future(_all(stream))
                await eventually(lambda: feeds.subjects().get(feed) == 1, timeout_s=30)
                reader.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await reader
                await eventually(lambda: feeds.subjects() == {} and not subscribed(conn, feed), timeout_s=30)
                del stream, reader
            await asyncio.sleep(0.2)  # the cancelled delivery tasks run to their end
            gc.collect()
            kinds = sorted({type(o).__qualname__ for o in gc.garbage})
        finally:
            gc.set_debug(0)
            gc.garbage.clear()
        assert not {"_Feed", "Subscription", "_Reader", "_Merger"} & set(kinds), kinds
