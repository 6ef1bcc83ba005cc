"""The gateway wired: `start` builds `GatewayService` on its NATS adapters (`adapters`) once
NATS is connected and provisioned; `NewGateway` is what builds the service (with the gRPC
ports of the configuration, `__main__.production_service`, or a test's)."""

from __future__ import annotations

from collections.abc import Callable

from trix.gateway.adapters import KvAccounts, NatsPresence, NatsTables
from trix.gateway.config import GatewayConfig
from trix.gateway.ports import AccountsPort, PresencePort, TablePort
from trix.gateway.service import GatewayService
from trix.gateway.social_adapters import GrpcSocial, NatsChatLines, NatsSocialEvents
from trix.gateway.social_api import SocialGateway
from trix.natsio.connection import NatsConnection

NewGateway = Callable[[GatewayConfig, TablePort, AccountsPort, PresencePort], GatewayService]
"""Builds the service on its NATS ports (`GatewayService` with the gRPC ports of the configuration)."""


def start(nats: NatsConnection, config: GatewayConfig, new_service: NewGateway) -> GatewayService:
    """The service on its NATS ports, once NATS is connected and provisioned (nothing of its own runs)."""
    timeout = config.call_timeout_s
    tables = NatsTables(nats, config.player_key, timeout)
    service = new_service(config, tables, KvAccounts(nats), NatsPresence(nats, timeout))
    # Chat and friends (docs/adr/0031): the social service's gRPC, a chat line as a NATS
    # request, its events on core NATS.
    ca = config.runtime.tls_ca_file
    port = GrpcSocial(config.social_target, config.player_key, timeout, ca_file=ca) if config.social_target else None
    if port is not None:
        port.chat = NatsChatLines(nats, tables.player_token, timeout, window_s=config.chat_window_s)
    service.social = SocialGateway(port, NatsSocialEvents(nats))
    return service
