"""`Grants`: what one service does on NATS, as its declaration (`trix.declarations`) states it.

Owns the shape only; `trix.natsio.permissions` turns grants into nats-server whitelists.
Apart from both so the declarations (which hold grants) and the permissions (which read the
declarations) import it without a cycle.
"""

from __future__ import annotations

from dataclasses import dataclass

from trix.natsio.names import kv_stream


@dataclass(frozen=True)
class Grants:
    """What one service does on NATS; `permissions.permissions_of` makes the server's whitelist of it."""

    publish: tuple[str, ...] = ()
    """Core and JetStream publishes and requests (a JetStream publish needs only its subject)."""
    subscribe: tuple[str, ...] = ()
    """Core subscriptions besides the user's own reply inbox."""
    serves_requests: bool = False
    """Answers requests it receives (nats-server `allow_responses`)."""
    read: tuple[str, ...] = ()
    """Streams (and buckets' streams) it reads by info, message get or direct get."""
    write_buckets: tuple[str, ...] = ()
    """KV buckets whose keys it writes (put, create, update, delete)."""
    purge: tuple[str, ...] = ()
    """Streams it purges (by subject: a finished table's private data, purged tickets)."""
    ephemeral: tuple[str, ...] = ()
    """Streams it opens ephemeral consumers on (KV watches, history reads)."""
    durable: tuple[tuple[str, str], ...] = ()
    """Its own durable consumers: (stream, name)."""

    @property
    def streams(self) -> tuple[str, ...]:
        """Every stream this service uses (what it checks at start)."""
        names = [*self.read, *self.ephemeral, *(s for s, _ in self.durable), *self.purge]
        names += [kv_stream(b) for b in self.write_buckets]
        return tuple(dict.fromkeys(names))
