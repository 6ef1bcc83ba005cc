"""The competitions service's wiring: its NATS adapters, the service on them rebuilt from its
stored events (its ledger at scoring when TRIX_SCORING_TARGET is set), and its ticker started.
`__main__.build` runs `start` in the runtime's lifespan; tests pass their own `NewCompetitions`
(a clock, fixed seeds)."""

from __future__ import annotations

from collections.abc import Callable

from trix.competitions.adapters import FolderDigests, MatchTables, ScoringLedger, StreamEventLog
from trix.competitions.config import SERVICE, CompetitionsConfig
from trix.competitions.entrypoints import Ticker
from trix.competitions.ports import Digests, EventLog, Tables
from trix.competitions.service import CompetitionsService
from trix.natsio.connection import NatsConnection

NewCompetitions = Callable[[CompetitionsConfig, EventLog, Tables, Digests], CompetitionsService]


async def start(nats: NatsConnection, config: CompetitionsConfig, new_service: NewCompetitions) -> Ticker:
    service = new_service(config, StreamEventLog(nats), MatchTables(nats), FolderDigests(config.digest_dir))
    if config.scoring_target:  # its own tokens, its own key (docs/adr/0030)
        signer = config.keys.signer(SERVICE, 60)
        service.payments.ledger = ScoringLedger(config.scoring_target, signer, ca_file=config.runtime.tls_ca_file)
    await service.recover()
    ticker = Ticker(service)
    await ticker.start()
    return ticker
