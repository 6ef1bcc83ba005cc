"""NATS handlers of the gateway service.

Owns the gateway's subscriptions and consumers, translating messages to
`GatewayService` calls. Subscriptions: none yet; issue 9 subscribes to per-seat and
public table subjects only and publishes presence.
"""

from __future__ import annotations

from trix.gateway.service import GatewayService
from trix.natsio.connection import NatsConnection


async def start(nats: NatsConnection, service: GatewayService) -> None:
    """Start the gateway's subscriptions once NATS is connected and provisioned."""
    del nats, service  # nothing to subscribe to before issue 9
