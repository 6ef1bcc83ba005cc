"""The scoring's wiring: the journal adapter, the service built on it and loaded, its
consumer started.

Owns `start`, the one place the scoring service is assembled (`__main__.build` runs it in
the runtime's lifespan; the fault tests pass their own `NewScoring`).
"""

from __future__ import annotations

from collections.abc import Callable

import structlog

from trix.natsio.connection import NatsConnection
from trix.scoring.adapters import JetStreamJournal
from trix.scoring.config import ScoringConfig
from trix.scoring.entrypoints import EventConsumer
from trix.scoring.ports import Journal
from trix.scoring.service import ScoringService

log = structlog.get_logger("trix.scoring.nats")

NewScoring = Callable[[ScoringConfig, Journal], ScoringService]
"""Builds the service on its journal (`ScoringService` itself; the fault tests wrap the journal)."""


async def start(
    nats_conn: NatsConnection, config: ScoringConfig, new_service: NewScoring = ScoringService
) -> EventConsumer:
    """Build the service on the journal, load it, then start consuming table events
    (`EventConsumer.service` is the service)."""
    service = new_service(config, JetStreamJournal(nats_conn.jetstream))
    await service.load()
    log.info("journal loaded", sequence=service.state.sequence)
    consumer = EventConsumer(nats_conn, service, service.config.consumer)
    await consumer.start()
    return consumer
