"""`python -m trix.gateway`: start the gateway service and serve until SIGTERM/SIGINT.

Exit codes: 0 after a graceful stop, 1 if it could not start, 2 on a bad
configuration value (the message names the variable).
"""

from __future__ import annotations

import os
import sys
from functools import partial

from trix.gateway.config import GRPC_CORE_EXPERIMENTS, GRPC_EXPERIMENTS_ENV, SERVICE, GatewayConfig

# Before grpc is imported: its core reads GRPC_EXPERIMENTS once, as it loads (ADR 0022).
os.environ.setdefault(GRPC_EXPERIMENTS_ENV, GRPC_CORE_EXPERIMENTS)

from trix.gateway import bootstrap, grpc_api
from trix.gateway.competitions_api import CompetitionsGateway, GrpcCompetitions, NoticeSubscription
from trix.gateway.presence_beat import PresenceBeat
from trix.gateway.service import GatewayService
from trix.gateway.upstream import GrpcMatchmaking, GrpcScoring
from trix.natsio.connection import NatsConnection
from trix.natsio.names import GATEWAY_ACCOUNTS_BUCKET
from trix.natsio.permissions import GATEWAY_INBOX_PREFIX
from trix.natsio.provisioning import KV_BUCKETS
from trix.runtime.server import Runtime, Serving, lifespan, run_main


def production_service(config: GatewayConfig) -> bootstrap.NewGateway:
    """The service with the gRPC ports to the matchmaking and scoring the configuration names."""
    ca = config.runtime.tls_ca_file
    matchmaking = (
        GrpcMatchmaking(config.matchmaking_target, config.player_key, config.call_timeout_s, ca_file=ca)
        if config.matchmaking_target
        else None
    )
    scoring = (
        GrpcScoring(config.scoring_target, config.call_timeout_s, config.player_key, ca_file=ca)
        if config.scoring_target
        else None
    )
    return partial(GatewayService, matchmaking=matchmaking, scoring=scoring)


def competitions_gateway(config: GatewayConfig, service: GatewayService) -> CompetitionsGateway:
    """The competitions RPCs' side, on the competitions service the configuration names."""
    port = (
        GrpcCompetitions(
            config.competitions_target, config.player_key, config.call_timeout_s, ca_file=config.runtime.tls_ca_file
        )
        if config.competitions_target
        else None
    )

    async def table_ready(table_id: str, player_id: str) -> object:
        return await service.seat_map(table_id, player_id, refresh=True)

    return CompetitionsGateway(port, service.live.get, table_ready)


def build(config: GatewayConfig, new_service: bootstrap.NewGateway | None = None) -> Runtime:
    """The gateway's runtime: its lifespan builds the NATS ports and the service on them."""
    make = new_service or production_service(config)

    async def start(nats: NatsConnection) -> Serving:
        service = bootstrap.start(nats, config, make)
        # A subscription of its own: the competitions' notices to their entrants (ADR 0029).
        competitions = competitions_gateway(config, service)
        notices = await NoticeSubscription(nats, competitions).start()
        running = PresenceBeat(nats, service, config.presence_beat_s, then=notices)  # a dead replica's players expire
        return Serving([grpc_api.binding(service, competitions)], service, running)

    # Least privilege (docs/rules.md §14): the gateway's NATS user provisions only its own bucket,
    # and receives replies only under its own inbox prefix.
    declared = ((), [b for b in KV_BUCKETS if b.bucket == GATEWAY_ACCOUNTS_BUCKET])
    limit = config.max_message_bytes
    return Runtime(
        config.runtime,
        lifespan=lifespan(start),
        nats_declared=declared,
        nats_inbox_prefix=GATEWAY_INBOX_PREFIX,
        # No bandwidth-delay probing: it grows the receive windows of a stream with PINGs (and their
        # ACKs, reads and writes on every connection) for uploads far larger than a player's
        # requests (TRIX_GATEWAY_MAX_MESSAGE_BYTES). Measured off (two gateways in one
        # run, 400 tables): 0.88 against 0.98 CPU ms per action.
        grpc_options=[
            ("grpc.max_receive_message_length", limit),
            ("grpc.max_send_message_length", 4 * 1024 * 1024),
            ("grpc.http2.bdp_probe", 0),
        ],
    )


def main() -> int:
    return run_main(SERVICE, GatewayConfig.from_env, build)


if __name__ == "__main__":
    sys.exit(main())
