"""NATS handlers of the scoring service.

Owns the scoring's subscriptions and consumers, translating messages to
`ScoringService` calls. Subscriptions: none yet; issue 8 consumes deal and game events
durably, exactly once per (table, sequence).
"""

from __future__ import annotations

from trix.natsio.connection import NatsConnection
from trix.scoring.service import ScoringService


async def start(nats: NatsConnection, service: ScoringService) -> None:
    """Start the scoring's subscriptions once NATS is connected and provisioned."""
    del nats, service  # nothing to subscribe to before issue 8
