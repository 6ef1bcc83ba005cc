"""NATS handlers of the matchmaking service.

Owns the matchmaking's subscriptions and consumers, translating messages to
`MatchmakingService` calls. Subscriptions: none yet; issue 6 shares the queues through
JetStream and publishes MatchFormed.
"""

from __future__ import annotations

from trix.matchmaking.service import MatchmakingService
from trix.natsio.connection import NatsConnection


async def start(nats: NatsConnection, service: MatchmakingService) -> None:
    """Start the matchmaking's subscriptions once NATS is connected and provisioned."""
    del nats, service  # nothing to subscribe to before issue 6
