"""NATS handlers of the table service.

Owns the table's subscriptions and consumers, translating messages to
`TableService` calls. Subscriptions: none yet; issue 4 serves table commands and
consumes MatchFormed, issue 5 adds leases per shard.
"""

from __future__ import annotations

from trix.natsio.connection import NatsConnection
from trix.table.service import TableService


async def start(nats: NatsConnection, service: TableService) -> None:
    """Start the table's subscriptions once NATS is connected and provisioned."""
    del nats, service  # nothing to subscribe to before issue 4
