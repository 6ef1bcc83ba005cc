"""`python -m trix.gateway`: start the gateway service and serve until SIGTERM/SIGINT.

Exit codes: 0 after a graceful stop, 1 if it could not start, 2 on a bad
configuration value (the message names the variable).
"""

from __future__ import annotations

import sys

from trix.gateway import grpc_api, subscribers
from trix.gateway.config import SERVICE, GatewayConfig
from trix.gateway.service import GatewayService
from trix.gateway.upstream import GrpcMatchmaking, GrpcScoring
from trix.natsio.connection import NatsConnection
from trix.natsio.permissions import GATEWAY_ACCOUNTS_BUCKET, GATEWAY_INBOX_PREFIX
from trix.natsio.provisioning import KV_BUCKETS
from trix.runtime.server import Runtime, lifespan, run_main


def build(config: GatewayConfig, service: GatewayService | None = None) -> Runtime:
    """Wire the gateway's logic to the runtime (tests may pass their own service)."""
    service = service or GatewayService(config)
    if config.matchmaking_target:
        service.matchmaking = GrpcMatchmaking(config.matchmaking_target, config.player_key, config.call_timeout_s)
    if config.scoring_target:
        service.scoring = GrpcScoring(config.scoring_target, config.call_timeout_s, config.player_key)

    gateway = service

    async def start(nats: NatsConnection) -> None:
        await subscribers.start(nats, gateway)  # ports only: nothing of its own to stop

    # Least privilege (docs/rules.md §14): the gateway's NATS user provisions only its own bucket,
    # and receives replies only under its own inbox prefix.
    declared = ((), [b for b in KV_BUCKETS if b.bucket == GATEWAY_ACCOUNTS_BUCKET])
    limit = config.max_message_bytes
    return Runtime(
        config.runtime,
        [grpc_api.binding(service)],
        lifespan=lifespan(start),
        nats_declared=declared,
        nats_inbox_prefix=GATEWAY_INBOX_PREFIX,
        grpc_options=[("grpc.max_receive_message_length", limit), ("grpc.max_send_message_length", 4 * 1024 * 1024)],
    )


def main() -> int:
    return run_main(SERVICE, GatewayConfig.from_env, build)


if __name__ == "__main__":
    sys.exit(main())
