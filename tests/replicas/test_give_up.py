"""A replica whose rebuild of newly won shards keeps failing gives their leases up instead of
holding them unserved (issue 5); one whose rebuild fails for a while (a NATS election of
TABLE_LOG) tries it again holding the leases, and serves them under the same lease (issue 19):
real nats-server and KV buckets, the real `LeaseManager` and `KvLeaseStore`; only the
`ShardHost` is a small one whose rebuild fails on demand."""

from __future__ import annotations

import asyncio
import time

import nats

from support.nats import AuthNats
from trix.natsio.lease_kv import KvLeaseStore, watch_leases
from trix.natsio.leases import LeaseManager
from trix.natsio.permissions import inbox_prefix
from trix.natsio.subjects import TABLE_SHARDS
from trix.table.adapters import LEASES_BUCKET, REPLICAS_BUCKET


class FlakyHost:
    """`ShardHost` whose rebuild raises while `failing` (or its first `fail_times` times)."""

    def __init__(self, fail_times: int | None = None) -> None:
        self.failing = True
        self.fail_times = fail_times
        self.served: set[int] = set()
        self.failures = 0
        self.manager: LeaseManager | None = None
        self.epochs: dict[int, int] = {}
        """Shard -> the lease epoch under which its rebuild was first asked."""

    async def acquired(self, shards: list[int]) -> None:
        if self.manager is not None:
            for shard in shards:
                self.epochs.setdefault(shard, self.manager.held[shard].epoch)
        if self.failing and (self.fail_times is None or self.failures < self.fail_times):
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
        manager = LeaseManager("table-t0-give-up", KvLeaseStore(leases, replicas), host, serve_window_s=1.0)
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


async def test_shards_whose_rebuild_fails_during_an_election_are_served_under_the_same_lease(
    auth_nats: AuthNats,
) -> None:
    nc = await nats.connect(auth_nats.url("table"), inbox_prefix=inbox_prefix("table").encode())
    manager: LeaseManager | None = None
    watchers: list[asyncio.Task[None]] = []
    try:
        js = nc.jetstream()
        leases, replicas = await js.key_value(LEASES_BUCKET), await js.key_value(REPLICAS_BUCKET)
        host = FlakyHost(fail_times=2)  # TABLE_LOG electing a leader: two rebuilds time out
        manager = LeaseManager("table-t0-retry", KvLeaseStore(leases, replicas), host)
        host.manager = manager
        watchers = [
            await watch_leases(replicas, manager, members=True),
            await watch_leases(leases, manager, members=False),
        ]
        t0 = time.monotonic()
        await manager.start(settle_s=30.0)
        took = time.monotonic() - t0
        assert host.failures == 2
        assert host.served == set(range(TABLE_SHARDS)) == set(manager.held)
        # Never given up meanwhile: every shard served under the lease won first (a lease given
        # up and won again has a newer epoch), after the retries' pauses (0.5 s, 1 s), not a
        # later balance round.
        assert {s: h.epoch for s, h in manager.held.items()} == host.epochs
        assert took < 10.0
    finally:
        if manager is not None:
            await manager.stop()
        for task in watchers:
            task.cancel()
        await asyncio.gather(*watchers, return_exceptions=True)
        await nc.close()
