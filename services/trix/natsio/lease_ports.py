"""The ports of the shard leases' `LeaseManager` (`trix.natsio.leases`): `LeaseStore`, the
buckets (`trix.natsio.lease_kv` on NATS KV), and `ShardHost`, what owning a shard means to
the service that leases (the table's `entrypoints.ShardRouter`, the competitions'
`ownership.CompetitionShards`); and `replica_id`, a replica's name in the leases."""

from __future__ import annotations

import uuid
from typing import Protocol


class LeaseStore(Protocol):
    """The leases bucket (key = shard) and the replicas' heartbeats bucket (key = replica)."""

    async def heartbeat(self, replica: str) -> None: ...

    async def leave(self, replica: str) -> None: ...

    async def create(self, shard: int, owner: str) -> int | None:
        """The new revision, or None if the key exists."""
        ...

    async def update(self, shard: int, owner: str, last: int) -> int | None:
        """CAS on the revision: the new one, or None if the lease moved on (or expired)."""
        ...

    async def release(self, shard: int, last: int) -> bool:
        """Delete the lease (CAS on the revision): False if the revision moved on."""
        ...


class ShardHost(Protocol):
    """What owning a shard means to the service (the table's `entrypoints.ShardRouter`)."""

    async def acquired(self, shards: list[int]) -> None:
        """Rebuild what the shards hold, then serve it."""
        ...

    async def releasing(self, shard: int) -> None:
        """Stop accepting the shard's commands and finish the ones in flight."""
        ...

    async def lost(self, shard: int) -> None:
        """Stop serving at once and forget what the shard holds."""
        ...


def replica_id(instance: str, default: str = "table") -> str:
    """A replica's id in the leases: its instance name plus a fresh suffix (a restart is a new replica)."""
    base = "".join(c if c.isalnum() or c in "-_" else "-" for c in instance)[:60] or default
    return f"{base}-{uuid.uuid4().hex[:8]}"
