"""A table replica knows the seeds other replicas store, without asking the bucket (issue 42,
finding 7).

A rebuild of shards taken over from a replica cut off needs each table's seed. It read the
seeds' bucket from its leader, and a NATS node healed from a partition leaves the bucket
without a leader for an election (~5 s) while the move path's streams answer: the games of the
cut replica waited (`tests/cluster/test_read_after_heal.py` shows the election, as root). Every
replica now watches the bucket (`JetStreamStore.watch_seeds`; a seed is stored once and never
changed) and its rebuild asks the bucket only for a seed it has not seen.

Real nats-server with the platform's users and permissions (the table user's watch of its own
bucket), two replicas' real `JetStreamStore`s; NATS is then stopped: the seed is answered
anyway."""

from __future__ import annotations

import asyncio
import time

from support.nats import AuthNats
from trix.natsio.connection import NatsConnection
from trix.table.adapters import JetStreamStore

ANSWERED_WITHIN_S = 1.0


async def test_a_seed_stored_by_one_replica_is_answered_by_another_with_nats_away(auth_nats: AuthNats) -> None:
    url = auth_nats.url("table")
    creates_conn, takes_over_conn = NatsConnection(url, "table-a"), NatsConnection(url, "table-b")
    for conn in (creates_conn, takes_over_conn):
        await conn.connect(give_up_after_s=30)
    creates = JetStreamStore(creates_conn, lambda _t: "table-a/1")
    takes_over = JetStreamStore(takes_over_conn, lambda _t: "table-b/2")
    earlier = b"e" * 32
    assert await creates.keep_secret("seeded-before", earlier) == earlier  # stored before the watch
    watch = await takes_over.watch_seeds()
    try:
        seed = b"s" * 32
        assert await creates.keep_secret("seeded-after", seed) == seed
        assert await creates.keep_secret("seeded-after", b"x" * 32) == seed  # a second create keeps the first
        for _ in range(200):  # the watch delivers it (within 10 s)
            if "seeded-after" in takes_over.seeds:
                break
            await asyncio.sleep(0.05)

        auth_nats.stop()
        sent = time.monotonic()
        got = await asyncio.wait_for(takes_over.get_secret("seeded-after"), 30)
        before = await asyncio.wait_for(takes_over.get_secret("seeded-before"), 30)
        took = time.monotonic() - sent
        assert (got, before) == (seed, earlier)
        assert took < ANSWERED_WITHIN_S, f"answered after {took:.2f}s"
    finally:
        watch.cancel()
        await asyncio.gather(watch, return_exceptions=True)
        for conn in (creates_conn, takes_over_conn):
            await conn.drain()
