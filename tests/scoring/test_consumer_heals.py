"""Issue 42, finding 6: scoring's durable consumer deleted under it (an operator, a restored
stream) is created again by scoring itself, resuming after the last event it applied: the
events published after the deletion are applied without a restart. Real nats-server, scoring
in-process with its real consumer."""

from __future__ import annotations

from scoring_support import PLAYERS, EventPublisher, InProcessScoring, consuming, until_applied

from trix.natsio import names


async def test_scoring_creates_its_deleted_consumer_again_and_goes_on_without_a_restart(
    scoring: InProcessScoring, publisher: EventPublisher
) -> None:
    consumer = await consuming(scoring, publisher, "heal-before")
    assert consumer.pull is not None
    await publisher.js.delete_consumer(names.TABLE_RESULTS_STREAM, consumer.durable)
    await publisher.table_created("heal-after", PLAYERS)
    await until_applied(scoring, "heal-after")
    assert consumer.pull.recreated == 1
    applied = scoring.service.events_applied
    await publisher.table_created("heal-later", PLAYERS)
    await until_applied(scoring, "heal-later")
    assert scoring.service.events_applied == applied + 1  # resumed after the last applied: nothing twice
    info = await publisher.js.consumer_info(names.TABLE_RESULTS_STREAM, consumer.durable)
    assert info.config.durable_name == consumer.durable
