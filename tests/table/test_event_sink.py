"""The table's event publishing (issue 16, ADR 0012) on a real nats-server: an action's copies
go out as one core NATS batch on the table's feed (every public copy once, each seat's own
copies under its seat) and then the same public copies alone on the public subject, which
carries no own copy (docs/rules.md §14, ADR 0003 decisions 14 and 15); the results scoring
settles from are stored on TABLE_RESULTS once each, also when an action's results are
published again (recovery); a player's action names itself on its feed batch (its cause)."""

from __future__ import annotations

import asyncio
import contextlib
import random

import nats
from nats.js.api import DeliverPolicy

from conftest import InProcessTable
from support.nats import AuthNats
from support.table import Acked, GatewayClient, create_request, play_until, token
from trix.natsio import names, subjects
from trix.natsio.permissions import inbox_prefix
from trix.table.adapters import NatsSink
from trix.table.table import ALL, PUBLIC_ONLY, Routed
from trix.v1 import common_pb2, events_pb2, table_pb2


def action_events(table_id: str, first: int, count: int, due: int) -> list[Routed]:
    """An action's events: a DealStarted at `first` (a copy per seat with its hand, a public one
    without), a TurnStarted with seat copies for seat `due` (its own copy with its legal cards,
    a public one without, ADR 0003 decision 15), then public TurnStarted up to `count`, and a
    DealScored (a result) last."""
    out: list[Routed] = []
    for seq in range(first, first + count):
        if seq == first:
            for seat in (0, 1, 2, 3, PUBLIC_ONLY):
                hand = [] if seat == PUBLIC_ONLY else [common_pb2.Card(id=seat)]
                started = events_pb2.DealStarted(deal_index=0, hand=hand)
                out.append(Routed(events_pb2.Event(table_id=table_id, sequence=seq, deal_started=started), seat))
            continue
        if seq == first + 1:
            for seat in (due, PUBLIC_ONLY):
                cards = [] if seat == PUBLIC_ONLY else [common_pb2.Card(id=40 + seat)]
                turn = events_pb2.TurnStarted(seats=[due], turn_seq=seq, seat_copies=True, legal_cards=cards)
                out.append(Routed(events_pb2.Event(table_id=table_id, sequence=seq, turn_started=turn), seat))
            continue
        if seq == first + count - 1:
            scored = events_pb2.DealScored(deal_index=0)
            out.append(Routed(events_pb2.Event(table_id=table_id, sequence=seq, deal_scored=scored), ALL))
            continue
        turn = events_pb2.TurnStarted(seats=[seq % 4], turn_seq=seq)
        out.append(Routed(events_pb2.Event(table_id=table_id, sequence=seq, turn_started=turn), ALL))
    return out


async def test_an_action_is_one_feed_batch_with_each_seats_own_copies_then_its_public_batch_and_its_results_stored_once(
    table_service: InProcessTable, table_nc: nats.aio.client.Client, gateway: GatewayClient, auth_nats: AuthNats
) -> None:
    service = table_service.service
    assert service is not None
    sink = service.sink
    assert isinstance(sink, NatsSink)
    t = "sink"
    arrived: list[tuple[str, events_pb2.TableEventBatch]] = []
    all_in = asyncio.Event()
    feed, public = subjects.table_feed(t), subjects.public_events(t)

    probed = {feed: asyncio.Event(), public: asyncio.Event()}

    async def on_msg(msg: nats.aio.msg.Msg) -> None:
        if not msg.data:  # a probe
            probed[msg.subject].set()
            return
        arrived.append((msg.subject, events_pb2.TableEventBatch.FromString(msg.data)))
        if len(arrived) == 4:
            all_in.set()

    # What the gateway's user receives (its permissions: the tables' feeds), and the timers'
    # (the public subject)...
    timers = await nats.connect(auth_nats.url("timers"), inbox_prefix=inbox_prefix("timers").encode())
    try:
        subs = [await gateway.nc.subscribe(feed, cb=on_msg), await timers.subscribe(public, cb=on_msg)]
        await gateway.nc.flush()
        await timers.flush()
        # The subscriptions reach the table's messages (seen late once, on a box loaded far past
        # its two cores: a whole first action went missing although the SUBs had been flushed).
        for subject, seen in probed.items():
            for _ in range(100):
                await sink.nats.client.publish(subject, b"")
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(seen.wait(), 0.2)
                    break
            assert seen.is_set(), subject
        # ...and the order the table sends in, on its one connection (NATS keeps it per connection).
        sent: list[str] = []
        publish = sink.nats.client.publish

        async def recording(subject: str, payload: bytes = b"", **kw: object) -> None:
            sent.append(subject)
            await publish(subject, payload, **kw)  # type: ignore[arg-type]

        sink.nats.client.publish = recording  # type: ignore[method-assign]
        first = action_events(t, 1, 4, due=0)
        second = action_events(t, 5, 6, due=3)
        try:
            await sink.publish(t, first)
            await sink.publish(t, second)
        finally:
            sink.nats.client.publish = publish  # type: ignore[method-assign]
        await sink.publish_results(t, first + second)  # a recovering owner publishes them again
        await asyncio.wait_for(all_in.wait(), 20)
        for sub in subs:
            await sub.unsubscribe()
    finally:
        await timers.close()

    # Per action: one feed batch, then one public batch.
    assert [s for s in sent if s.startswith("trix.table.evt.")] == [feed, public] * 2
    assert sorted(s for s, _ in arrived) == sorted([feed, public] * 2)
    publics = [b for s, b in arrived if s == public]
    feeds = [b for s, b in arrived if s == feed]
    assert [[e.sequence for e in b.events] for b in publics] == [[1, 2, 3, 4], [5, 6, 7, 8, 9, 10]]
    assert [list(b.events) for b in feeds] == [list(b.events) for b in publics]  # the same public copies
    assert not any(b.seats for b in publics)  # docs/rules.md §14: no own copy on the public subject
    everything = [e for b in publics for e in b.events]
    assert [[c.id for c in e.deal_started.hand] for e in everything if e.HasField("deal_started")] == [[], []]
    assert not any(e.turn_started.legal_cards for e in everything)  # docs/rules.md §14
    for batch in feeds:
        assert [c.seat for c in batch.seats] == [0, 1, 2, 3]  # each seat's copies once, in seat order
    for seat in (0, 1, 2, 3):
        own = [e for b in feeds for c in b.seats if c.seat == seat for e in c.events]
        turns = {0: [2], 3: [6]}.get(seat, [])
        assert [e.sequence for e in own] == sorted([1, 5, *turns])  # only the seat's own copies
        assert [[c.id for c in e.deal_started.hand] for e in own if e.HasField("deal_started")] == [[seat]] * 2
        assert [[c.id for c in e.turn_started.legal_cards] for e in own if e.HasField("turn_started")] == [
            [40 + seat]
        ] * len(turns)

    js = table_nc.jetstream()
    results = await js.subscribe(
        subjects.table_results(t),
        stream=names.TABLE_RESULTS_STREAM,
        ordered_consumer=True,
        deliver_policy=DeliverPolicy.ALL,
    )
    stored: list[int] = []
    try:
        while True:
            try:
                msg = await results.next_msg(timeout=1.0)
            except nats.errors.TimeoutError:
                break
            stored.append(events_pb2.Event.FromString(msg.data).sequence)
    finally:
        await results.unsubscribe()
    assert stored == [4, 10]  # the DealScored of each action, once, though published twice


async def test_a_players_action_names_itself_on_its_feed_batch_and_nothing_else_does(
    table_service: InProcessTable, gateway: GatewayClient
) -> None:
    """Issue 16: the feed batch of a seat action carries its cause (the seat and the action id)
    and ends at the sequence the table's reply gives, so the gateway can send the actor's
    acceptance with the events without waiting for the reply; the table's own entries (its
    creation) name no cause."""
    t = "cause"
    batches: list[tuple[str, events_pb2.TableEventBatch]] = []

    async def on_msg(msg: nats.aio.msg.Msg) -> None:
        batches.append((msg.subject, events_pb2.TableEventBatch.FromString(msg.data)))

    subs = [await gateway.nc.subscribe(subjects.table_feed(t), cb=on_msg)]
    await gateway.nc.flush()
    players = ("ann", "ben", "cat", "dan")
    create = create_request(t, common_pb2.VARIANT_TRIX, players)
    await gateway.request(t, table_pb2.TableCommand(create_table=create), token("service", "table"))
    acked: list[Acked] = []
    await play_until(gateway, t, players, random.Random(16), max_actions=30, acked=acked)
    deadline = asyncio.get_running_loop().time() + 20
    while len(batches) < len(acked) + 1:
        assert asyncio.get_running_loop().time() < deadline, "the feed batches did not all come"
        await asyncio.sleep(0.05)
    for sub in subs:
        await sub.unsubscribe()
    caused = [b for _, b in batches if b.HasField("cause")]
    assert not batches[0][1].HasField("cause")  # the creation: the platform's own entry
    assert len(caused) == len(acked) == 30
    for batch, ack in zip(caused, acked, strict=True):
        which = ack.command.WhichOneof("command") or ""
        seat = getattr(ack.command, which).header.seat
        assert (batch.cause.seat, batch.cause.action_id) == (seat, ack.action_id)
        assert batch.events[-1].sequence == ack.sequence  # what the reply's acceptance says
