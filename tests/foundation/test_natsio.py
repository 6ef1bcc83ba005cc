"""NATS plumbing against a real nats-server: subjects, idempotent provisioning,
same-id publish retries, consumers idempotent by (table, sequence), and a NATS
restart mid-run that loses no acknowledged publish."""

from __future__ import annotations

import asyncio

import pytest
from foundation_support import connected
from nats.aio.msg import Msg
from nats.js.api import AckPolicy, ConsumerConfig, StorageType, StreamConfig
from nats.js.errors import BucketNotFoundError

from support.nats import NatsServer
from trix.errors import InvalidArgument
from trix.natsio import names, subjects
from trix.natsio.consumer import IdempotentEventHandler, MemoryProgress, PullConsumer
from trix.natsio.provisioning import KV_BUCKETS, STREAMS, KvSpec, StreamSpec, provision
from trix.natsio.publish import JetStreams, publish_once
from trix.timers.adapters import DEADLINES_BUCKET, KvDocStore
from trix.timers.ports import CasConflict
from trix.v1 import events_pb2


def test_subjects_are_built_and_checked() -> None:
    assert subjects.table_feed("t1") == "trix.table.evt.t1.feed"
    assert subjects.public_events("t1") == "trix.table.evt.t1.public"
    shard = subjects.table_shard("t1")
    assert subjects.table_command("t1") == f"trix.table.cmd.{shard}.t1"
    assert subjects.table_commands_of_shard(shard) == f"trix.table.cmd.{shard}.*"
    assert subjects.table_shard("t1") == shard  # stable
    for bad in ("", "a.b", "*", ">", "a b", "x" * 129):
        with pytest.raises(InvalidArgument):
            subjects.table_log(bad)
    with pytest.raises(InvalidArgument):
        subjects.table_feed("t1.>")


async def test_provisioning_is_idempotent(nats_server: NatsServer) -> None:
    async with connected(nats_server.url, "test-provision") as conn:
        js = conn.jetstream
        again = await provision(js)
        assert again.created == [] and again.updated == []
        assert len(again.unchanged) == len(STREAMS) + len(KV_BUCKETS)
        changed = [StreamSpec("MATCHES", (subjects.match_formed(),), "MatchFormed events.", max_age_s=7200.0)]
        report = await provision(js, changed, [])
        assert report.updated == ["MATCHES"]
        assert (await js.stream_info("MATCHES")).config.max_age == 7200.0


async def test_a_lease_bucket_found_on_file_is_recreated_in_memory(nats_server: NatsServer) -> None:
    # Issue 10: match_leases moved to memory storage (its renewals were fsynced); a stream's
    # storage cannot be updated, so provisioning recreates a memory bucket found on file.
    on_file = KvSpec("test_leases", "leases", ttl_s=3.0)
    in_memory = KvSpec("test_leases", "leases", ttl_s=3.0, memory=True)
    async with connected(nats_server.url, "test-provision-memory") as conn:
        js = conn.jetstream
        await provision(js, [], [on_file])
        kv = await js.key_value("test_leases")
        await kv.put("part.01", b"old-owner")
        assert (await js.stream_info("KV_test_leases")).config.storage == StorageType.FILE
        # several services provision at once after an upgrade: all succeed, one bucket in memory
        reports = await asyncio.gather(*(provision(js, [], [in_memory]) for _ in range(3)))
        assert any(r.updated == ["KV_test_leases"] for r in reports), reports
        info = await js.stream_info("KV_test_leases")
        assert info.config.storage == StorageType.MEMORY
        assert info.config.max_age == 3.0
        again = await provision(js, [], [in_memory])
        assert again.unchanged == ["KV_test_leases"] and again.updated == []
        kv = await js.key_value("test_leases")
        await kv.create("part.01", b"new-owner")  # the old lease is gone: the owner takes it again


async def test_publish_retry_with_same_id_is_stored_once(nats_server: NatsServer) -> None:
    async with connected(nats_server.url, "test-publish") as conn:
        js = conn.jetstream
        subject = subjects.table_log("dup1")
        first = await publish_once(js, subject, b"a", msg_id="action-1")
        second = await publish_once(js, subject, b"a", msg_id="action-1")
        assert not first.duplicate and second.duplicate and second.seq == first.seq
        info = await js.stream_info("TABLE_LOG", subjects_filter=subject)
        assert info.state.messages == 1


async def test_consumer_applies_each_table_sequence_once(nats_server: NatsServer) -> None:
    async with connected(nats_server.url, "test-consumer") as conn:
        js = conn.jetstream
        progress = MemoryProgress()
        seen: list[tuple[str, int]] = []
        done = asyncio.Event()

        async def handle(event: events_pb2.Event) -> None:
            seen.append((event.table_id, event.sequence))
            if len(seen) == 4:
                done.set()

        handler = IdempotentEventHandler(handle, progress)
        config = ConsumerConfig(durable_name="test_scoring", ack_policy=AckPolicy.EXPLICIT)
        pull = PullConsumer("test", conn.client, handler, batch=16, fetch_timeout_s=0.5)
        await pull.start(js, subjects.all_table_results(), stream=names.TABLE_RESULTS_STREAM, config=config)
        # (table, seq) pairs with a duplicate delivery of t1/2 (a different message id:
        # e.g. a republish after a crash) and an old t2/1 arriving late.
        for table, seq in [("t1", 1), ("t1", 2), ("t2", 1), ("t1", 2), ("t1", 3), ("t2", 2), ("t2", 1)]:
            event = events_pb2.Event(table_id=table, sequence=seq)
            event.seat_passed.seat = 0
            await publish_once(js, subjects.table_results(table), event.SerializeToString())
        await asyncio.wait_for(done.wait(), 30)
        await asyncio.sleep(0.5)  # give the duplicates time to arrive
        await pull.stop()
        assert seen == [("t1", 1), ("t1", 2), ("t2", 1), ("t1", 3), ("t2", 2)]
        assert handler.skipped == 2
        assert await progress.last("t1") == 3


async def test_nats_restart_loses_no_acknowledged_publish(nats_server: NatsServer) -> None:
    async with connected(nats_server.url, "test-restart", reconnect_wait_s=0.2) as conn:
        js = conn.jetstream
        subject = subjects.table_log("restart1")
        acked: list[int] = []
        some_acked = asyncio.Event()

        async def publisher() -> None:
            for i in range(60):
                await publish_once(
                    js, subject, str(i).encode(), msg_id=f"restart1-{i}", attempt_timeout_s=1.0, deadline_s=90
                )
                acked.append(i)
                if len(acked) == 15:
                    some_acked.set()
                await asyncio.sleep(0.02)

        task = asyncio.ensure_future(publisher())
        await asyncio.wait_for(some_acked.wait(), 60)
        await asyncio.to_thread(nats_server.stop)
        await asyncio.sleep(1.0)  # publishes keep failing and retrying meanwhile
        await asyncio.to_thread(nats_server.start)
        await asyncio.wait_for(task, 120)
        assert acked == list(range(60))
        assert conn.reconnects >= 1
        await asyncio.wait_for(conn.provisioned.wait(), 30)
        info = await js.stream_info("TABLE_LOG", subjects_filter=subject)
        assert info.state.messages == 60  # every acknowledged publish is there, once
        bodies = set()
        sub = await js.subscribe(subject, ordered_consumer=True)
        for _ in range(60):
            msg = await sub.next_msg(timeout=10)
            bodies.add(int(msg.data))
        await sub.unsubscribe()
        assert bodies == set(range(60))


async def test_a_bucket_is_looked_up_once_per_connection_and_attempt_contexts_stay_few(nats_server: NatsServer) -> None:
    """`JetStreams.key_value`: nats-py's `key_value` asks for the bucket's stream info on every
    call (a request per sign-in read, issue 16); here only the first lookup asks, later ones
    read and write the same bucket without it. `waiting` keeps one context per 50 ms step of
    timeout, not one per distinct time left."""
    bucket = KV_BUCKETS[0].bucket
    async with connected(nats_server.url, "test-kv-once") as conn, connected(nats_server.url, "test-kv-spy") as spy:
        asked: list[str] = []

        async def heard(msg: Msg) -> None:
            asked.append(msg.subject)

        sub = await spy.client.subscribe(f"$JS.API.STREAM.INFO.KV_{bucket}", cb=heard)
        await spy.client.flush()
        streams = JetStreams(conn)
        kv = await streams.key_value(bucket)
        await kv.put("k1", b"one")
        for timeout in (None, 0.37, 0.9):
            again = await streams.key_value(bucket, timeout)
            assert (await again.get("k1")).value == b"one"
        await conn.client.flush()
        await spy.client.flush()
        # The spy's callback runs on its own task: on a loaded box it may come late.
        for _ in range(100):
            if asked:
                break
            await asyncio.sleep(0.05)
        await asyncio.sleep(0.3)  # and any later lookup would have come by now
        assert asked == [f"$JS.API.STREAM.INFO.KV_{bucket}"]  # the first lookup only
        await sub.unsubscribe()
        for i in range(500):
            streams.waiting(0.25 + i * 0.001)  # the time left of 500 attempts
        assert len(streams._by_timeout) <= 12
        assert streams.waiting(0.37)._timeout == pytest.approx(0.35)
        assert streams.waiting(0.35)._timeout == pytest.approx(0.35)  # not a step less (0.35 / 0.05 = 6.999...)
        with pytest.raises(BucketNotFoundError):
            await JetStreams(conn).key_value("no_such_bucket")


async def test_a_bucket_made_without_message_ttls_is_given_them(nats_server: NatsServer) -> None:
    """A bucket created before per-message TTLs (a finished table's timer document expires by
    its own TTL) is updated to allow them, its entries kept; provisioning again changes nothing."""
    async with connected(nats_server.url, "test-provision-ttl") as conn:
        js = conn.jetstream
        await js.add_stream(
            StreamConfig(
                name="KV_test_old",
                subjects=["$KV.test_old.>"],
                max_msgs_per_subject=1,
                allow_rollup_hdrs=True,
                deny_delete=True,
                allow_direct=True,
            )
        )
        assert not (await js.stream_info("KV_test_old")).config.allow_msg_ttl
        kv = await js.key_value("test_old")
        await kv.put("t.kept", b"{}")
        report = await provision(js, [], [KvSpec("test_old", "an older bucket")])
        assert report.updated == ["KV_test_old"]
        assert (await js.stream_info("KV_test_old")).config.allow_msg_ttl
        assert (await kv.get("t.kept")).value == b"{}"
        again = await provision(js, [], [KvSpec("test_old", "an older bucket")])
        assert again.unchanged == ["KV_test_old"]


async def test_a_finished_tables_timer_document_is_removed_after_its_ttl(nats_server: NatsServer) -> None:
    """`KvDocStore.put` with a TTL (the timers' finishing write) on the provisioned
    `timer_deadlines` bucket: the server removes that document after it; one written without
    stays, and a compare-and-set over the expiring one still works before it goes."""
    async with connected(nats_server.url, "test-doc-ttl") as conn:
        store = KvDocStore(await conn.jetstream.key_value(DEADLINES_BUCKET), conn.jetstream)
        running = await store.put("t.running", {"finished": False}, 0)
        first = await store.put("t.done", {"finished": False}, 0)
        with pytest.raises(CasConflict):  # the write with a TTL is a compare-and-set too
            await store.put("t.done", {"finished": True}, first + 100, ttl_s=1.0)
        done = await store.put("t.done", {"finished": True}, first, ttl_s=1.0)
        assert done > first and running > 0
        assert await store.get("t.done") == ({"finished": True}, done)
        deadline = asyncio.get_running_loop().time() + 30
        while (await store.get("t.done"))[0] is not None:
            assert asyncio.get_running_loop().time() < deadline, "the finished document never expired"
            await asyncio.sleep(0.2)
        assert await store.get("t.running") == ({"finished": False}, running)
