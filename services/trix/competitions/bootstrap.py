"""The competitions service's wiring: its NATS adapters, the service on them rebuilt from its
stored events, and its ticker started. `__main__.build` runs `start` in the runtime's lifespan;
tests pass their own `NewCompetitions` (a clock, fixed seeds)."""

from __future__ import annotations

from collections.abc import Callable

from trix.competitions.adapters import FolderDigests, MatchTables, StreamEventLog
from trix.competitions.config import CompetitionsConfig
from trix.competitions.entrypoints import Ticker
from trix.competitions.ports import Digests, EventLog, Tables
from trix.competitions.service import CompetitionsService
from trix.natsio.connection import NatsConnection

NewCompetitions = Callable[[CompetitionsConfig, EventLog, Tables, Digests], CompetitionsService]


async def start(nats: NatsConnection, config: CompetitionsConfig, new_service: NewCompetitions) -> Ticker:
    service = new_service(config, StreamEventLog(nats), MatchTables(nats), FolderDigests(config.digest_dir))
    await service.recover()
    ticker = Ticker(service)
    await ticker.start()
    return ticker
