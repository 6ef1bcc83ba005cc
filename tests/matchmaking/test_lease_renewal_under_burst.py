"""Partition leases hold through a burst: thousands of tickets land in one queue at once and
the replica owning it matches them all without its lease renewals falling behind the
leases' TTL (3 s). Before the fix the matcher compared every ticket with every other in one
call (seconds of CPU for a few thousand tickets, holding the event loop) and started every
commit and "widened" write of the burst at once, and the renewals, done one after another
behind a key listing, came too late. Real nats-server, real gRPC, one replica in process."""

from __future__ import annotations

import asyncio
import random
import time
import uuid
from collections.abc import AsyncIterator
from functools import partial

import nats
import pytest
from mm_support import config, service_of, start_replica

from support.nats import NatsServer
from trix.matchmaking.adapters import TICKETS_BUCKET
from trix.matchmaking.entrypoints import PartitionOwner
from trix.matchmaking.records import SEARCHING, Ticket, partition_of
from trix.matchmaking.service import MatchmakingService
from trix.matchmaking.wishes import resolve_wish
from trix.runtime.server import Runtime

pytestmark = pytest.mark.timeout(240)

BURST = 4000
LEASE_TTL_S = 3.0


@pytest.fixture
async def replica(nats_server: NatsServer) -> AsyncIterator[tuple[MatchmakingService, Runtime]]:
    cfg = config(nats_server.url, bot_fill_after_s=100000.0, ticket_ttl_s=100000.0)
    runtime = await start_replica(cfg, partial(MatchmakingService, rng=random.Random(9)))
    service = service_of(runtime)
    for _ in range(200):
        if len(service.pools) == cfg.partitions:
            break
        await asyncio.sleep(0.05)
    try:
        yield service, runtime
    finally:
        await runtime.stop()  # its lifespan gives the leases back before NATS drains


async def test_a_burst_in_one_queue_keeps_the_partition_leases(
    nats_server: NatsServer, replica: tuple[MatchmakingService, Runtime]
) -> None:
    service, runtime = replica
    owner = runtime.running
    assert isinstance(owner, PartitionOwner)
    wish = resolve_wish(1, {}, "", None)
    partition = partition_of(wish.queue_key(), service.config.partitions)
    now = time.time()
    rng = random.Random(2024)
    tickets = [
        Ticket(
            ticket_id=f"{partition:02d}{uuid.UUID(int=rng.getrandbits(128)).hex[:30]}",
            player_id=f"burst{i}",
            wish=wish,
            rating=1500.0 + rng.uniform(-50, 50),
            created_at=now,
            state=SEARCHING,
        )
        for i in range(BURST)
    ]
    nc = await nats.connect(nats_server.url)
    try:
        kv = await nc.jetstream(timeout=30).key_value(TICKETS_BUCKET)
        for start in range(0, BURST, 500):  # the whole burst lands within a second or two
            await asyncio.gather(*(kv.create(t.key, t.encode()) for t in tickets[start : start + 500]))
    finally:
        await nc.close()
    deadline = time.monotonic() + 180
    while service.matches_formed < BURST // 4 and time.monotonic() < deadline:  # noqa: ASYNC110
        await asyncio.sleep(0.2)
    assert service.matches_formed == BURST // 4
    assert owner.lost == 0, "a partition lease was lost during the burst"
    assert owner.late == 0, "a partition lease expired during the burst"
    assert owner.max_renew_gap_s < LEASE_TTL_S, f"renewals {owner.max_renew_gap_s:.2f} s apart"
    print(
        f"burst of {BURST}: {service.matches_formed} matches, longest gap between lease renewals"
        f" {owner.max_renew_gap_s:.2f} s, {owner.renewals} renewal rounds"
    )
