"""Issue 42, finding 7's settlement: a result delivered by NATS but lost on its way to scoring
(a node killed, a reconnect, a consumer leader change with a fetch's messages on the wire)
must still be applied. Scoring acks only each batch's last message (AckPolicy.ALL): acking a
later batch would ack the lost one too, and it would never come again (a game never settled,
its standings missing). Real nats-server, scoring in-process with its real consumer; the lost
delivery is a fetch on scoring's own durable by a connection that drops what it got."""

from __future__ import annotations

import asyncio

from scoring_support import PLAYERS, EventPublisher, InProcessScoring, consuming, until_applied

from trix.natsio import names, subjects


async def test_scoring_applies_a_result_whose_delivery_was_lost_before_a_later_batch_acks(
    scoring: InProcessScoring, publisher: EventPublisher
) -> None:
    consumer = await consuming(scoring, publisher, "lost-before")
    assert consumer.pull is not None
    hold = asyncio.Event()
    consumer.pull.gate = hold  # cleared: scoring's loop waits before its next fetch
    await asyncio.sleep(1.5)  # the fetch in flight (1 s) ends empty
    await publisher.table_created("lost-in-transit", PLAYERS)
    ghost = await publisher.js.pull_subscribe(
        subjects.all_table_results(), durable=consumer.durable, stream=names.TABLE_RESULTS_STREAM
    )
    delivered = await ghost.fetch(1, timeout=10)
    assert [m.subject for m in delivered] == [subjects.table_results("lost-in-transit")]
    await ghost.unsubscribe()  # delivered, never acked: lost on the wire
    await publisher.table_created("lost-after", PLAYERS)
    hold.set()
    await until_applied(scoring, "lost-after")
    await until_applied(scoring, "lost-in-transit", timeout_s=10.0)  # well before the 30 s ack wait
    assert consumer.pull.rewound == 1
    applied = scoring.service.events_applied
    await publisher.table_created("lost-later", PLAYERS)
    await until_applied(scoring, "lost-later")
    assert scoring.service.events_applied == applied + 1  # each result applied once
