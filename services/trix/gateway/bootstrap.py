"""The gateway wired: `start` builds `GatewayService` on its NATS adapters (`adapters`) once
NATS is connected and provisioned; `NewGateway` is what builds the service (with the gRPC
ports of the configuration, `__main__.production_service`, or a test's)."""

from __future__ import annotations

from collections.abc import Callable

from trix.gateway.adapters import KvAccounts, NatsPresence, NatsTables
from trix.gateway.config import GatewayConfig
from trix.gateway.ports import AccountsPort, PresencePort, TablePort
from trix.gateway.service import GatewayService
from trix.natsio.connection import NatsConnection

NewGateway = Callable[[GatewayConfig, TablePort, AccountsPort, PresencePort], GatewayService]
"""Builds the service on its NATS ports (`GatewayService` with the gRPC ports of the configuration)."""


def start(nats: NatsConnection, config: GatewayConfig, new_service: NewGateway) -> GatewayService:
    """The service on its NATS ports, once NATS is connected and provisioned (nothing of its own runs)."""
    timeout = config.call_timeout_s
    return new_service(
        config, NatsTables(nats, config.player_key, timeout), KvAccounts(nats), NatsPresence(nats, timeout)
    )
