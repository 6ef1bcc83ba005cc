"""The matchmaking's wiring: the NATS adapters, the service built on them (with the scoring
service's wallet and ratings when configured), the partition owner started.

Owns `start`, the one place the matchmaking service is assembled (`__main__.build` runs it
in the runtime's lifespan with `production_service`; tests pass their own `NewMatchmaking`).
"""

from __future__ import annotations

from functools import partial
from typing import Protocol

from trix.matchmaking.adapters import (
    QUEUE_STATUS_RECHECK_S,
    SEATS_BUCKET,
    TICKET_PREFIX,
    TICKETS_BUCKET,
    KeyWatchHub,
    KvSeatIndex,
    KvStore,
    MatchFormedPublisher,
    kv_get,
)
from trix.matchmaking.config import SERVICE, MatchmakingConfig
from trix.matchmaking.entrypoints import PartitionOwner
from trix.matchmaking.ports import MatchPublisher, SeatIndex, Store
from trix.matchmaking.queue_status import STATUS_PREFIX
from trix.matchmaking.service import MatchmakingService
from trix.matchmaking.wallet import ScoringRatings, ScoringWallet
from trix.natsio.connection import NatsConnection


class NewMatchmaking(Protocol):
    """Builds the service from its adapters (`MatchmakingService` with the wallet and ratings of
    the configuration; tests add a clock and a random generator)."""

    def __call__(
        self, config: MatchmakingConfig, store: Store, publisher: MatchPublisher, *, seat_index: SeatIndex
    ) -> MatchmakingService: ...


def production_service(config: MatchmakingConfig) -> NewMatchmaking:
    """The service with the wallet and ratings of the scoring service the configuration names."""
    if not config.scoring_target:
        return MatchmakingService
    ratings = ScoringRatings(
        config.scoring_target,
        default=config.default_rating,
        scale=config.rating_scale,
        timeout_s=config.rating_timeout_s,
        ca_file=config.runtime.tls_ca_file,
    )
    wallet = ScoringWallet(config.scoring_target, config.keys.signer(SERVICE, 60), ca_file=config.runtime.tls_ca_file)
    return partial(MatchmakingService, wallet=wallet, ratings=ratings)


async def start(nats: NatsConnection, config: MatchmakingConfig, new_service: NewMatchmaking) -> PartitionOwner:
    """Build the service on its NATS adapters and start leasing partitions (`PartitionOwner.service`
    is the service)."""
    js = nats.jetstream
    tickets = await js.key_value(TICKETS_BUCKET)
    hub = KeyWatchHub(
        nats,
        TICKETS_BUCKET,
        (TICKET_PREFIX, STATUS_PREFIX),
        partial(kv_get, tickets),
        recheck_s={STATUS_PREFIX: QUEUE_STATUS_RECHECK_S},
    )
    await hub.start()
    store = KvStore(tickets, js, hub=hub)
    seats = KvSeatIndex(await js.key_value(SEATS_BUCKET))
    service = new_service(config, store, MatchFormedPublisher(nats), seat_index=seats)
    owner = PartitionOwner(nats, service, config.runtime.instance, hub)
    await owner.start()
    return owner
