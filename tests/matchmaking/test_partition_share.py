"""One lease per matchmaking replica (issue 16, `trix.matchmaking.leases`): a replica's
heartbeat is its only write (no key per partition); the partitions are split evenly over the
live replicas, each computing the same split; a replica that leaves hands its share over at
once (its heartbeat deleted), one that dies loses it once its heartbeat is older than the
TTL. Real nats-server, its `match_leases` bucket, two in-process replicas (the services'
own PartitionOwner) or their memberships alone."""

from __future__ import annotations

import asyncio
import random
import time
from functools import partial

import nats
import pytest
from mm_support import config, service_of, start_replica

from support.nats import NatsServer
from trix.matchmaking.entrypoints import PartitionOwner
from trix.matchmaking.leases import LEASES_BUCKET, Membership, share
from trix.matchmaking.service import MatchmakingService
from trix.natsio.provision import provision_now
from trix.runtime.tasks import cancel_and_wait

pytestmark = pytest.mark.timeout(120)

PARTITIONS = 16


async def until(check: object, timeout_s: float = 20.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not check():  # type: ignore[operator]
        assert time.monotonic() < deadline, "not reached in time"
        await asyncio.sleep(0.02)


def test_the_split_is_even_disjoint_and_whole() -> None:
    for n in range(1, 6):
        members = sorted(f"m{i}" for i in range(n))
        shares = [share(members, m, PARTITIONS) for m in members]
        assert set().union(*shares) == set(range(PARTITIONS))
        assert sum(len(s) for s in shares) == PARTITIONS
        assert max(len(s) for s in shares) - min(len(s) for s in shares) <= 1


async def test_a_leaving_replica_hands_its_share_over_at_once_and_a_dead_one_after_the_ttl(
    nats_server: NatsServer,
) -> None:
    await asyncio.to_thread(provision_now, nats_server.url)  # the match_leases bucket, as `trix up` makes it
    nc = await nats.connect(nats_server.url)
    try:
        kv = await nc.jetstream().key_value(LEASES_BUCKET)
        ttl = 1.5
        a = Membership(kv, "a", heartbeat_s=0.3, ttl_s=ttl)
        b = Membership(kv, "b", heartbeat_s=0.3, ttl_s=ttl)
        c = Membership(kv, "c", heartbeat_s=0.3, ttl_s=ttl)
        for m in (a, b, c):
            await m.start()
        await until(lambda: a.live() == b.live() == c.live() == ["a", "b", "c"])
        shares = [m.partitions(PARTITIONS) for m in (a, b, c)]
        assert set().union(*shares) == set(range(PARTITIONS)) and sum(map(len, shares)) == PARTITIONS

        # b leaves: its heartbeat is deleted, the others take its share as soon as they hear it.
        left = time.monotonic()
        await b.stop()
        await until(lambda: a.live() == c.live() == ["a", "c"])
        assert time.monotonic() - left < ttl  # not by expiry: at once
        assert a.partitions(PARTITIONS) | c.partitions(PARTITIONS) == set(range(PARTITIONS))

        # c dies: no more heartbeats, nothing deleted; a counts it out once the TTL has passed.
        await cancel_and_wait(c._tasks)
        died = time.monotonic()
        assert a.live() == ["a", "c"]
        await until(lambda: a.live() == ["a"])
        assert time.monotonic() - died >= ttl - 0.5  # its last heartbeat, up to 0.3 s before
        assert a.partitions(PARTITIONS) == set(range(PARTITIONS))
        await a.stop()
    finally:
        await nc.close()


async def test_a_replica_writes_one_heartbeat_and_no_partition_key(nats_server: NatsServer) -> None:
    """The fixed cost: a replica's lease is one write per heartbeat (every 1 s), where 16
    partition keys were renewed every 0.5 s beside it (34 writes/s)."""
    cfg = config(nats_server.url, partitions=PARTITIONS, bot_fill_after_s=100000.0)
    runtime = await start_replica(cfg, partial(MatchmakingService, rng=random.Random(16)))
    service = service_of(runtime)
    nc = await nats.connect(nats_server.url)
    try:
        owner = runtime.running
        assert isinstance(owner, PartitionOwner)
        await until(lambda: len(service.pools) == PARTITIONS)
        js = nc.jetstream()
        before = (await js.stream_info(f"KV_{LEASES_BUCKET}")).state.last_seq
        await asyncio.sleep(5.0)
        writes = (await js.stream_info(f"KV_{LEASES_BUCKET}")).state.last_seq - before
        assert 3 <= writes <= 7, writes  # ~5 heartbeats in 5 s
        kv = await js.key_value(LEASES_BUCKET)
        assert sorted(await kv.keys()) == [f"member.{owner.member}"]
        assert owner.late == 0 and owner.lost == 0
    finally:
        await nc.close()
        await runtime.stop()


async def test_two_replicas_match_disjoint_halves_and_one_stopping_leaves_all_to_the_other(
    nats_server: NatsServer,
) -> None:
    partitions = 4
    cfg = config(nats_server.url, partitions=partitions, bot_fill_after_s=100000.0)
    first = await start_replica(cfg, partial(MatchmakingService, rng=random.Random(1)))
    second = await start_replica(cfg, partial(MatchmakingService, rng=random.Random(2)))
    one, two = service_of(first), service_of(second)
    try:
        await until(lambda: len(one.pools) == len(two.pools) == 2)
        assert set(one.pools) | set(two.pools) == set(range(partitions))
        await second.stop()
        await until(lambda: len(one.pools) == partitions, timeout_s=10.0)
    finally:
        await first.stop()
        await second.stop()
