"""The table replica wired: `start` builds the service on its adapters, joins the replicas'
shard leases, serves the won shards' commands and consumes the shared consumers;
`TableReplica` is what it leaves running, and what stops it (the shards handed over)."""

from __future__ import annotations

import asyncio

import structlog
from nats.js.api import AckPolicy, ConsumerConfig

from trix.natsio import names, subjects
from trix.natsio.connection import NatsConnection
from trix.natsio.consumer import IdempotentEventHandler, MemoryProgress, PullConsumer
from trix.natsio.lease_kv import KvLeaseStore, LeaseWatchers
from trix.natsio.lease_ports import replica_id
from trix.natsio.leases import LeaseManager
from trix.natsio.publish import JetStreams
from trix.runtime.tasks import cancel_and_wait
from trix.table.adapters import (
    HEARTBEAT_ATTEMPT_S,
    LEASES_BUCKET,
    REPLICAS_BUCKET,
    JetStreamStore,
    NatsSink,
)
from trix.table.config import TableConfig
from trix.table.entrypoints import (
    ARCHIVE_CONSUMER,
    ARCHIVE_STREAM,
    CONSUMER_BATCH,
    CONSUMER_FETCH_S,
    MATCH_CONSUMER,
    Archiver,
    MatchCreator,
    ShardRouter,
    live_tables,
)
from trix.table.ports import NewTable
from trix.table.service import TableService

log = structlog.get_logger("trix.table.nats")


class TableReplica:
    """What `start` leaves running: the router, the lease manager and their watchers."""

    def __init__(
        self,
        router: ShardRouter,
        manager: LeaseManager,
        watchers: LeaseWatchers,
        consumers: list[PullConsumer],
        seeds: asyncio.Task[None] | None = None,
    ) -> None:
        self.router = router
        self.service = router.service
        self.manager = manager
        self.watchers = watchers
        self.consumers = consumers
        """MatchFormed and RecordArchived: stopped first (the batch in hand finishes)."""
        self.seeds = seeds
        """The watch of the tables' seeds (`JetStreamStore.watch_seeds`)."""

    async def handover(self, timeout_s: float = 10.0) -> None:
        """Graceful shutdown (SIGTERM): every shard to another replica, then stop."""
        try:
            await asyncio.wait_for(self.manager.handover(timeout_s), timeout_s + 2)
        except Exception as exc:  # noqa: BLE001 - shutting down anyway; the leases expire
            log.warning("handover incomplete", error=repr(exc))
        await self.close()

    async def stop(self) -> None:
        """The replica's end: while NATS is up its consumers finish the batch in hand as its
        shards are handed over (at once: a consumer may wait for the fetch in flight); else it
        is just closed."""
        nc = self.router.nats.nc
        if nc is not None and nc.is_connected:
            await asyncio.gather(self.stop_consumers(), self.handover())
        else:
            await self.close()

    async def stop_consumers(self) -> None:
        await asyncio.gather(*(consumer.stop() for consumer in self.consumers))

    async def close(self) -> None:
        await self.stop_consumers()
        await self.manager.stop()
        await self.service.unpublished.stop()
        await self.watchers.stop()
        if self.seeds is not None:
            await cancel_and_wait([self.seeds])


async def start(nats: NatsConnection, config: TableConfig, new_service: NewTable = TableService) -> TableReplica:
    """Build the service on its adapters, join the replicas, win a fair share of the shards
    (rebuilding their tables), serve their commands, and consume MatchFormed and RecordArchived
    from the pull consumers the replicas share (`TableReplica.service` is the service)."""
    js = nats.jetstream
    leases_kv = await js.key_value(LEASES_BUCKET)
    buckets = JetStreams(nats)
    replicas_kv = await buckets.key_value(REPLICAS_BUCKET)
    leases = KvLeaseStore(leases_kv, replicas_kv, await buckets.key_value(REPLICAS_BUCKET, HEARTBEAT_ATTEMPT_S))
    me = replica_id(config.runtime.instance)

    stores: list[JetStreamStore] = []

    def table_service(router: ShardRouter) -> TableService:
        store = JetStreamStore(nats, router.writer)
        stores.append(store)
        return new_service(
            config, store, NatsSink(nats), may_write=router.owns_table, on_stale_writer=router.stale_writer
        )

    router = ShardRouter(nats, table_service, lambda host: LeaseManager(me, leases, host))
    service, manager = router.service, router.manager
    watchers = LeaseWatchers(replicas_kv, leases_kv, manager)
    seeds = await stores[0].watch_seeds()  # before any shard is won: its rebuild reads no seed
    await watchers.start()
    await manager.start()
    log.info("table replica started", replica=manager.me, shards=len(manager.held), tables=len(service.tables))
    creator = MatchCreator(nats, service)
    wrapped = IdempotentEventHandler(creator.on_match, MemoryProgress())
    # Matches are independent: each its own lane (created in parallel, as a queue group did).
    matches = PullConsumer(
        MATCH_CONSUMER,
        nats.client,
        wrapped,
        batch=CONSUMER_BATCH,
        fetch_timeout_s=CONSUMER_FETCH_S,
        lane=lambda msg: str(msg.metadata.sequence.stream),
    )
    await matches.start(
        js,
        subjects.match_formed(),
        stream=names.MATCHES_STREAM,
        config=ConsumerConfig(durable_name=MATCH_CONSUMER, ack_policy=AckPolicy.EXPLICIT),
    )

    await nats.client.subscribe(subjects.table_live(), cb=live_tables(service, router))
    # After a reconnect, each live table's last batch goes again: one sent into the dying
    # connection is lost for every reader (core NATS), the timers included. At
    # once: core publishes, no need to wait for the streams' check after the reconnect.
    nats.core_reconnect_hooks.append(service.republish_last)
    archiver = Archiver(service)
    # One table's signals in order (its own subject), tables in parallel.
    archived = PullConsumer(
        ARCHIVE_CONSUMER,
        nats.client,
        archiver.on_msg,
        batch=CONSUMER_BATCH,
        fetch_timeout_s=CONSUMER_FETCH_S,
        lane=lambda msg: msg.subject,
    )
    await archived.start(
        js,
        subjects.all_records_archived(),
        stream=ARCHIVE_STREAM,
        config=ConsumerConfig(durable_name=ARCHIVE_CONSUMER, ack_policy=AckPolicy.EXPLICIT),
    )
    return TableReplica(router, manager, watchers, [matches, archived], seeds)
