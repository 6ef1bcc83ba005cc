"""NATS handlers of the timers service.

Owns the timers's subscriptions and consumers, translating messages to
`TimersService` calls. Subscriptions: none yet; issue 7 consumes turn and presence events and sends AutoAct and Leave.
"""

from __future__ import annotations

from trix.natsio.connection import NatsConnection
from trix.timers.service import TimersService


async def start(nats: NatsConnection, service: TimersService) -> None:
    """Start the timers's subscriptions once NATS is connected and provisioned."""
    del nats, service  # nothing to subscribe to before issue 7
