"""`python -m trix.scoring`: start the scoring service and serve until SIGTERM/SIGINT.

Exit codes: 0 after a graceful stop, 1 if it could not start, 2 on a bad
configuration value (the message names the variable).
"""

from __future__ import annotations

import sys

from trix.natsio.connection import NatsConnection
from trix.runtime.server import Runtime, run_main
from trix.scoring import grpc_api, subscribers
from trix.scoring.config import SERVICE, ScoringConfig
from trix.scoring.service import ScoringService


def build(config: ScoringConfig) -> Runtime:
    """Wire the scoring's logic to the runtime."""
    service = ScoringService(config)

    async def start_subscribers(nats: NatsConnection) -> None:
        await subscribers.start(nats, service)  # the consumer runs until NATS drains

    return Runtime(config.runtime, [grpc_api.binding(service)], start_subscribers=start_subscribers)


def main() -> int:
    return run_main(SERVICE, ScoringConfig.from_env, build)


if __name__ == "__main__":
    sys.exit(main())
