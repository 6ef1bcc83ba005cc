"""`python -m trix.matchmaking`: start the matchmaking service and serve until SIGTERM/SIGINT.

Exit codes: 0 after a graceful stop, 1 if it could not start, 2 on a bad
configuration value (the message names the variable).
"""

from __future__ import annotations

import sys

import structlog

from trix.matchmaking import bootstrap, grpc_api
from trix.matchmaking.config import SERVICE, MatchmakingConfig
from trix.natsio.connection import NatsConnection
from trix.runtime.server import Runtime, Serving, lifespan, run_main

log = structlog.get_logger("trix.matchmaking")


def build(config: MatchmakingConfig, new_service: bootstrap.NewMatchmaking | None = None) -> Runtime:
    """The matchmaking's runtime: its lifespan builds the NATS adapters, the service on them
    (`new_service`: tests inject a clock and a random generator) and the partition owner."""
    make = new_service or bootstrap.production_service(config)

    async def start(nats: NatsConnection) -> Serving:
        # Stopping the owner gives its partition leases back before NATS drains.
        owner = await bootstrap.start(nats, config, make)
        return Serving([grpc_api.binding(owner.service)], owner.service, owner)

    return Runtime(config.runtime, lifespan=lifespan(start))


def main() -> int:
    return run_main(SERVICE, MatchmakingConfig.from_env, build)


if __name__ == "__main__":
    sys.exit(main())
