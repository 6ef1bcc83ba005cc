"""A replica whose rebuild of newly won shards fails gives their leases up instead of holding
them unserved (issue 5): real nats-server and KV buckets, the real `LeaseManager` and
`KvLeaseStore`; only the `ShardHost` is a small one whose rebuild fails on demand."""

from __future__ import annotations

import asyncio
import time

import nats

from support.nats import AuthNats
from trix.natsio.permissions import inbox_prefix
from trix.natsio.subjects import TABLE_SHARDS
from trix.table.leases import LeaseManager
from trix.table.subscribers import LEASES_BUCKET, REPLICAS_BUCKET, KvLeaseStore, watch_leases


class FlakyHost:
    """`ShardHost` whose rebuild raises while `failing`."""

    def __init__(self) -> None:
        self.failing = True
        self.served: set[int] = set()
        self.failures = 0

    async def acquired(self, shards: list[int]) -> None:
        if self.failing:
            self.failures += 1
            raise TimeoutError("rebuild timed out")
        self.served |= set(shards)

    async def releasing(self, shard: int) -> None:
        self.served.discard(shard)

    async def lost(self, shard: int) -> None:
        self.served.discard(shard)


async def test_shards_whose_rebuild_fails_are_given_up_then_won_again(auth_nats: AuthNats) -> None:
    nc = await nats.connect(auth_nats.url("table"), inbox_prefix=inbox_prefix("table").encode())
    manager: LeaseManager | None = None
    watchers: list[asyncio.Task[None]] = []
    try:
        js = nc.jetstream()
        # The AuthNats fixture provisioned (the table's user may not: ADR 0014).
        leases, replicas = await js.key_value(LEASES_BUCKET), await js.key_value(REPLICAS_BUCKET)
        host = FlakyHost()
        manager = LeaseManager("table-t0-give-up", KvLeaseStore(leases, replicas), host)
        watchers = [
            await watch_leases(replicas, manager, members=True),
            await watch_leases(leases, manager, members=False),
        ]
        await manager.start(settle_s=1.0)
        assert host.failures >= 1
        assert not manager.held  # nothing held unserved
        host.failing = False
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and len(host.served) < TABLE_SHARDS:  # noqa: ASYNC110 - polls the host
            await asyncio.sleep(0.1)
        assert host.served == set(range(TABLE_SHARDS)) == set(manager.held)
    finally:
        if manager is not None:
            await manager.stop()
        for task in watchers:
            task.cancel()
        await asyncio.gather(*watchers, return_exceptions=True)
        await nc.close()
