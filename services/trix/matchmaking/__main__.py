"""`python -m trix.matchmaking`: start the matchmaking service and serve until SIGTERM/SIGINT.

Exit codes: 0 after a graceful stop, 1 if it could not start, 2 on a bad
configuration value (the message names the variable).
"""

from __future__ import annotations

import sys

import structlog

from trix.matchmaking import grpc_api, subscribers
from trix.matchmaking.config import SERVICE, MatchmakingConfig
from trix.matchmaking.service import MatchmakingService
from trix.matchmaking.wallet import ScoringRatings, ScoringWallet
from trix.natsio.connection import NatsConnection
from trix.runtime.server import Runtime, lifespan, run_main

log = structlog.get_logger("trix.matchmaking")


def build(config: MatchmakingConfig, service: MatchmakingService | None = None) -> Runtime:
    """Wire the matchmaking's logic to the runtime (tests pass a service with injected clock/RNG)."""
    if service is None:
        wallet = ScoringWallet(config.scoring_target, config.keys.service) if config.scoring_target else None
        ratings = (
            ScoringRatings(
                config.scoring_target,
                default=config.default_rating,
                scale=config.rating_scale,
                timeout_s=config.rating_timeout_s,
            )
            if config.scoring_target
            else None
        )
        service = MatchmakingService(config, wallet=wallet, ratings=ratings)
    matchmaking = service

    async def start(nats: NatsConnection) -> subscribers.PartitionOwner:
        # Stopping the owner gives its partition leases back before NATS drains.
        return await subscribers.start(nats, matchmaking, config.runtime.instance)

    return Runtime(config.runtime, [grpc_api.binding(matchmaking)], lifespan=lifespan(start))


def main() -> int:
    return run_main(SERVICE, MatchmakingConfig.from_env, build)


if __name__ == "__main__":
    sys.exit(main())
