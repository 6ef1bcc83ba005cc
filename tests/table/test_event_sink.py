"""The table's event publishing (ADR 0003 decisions 5 and 13) on a real nats-server: an action's
copies, sent pipelined, land in order, each exactly once, also when the same action's events
are published again (a retry after lost acks, or recovery) by either path; every sequence is on
the public subject once, and a seat's subject holds only its own copies (docs/rules.md §14, ADR 0003
decisions 14 and 15)."""

from __future__ import annotations

import nats

from conftest import InProcessTable
from support.table import read_subject
from trix.natsio import subjects
from trix.table.subscribers import JetStreamSink
from trix.table.table import ALL, PUBLIC_ONLY, Routed
from trix.v1 import common_pb2, events_pb2


def action_events(table_id: str, first: int, count: int, due: int) -> list[Routed]:
    """An action's events: a DealStarted at `first` (a copy per seat with its hand, a public one
    without), a TurnStarted with seat copies for seat `due` (its own copy with its legal cards,
    a public one without, ADR 0003 decision 15), then public TurnStarted up to `count`."""
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
        turn = events_pb2.TurnStarted(seats=[seq % 4], turn_seq=seq)
        out.append(Routed(events_pb2.Event(table_id=table_id, sequence=seq, turn_started=turn), ALL))
    return out


async def test_event_copies_stored_once_each_in_order_on_every_subject_also_when_republished(
    table_service: InProcessTable, table_nc: nats.aio.client.Client
) -> None:
    service = table_service.service
    assert service is not None
    sink = service.sink
    assert isinstance(sink, JetStreamSink) and sink.pipelined
    t = "sink"
    first = action_events(t, 1, 4, due=0)
    second = action_events(t, 5, 6, due=3)
    await sink.publish(t, first)
    await sink.publish(t, first + second)  # the first action again (lost acks): stored once
    sink.pipelined = False
    await sink.publish(t, second)  # the previous, one-by-one path: still once
    sink.pipelined = True
    assert await sink.stored_through(t) == 10
    js = table_nc.jetstream()
    public = await read_subject(js, subjects.public_events(t))
    assert [e.sequence for e in public] == list(range(1, 11))  # every sequence, once, in order
    assert [[c.id for c in e.deal_started.hand] for e in public if e.HasField("deal_started")] == [[], []]
    assert not any(e.turn_started.legal_cards for e in public)  # docs/rules.md §14
    for seat in (0, 1, 2, 3):
        subject = subjects.seat_events(t, seat)
        own = await read_subject(js, subject)
        # Only the seat's own copies, each once: public events are not copied to seat subjects.
        turns = {0: [2], 3: [6]}.get(seat, [])
        assert [e.sequence for e in own] == sorted([1, 5, *turns]), subject
        assert [[c.id for c in e.deal_started.hand] for e in own if e.HasField("deal_started")] == [[seat]] * 2
        assert [[c.id for c in e.turn_started.legal_cards] for e in own if e.HasField("turn_started")] == [
            [40 + seat]
        ] * len(turns), subject
