"""`python -m trix.matchmaking`: start the matchmaking service and serve until SIGTERM/SIGINT.

Exit codes: 0 after a graceful stop, 1 if it could not start, 2 on a bad
configuration value (the message names the variable).
"""

from __future__ import annotations

import sys
from functools import partial

import structlog

from trix.matchmaking import grpc_api, subscribers
from trix.matchmaking.config import SERVICE, MatchmakingConfig
from trix.matchmaking.service import MatchmakingService
from trix.matchmaking.wallet import ScoringRatings, ScoringWallet
from trix.natsio.connection import NatsConnection
from trix.runtime.server import Runtime, Serving, lifespan, run_main

log = structlog.get_logger("trix.matchmaking")


def production_service(config: MatchmakingConfig) -> subscribers.NewMatchmaking:
    """The service with the wallet and ratings of the scoring service the configuration names."""
    if not config.scoring_target:
        return MatchmakingService
    ratings = ScoringRatings(
        config.scoring_target,
        default=config.default_rating,
        scale=config.rating_scale,
        timeout_s=config.rating_timeout_s,
    )
    wallet = ScoringWallet(config.scoring_target, config.keys.service)
    return partial(MatchmakingService, wallet=wallet, ratings=ratings)


def build(config: MatchmakingConfig, new_service: subscribers.NewMatchmaking | None = None) -> Runtime:
    """The matchmaking's runtime: its lifespan builds the NATS adapters, the service on them
    (`new_service`: tests inject a clock and a random generator) and the partition owner."""
    make = new_service or production_service(config)

    async def start(nats: NatsConnection) -> Serving:
        # Stopping the owner gives its partition leases back before NATS drains.
        owner = await subscribers.start(nats, config, make)
        return Serving([grpc_api.binding(owner.service)], owner.service, owner)

    return Runtime(config.runtime, lifespan=lifespan(start))


def main() -> int:
    return run_main(SERVICE, MatchmakingConfig.from_env, build)


if __name__ == "__main__":
    sys.exit(main())
