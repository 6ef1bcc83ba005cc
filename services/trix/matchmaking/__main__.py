"""`python -m trix.matchmaking`: start the matchmaking service and serve until SIGTERM/SIGINT.

Exit codes: 0 after a graceful stop, 1 if it could not start, 2 on a bad
configuration value (the message names the variable).
"""

from __future__ import annotations

import sys

from trix.matchmaking import grpc_api, subscribers
from trix.matchmaking.config import SERVICE, MatchmakingConfig
from trix.matchmaking.service import MatchmakingService
from trix.natsio.connection import NatsConnection
from trix.runtime.server import Runtime, run_main


def build(config: MatchmakingConfig) -> Runtime:
    """Wire the matchmaking's logic to the runtime."""
    service = MatchmakingService(config)

    async def start_subscribers(nats: NatsConnection) -> None:
        await subscribers.start(nats, service)

    return Runtime(config.runtime, [grpc_api.binding(service)], start_subscribers=start_subscribers)


def main() -> int:
    return run_main(SERVICE, MatchmakingConfig.from_env, build)


if __name__ == "__main__":
    sys.exit(main())
