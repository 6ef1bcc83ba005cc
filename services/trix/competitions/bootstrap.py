"""The competitions service's wiring: its NATS adapters, the service on them rebuilt from its
stored events (its ledger at scoring when TRIX_SCORING_TARGET is set), its ticker, and its
share of the competition shards' leases (the table's lease machinery, `trix.natsio.leases`,
docs/adr/0026). `__main__.build` runs `start` in the runtime's lifespan; tests pass their own
`NewCompetitions` (a clock, fixed seeds)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

import structlog

from trix.competitions.adapters import FolderDigests, MatchTables, NatsNotices, ScoringLedger, StreamEventLog
from trix.competitions.config import SERVICE, CompetitionsConfig
from trix.competitions.entrypoints import Ticker
from trix.competitions.ownership import CompetitionShards
from trix.competitions.ports import Digests, EventLog, Tables
from trix.competitions.service import CompetitionsService
from trix.natsio import names
from trix.natsio.connection import NatsConnection
from trix.natsio.lease_kv import KvLeaseStore, LeaseWatchers
from trix.natsio.lease_ports import replica_id
from trix.natsio.leases import LeaseManager
from trix.natsio.provisioning import COMPETITION_LEASE_TTL_S
from trix.natsio.publish import JetStreams
from trix.natsio.subjects import COMPETITION_SHARDS

log = structlog.get_logger("trix.competitions")

NewCompetitions = Callable[[CompetitionsConfig, EventLog, Tables, Digests], CompetitionsService]

HEARTBEAT_ATTEMPT_S = 1.0
"""A heartbeat waits this long for its ack before it is sent again (the table's pattern)."""
HANDOVER_S = 5.0
"""How long a stopping replica hands its shards over before it just leaves them to expire."""


class CompetitionsReplica:
    """What `start` leaves running: the ticker, the shard leases and their watchers."""

    def __init__(self, ticker: Ticker, manager: LeaseManager, watchers: LeaseWatchers) -> None:
        self.ticker = ticker
        self.service = ticker.service
        self.manager = manager
        self.watchers = watchers

    async def stop(self) -> None:
        """The ticker stopped, every shard handed over (the others take them at once), then stop."""
        await self.ticker.stop()
        try:
            await asyncio.wait_for(self.manager.handover(HANDOVER_S), HANDOVER_S + 2)
        except Exception as exc:  # noqa: BLE001 - shutting down anyway; the leases expire
            log.warning("handover incomplete", error=repr(exc))
        await self.manager.stop()
        await self.watchers.stop()


async def start(nats: NatsConnection, config: CompetitionsConfig, new_service: NewCompetitions) -> CompetitionsReplica:
    service = new_service(config, StreamEventLog(nats), MatchTables(nats), FolderDigests(config.digest_dir))
    if config.scoring_target:  # its own tokens, its own key (docs/adr/0030)
        signer = config.keys.signer(SERVICE, 60)
        service.payments.ledger = ScoringLedger(config.scoring_target, signer, ca_file=config.runtime.tls_ca_file)
    service.notices = NatsNotices(nats)
    await service.recover()
    buckets = JetStreams(nats)
    leases_kv = await nats.jetstream.key_value(names.COMPETITION_LEASES_BUCKET)
    replicas_kv = await buckets.key_value(names.COMPETITION_REPLICAS_BUCKET)
    heartbeats = await buckets.key_value(names.COMPETITION_REPLICAS_BUCKET, HEARTBEAT_ATTEMPT_S)
    shards = CompetitionShards(service)
    ttl = COMPETITION_LEASE_TTL_S
    manager = LeaseManager(
        replica_id(config.runtime.instance, "competitions"),
        KvLeaseStore(leases_kv, replicas_kv, heartbeats),
        shards,
        shards=COMPETITION_SHARDS,
        ttl_s=ttl,
        renew_s=ttl / 4,
        valid_s=ttl * 0.8,
    )
    shards.manager = manager
    service.owns = shards.owns
    watchers = LeaseWatchers(replicas_kv, leases_kv, manager)
    ticker = Ticker(service)
    await ticker.start()
    await watchers.start()
    await manager.start(settle_s=2 * ttl)
    log.info("competitions replica started", replica=manager.me, shards=sorted(shards.served))
    return CompetitionsReplica(ticker, manager, watchers)
