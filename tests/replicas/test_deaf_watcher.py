"""A replica whose heartbeat watcher went deaf takes no live replica's shard (issue 19).

A watcher is a JetStream ordered consumer, which lives on one NATS node: when that node dies
(or across a partition) it stops delivering, and the client library notices only after two
missed 5 s idle heartbeats. Meanwhile the replica heard nobody's heartbeat: before, after the
2 s lease TTL it counted every other replica dead and took their shards by compare-and-set on
keys they never rewrite, while they went on writing (the fault run's "two writers" after a
partition healed). Now the others' silence counts only up to the watcher's own horizon (the
last heartbeat of this replica it delivered back), and a watcher that misses this replica's
own writes for `ECHO_S` is started again.

Real nats-server (without users: the test lists and deletes consumers) and KV buckets, the
real `LeaseManager`, `KvLeaseStore` and `LeaseWatchers`; the consumers of both replicas'
heartbeat watchers are deleted on the server, as a node's death deletes them; the
`ShardHost` only records what it serves."""

from __future__ import annotations

import asyncio
import time

import nats
from nats.aio.client import Client

from support.nats import NatsServer
from trix.natsio.lease_kv import KvLeaseStore, LeaseWatchers
from trix.natsio.leases import ECHO_S, LeaseManager
from trix.natsio.provisioning import provision
from trix.natsio.subjects import TABLE_SHARDS
from trix.table.adapters import LEASES_BUCKET, REPLICAS_BUCKET


class Host:
    """`ShardHost` serving nothing but the set of shards it was given."""

    def __init__(self) -> None:
        self.served: set[int] = set()

    async def acquired(self, shards: list[int]) -> None:
        self.served |= set(shards)

    async def releasing(self, shard: int) -> None:
        self.served.discard(shard)

    async def lost(self, shard: int) -> None:
        self.served.discard(shard)


async def owners(nc: Client) -> dict[int, tuple[str, int]]:
    """Shard -> (owner, revision) of every lease key now."""
    kv = await nc.jetstream().key_value(LEASES_BUCKET)
    out: dict[int, tuple[str, int]] = {}
    for shard in range(TABLE_SHARDS):
        entry = await kv.get(str(shard))
        out[shard] = ((entry.value or b"").decode(), int(entry.revision or 0))
    return out


async def test_a_deaf_heartbeat_watcher_takes_no_live_replicas_shard(nats_server: NatsServer) -> None:
    conns = [await nats.connect(nats_server.url) for _ in "ab"]
    admin = await nats.connect(nats_server.url)
    await provision(admin.jetstream())
    managers: list[LeaseManager] = []
    watchers: list[LeaseWatchers] = []
    try:
        for name, nc in zip(("table-a-deaf", "table-b-deaf"), conns, strict=True):
            js = nc.jetstream()
            leases, replicas = await js.key_value(LEASES_BUCKET), await js.key_value(REPLICAS_BUCKET)
            manager = LeaseManager(name, KvLeaseStore(leases, replicas), Host())
            w = LeaseWatchers(replicas, leases, manager)
            await w.start()
            managers.append(manager)
            watchers.append(w)
            await manager.start(settle_s=10.0)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and sorted(len(m.held) for m in managers) != [32, 32]:  # noqa: ASYNC110
            await asyncio.sleep(0.1)
        assert sorted(len(m.held) for m in managers) == [32, 32]
        await asyncio.sleep(1.0)  # settled: no lease write in flight
        before = await owners(conns[0])

        # Both heartbeat watchers go deaf: their consumers are gone from the server.
        ajs = admin.jetstream()
        names = [c.name for c in await ajs.consumers_info("KV_" + REPLICAS_BUCKET)]
        assert len(names) == 2
        for name in names:
            await ajs.delete_consumer("KV_" + REPLICAS_BUCKET, name)

        # Longer than the TTL and than ECHO_S: each hears nothing of the other for that long.
        await asyncio.sleep(managers[0].ttl_s + ECHO_S + 2.0)
        assert await owners(conns[0]) == before  # no lease changed hands, not one CAS write
        assert all(w.restarts >= 1 for w in watchers)  # each found its watcher deaf and started it again
        assert sorted(len(m.held) for m in managers) == [32, 32]
        assert all(m.live() == ["table-a-deaf", "table-b-deaf"] for m in managers)  # they hear each other again
    finally:
        for manager in managers:
            await manager.stop()
        for w in watchers:
            await w.stop()
        for nc in (*conns, admin):
            await nc.close()
