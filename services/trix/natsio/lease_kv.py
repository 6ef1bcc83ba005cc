"""The shard leases on NATS KV (`trix.natsio.leases`): `KvLeaseStore`, the `LeaseStore` port on
a leases bucket (key = shard) and a replicas bucket (key = replica, the heartbeats),
compare-and-set on revisions; `watch_leases` and `LeaseWatchers`, the watchers feeding a
`LeaseManager` (the table's `table_leases`/`table_replicas`, the competitions'
`competition_leases`/`competition_replicas`)."""

from __future__ import annotations

import asyncio

from nats.js.errors import APIError, KeyWrongLastSequenceError
from nats.js.kv import KV_DEL, KV_PURGE, KeyValue

from trix.natsio.kvwatch import watch_bucket
from trix.natsio.leases import LeaseManager
from trix.natsio.publish import kv_create
from trix.runtime.tasks import cancel_and_wait

WRONG_LAST_SEQUENCE = 10071
"""JetStream's error code of a failed compare-and-set (a delete's comes as a plain 400)."""


async def watch_leases(kv: KeyValue, manager: LeaseManager, *, members: bool) -> asyncio.Task[None]:
    """Feed every lease (or heartbeat) change to the manager; returns once the current values are in."""

    def on_entry(entry: KeyValue.Entry) -> None:
        alive = entry.operation not in (KV_DEL, KV_PURGE)
        if members:
            manager.on_member(entry.key, alive)
        elif entry.key.isdigit():
            owner = (entry.value or b"").decode() if alive else None
            manager.on_lease(int(entry.key), owner, int(entry.revision or 0))

    return await watch_bucket(kv, on_entry)


class LeaseWatchers:
    """The two watchers feeding a `LeaseManager` (heartbeats, leases), started again from every
    key's latest value when the manager finds one deaf (`LeaseManager.rewatch`)."""

    def __init__(self, replicas: KeyValue, leases: KeyValue, manager: LeaseManager) -> None:
        self.replicas = replicas
        self.leases = leases
        self.manager = manager
        self.tasks: list[asyncio.Task[None]] = []
        self.restarts = 0

    async def _both(self) -> list[asyncio.Task[None]]:
        fresh: list[asyncio.Task[None]] = []
        try:
            fresh.append(await watch_leases(self.replicas, self.manager, members=True))
            fresh.append(await watch_leases(self.leases, self.manager, members=False))
        except BaseException:
            await cancel_and_wait(fresh)
            raise
        return fresh

    async def start(self) -> None:
        self.tasks = await self._both()
        self.manager.rewatch = self.restart

    async def restart(self) -> None:
        fresh = await self._both()  # the old ones go once the new ones delivered the current values
        old, self.tasks = self.tasks, fresh
        self.restarts += 1
        await cancel_and_wait(old)

    async def stop(self) -> None:
        self.manager.rewatch = None
        await cancel_and_wait(self.tasks)


class KvLeaseStore:
    """`LeaseStore` on a leases bucket (key = shard) and a replicas bucket (key = replica)."""

    def __init__(self, leases: KeyValue, replicas: KeyValue, heartbeats: KeyValue | None = None) -> None:
        self.leases = leases
        self.replicas = replicas
        self.heartbeats = heartbeats or replicas
        """The replicas bucket on a context whose requests wait `HEARTBEAT_ATTEMPT_S`."""

    async def heartbeat(self, replica: str) -> None:
        await self.heartbeats.put(replica, b"up")

    async def leave(self, replica: str) -> None:
        await self.replicas.delete(replica)

    async def create(self, shard: int, owner: str) -> int | None:
        return await kv_create(self.leases, str(shard), owner.encode())

    async def update(self, shard: int, owner: str, last: int) -> int | None:
        try:
            return int(await self.leases.update(str(shard), owner.encode(), last=last))
        except KeyWrongLastSequenceError:
            return None

    async def release(self, shard: int, last: int) -> bool:
        try:
            await self.leases.delete(str(shard), last=last)
        except KeyWrongLastSequenceError:
            return False
        except APIError as err:
            if err.err_code == WRONG_LAST_SEQUENCE:  # a delete's CAS failure comes as a plain 400
                return False
            raise
        return True
