"""`python -m trix.gateway`: start the gateway service and serve until SIGTERM/SIGINT.

Exit codes: 0 after a graceful stop, 1 if it could not start, 2 on a bad
configuration value (the message names the variable).
"""

from __future__ import annotations

import sys

from trix.gateway import grpc_api, subscribers
from trix.gateway.config import SERVICE, GatewayConfig
from trix.gateway.service import GatewayService
from trix.natsio.connection import NatsConnection
from trix.runtime.server import Runtime, run_main


def build(config: GatewayConfig) -> Runtime:
    """Wire the gateway's logic to the runtime."""
    service = GatewayService(config)

    async def start_subscribers(nats: NatsConnection) -> None:
        await subscribers.start(nats, service)

    return Runtime(config.runtime, [grpc_api.binding(service)], start_subscribers=start_subscribers)


def main() -> int:
    return run_main(SERVICE, GatewayConfig.from_env, build)


if __name__ == "__main__":
    sys.exit(main())
