"""NATS adapters of the matchmaking service.

Owns: `KvStore` (the service's compare-and-set `Store` over the `match_tickets` KV
bucket), `MatchFormedPublisher` (MatchFormed on `trix.match.formed`, message id = match
id, so a republish after a crash is stored once), `KvSeatIndex` (reads the table
service's `player_tables` index), and `PartitionOwner`: each replica heartbeats in the
`match_leases` bucket, leases its share of the queue partitions (compare-and-set with a
TTL, so a dead replica's partitions pass to the others within seconds), watches each
owned partition's tickets and lobbies and runs the matcher on them. Correctness never
rests on the leases (the claim protocol in `service` is safe with two owners); leases
only keep replicas from contending.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import uuid
from collections.abc import AsyncIterator

import nats.js.errors
import structlog
from google.protobuf.timestamp_pb2 import Timestamp
from nats.js.kv import KV_DEL, KV_PURGE, KeyValue

from trix.matchmaking.service import MatchmakingService, MatchRecord, NoSeatIndex, Versioned
from trix.natsio import subjects
from trix.natsio.connection import NatsConnection
from trix.natsio.publish import publish_once
from trix.v1 import common_pb2, events_pb2

log = structlog.get_logger("trix.matchmaking.subscribers")

TICKETS_BUCKET = "match_tickets"
LEASES_BUCKET = "match_leases"
SEATS_BUCKET = "player_tables"


class KvStore:
    """`trix.matchmaking.service.Store` over a JetStream KV bucket."""

    def __init__(self, kv: KeyValue) -> None:
        self.kv = kv

    async def get(self, key: str) -> Versioned | None:
        try:
            entry = await self.kv.get(key)
        except nats.js.errors.KeyNotFoundError:
            return None
        return (entry.value or b"", entry.revision or 0)

    async def create(self, key: str, value: bytes) -> int | None:
        try:
            return int(await self.kv.create(key, value))
        except nats.js.errors.KeyWrongLastSequenceError:
            return None

    async def update(self, key: str, value: bytes, revision: int) -> int | None:
        try:
            return int(await self.kv.update(key, value, last=revision))
        except nats.js.errors.KeyWrongLastSequenceError:
            return None

    async def delete(self, key: str, revision: int) -> bool:
        try:
            await self.kv.delete(key, last=revision)
        except nats.js.errors.KeyWrongLastSequenceError:
            return False
        except nats.js.errors.APIError as err:
            if err.err_code in (10071, 10164):
                return False
            raise
        return True

    async def watch(self, key: str) -> AsyncIterator[Versioned | None]:
        watcher = await self.kv.watch(key)
        try:
            while True:
                entry = await watcher.updates(timeout=3600)  # type: ignore[no-untyped-call]
                if entry is None:
                    continue
                if entry.operation in (KV_DEL, KV_PURGE):
                    yield None
                else:
                    yield (entry.value or b"", entry.revision or 0)
        finally:
            with contextlib.suppress(Exception):
                await watcher.stop()  # type: ignore[no-untyped-call]


def match_formed_event(record: MatchRecord) -> events_pb2.Event:
    """The MatchFormed event of a committed match (options resolved, seats in order)."""
    wish = record.wish
    options = common_pb2.TableOptions()
    for name, value in wish.options:
        field = common_pb2.TableOptions.DESCRIPTOR.fields_by_name[name]
        if field.type == field.TYPE_BOOL:
            setattr(options, name, bool(value))
        else:
            setattr(options, name, value)
    formed = events_pb2.MatchFormed(
        match_id=record.match_id,
        table_id=record.table_id,
        variant=wish.variant,  # type: ignore[arg-type]
        options=options,
        seats=[
            common_pb2.Seat(index=i, player_id=s.player_id, bot=s.bot, client_seed=s.client_seed)
            for i, s in enumerate(record.seats)
        ],
        ticket_ids=[s.ticket_id for s in record.seats],
    )
    if wish.paid:
        formed.stake.coins = wish.stake
    time = Timestamp()
    time.FromNanoseconds(int(record.created_at * 1e9))
    return events_pb2.Event(time=time, match_formed=formed)


class MatchFormedPublisher:
    """Publishes MatchFormed with the match id as Nats-Msg-Id."""

    def __init__(self, nats: NatsConnection) -> None:
        self.nats = nats

    async def match_formed(self, match: MatchRecord) -> None:
        event = match_formed_event(match)
        await publish_once(
            self.nats.jetstream, subjects.match_formed(), event.SerializeToString(), msg_id=match.match_id
        )


class KvSeatIndex:
    """Player -> current table from the table service's `player_tables` bucket (issue 4/5)."""

    def __init__(self, kv: KeyValue) -> None:
        self.kv = kv

    async def current_table(self, player_id: str) -> str | None:
        try:
            entry = await self.kv.get(player_id)
        except (nats.js.errors.KeyNotFoundError, nats.js.errors.InvalidKeyError):
            return None
        value = (entry.value or b"").decode(errors="replace").strip()
        return value or None


class PartitionOwner:
    """Leases a fair share of the queue partitions and runs the matcher on them."""

    def __init__(self, nats: NatsConnection, service: MatchmakingService, instance: str) -> None:
        self.nats = nats
        self.service = service
        self.member = f"{subjects.token(instance.replace('.', '_'), 'instance')}-{uuid.uuid4().hex[:8]}"
        self.partitions = service.config.partitions
        self.owned: dict[int, int] = {}  # partition -> lease revision
        self.tasks: dict[int, asyncio.Task[None]] = {}
        self._loop_task: asyncio.Task[None] | None = None
        self._leases: KeyValue | None = None
        self._tickets: KeyValue | None = None

    async def start(self) -> None:
        js = self.nats.jetstream
        self._leases = await js.key_value(LEASES_BUCKET)
        self._tickets = await js.key_value(TICKETS_BUCKET)
        self._loop_task = asyncio.create_task(self._lease_loop())

    async def stop(self) -> None:
        if self._loop_task is not None:
            self._loop_task.cancel()
            await asyncio.gather(self._loop_task, return_exceptions=True)
        for p in list(self.tasks):
            await self._drop(p, release=True)
        if self._leases is not None:
            with contextlib.suppress(Exception):
                await self._leases.delete(f"member.{self.member}")

    async def _lease_loop(self) -> None:
        assert self._leases is not None
        leases = self._leases
        while True:
            try:
                await leases.put(f"member.{self.member}", b"1")
                try:
                    keys = await leases.keys()
                except nats.js.errors.NoKeysError:
                    keys = []
                members = max(1, sum(1 for k in keys if k.startswith("member.")))
                target = math.ceil(self.partitions / members)
                for p, rev in list(self.owned.items()):
                    try:
                        self.owned[p] = await leases.update(f"part.{p:02d}", self.member.encode(), last=rev)
                    except nats.js.errors.KeyWrongLastSequenceError:
                        log.warning("partition lease lost", partition=p)
                        await self._drop(p, release=False)
                if len(self.owned) > target:
                    await self._drop(max(self.owned), release=True)
                taken = {k for k in keys if k.startswith("part.")}
                for p in range(self.partitions):
                    if len(self.owned) >= target:
                        break
                    if p in self.owned or f"part.{p:02d}" in taken:
                        continue
                    try:
                        rev = await leases.create(f"part.{p:02d}", self.member.encode())
                    except nats.js.errors.KeyWrongLastSequenceError:
                        continue
                    self.owned[p] = rev
                    self.tasks[p] = asyncio.create_task(self._run(p))
                    log.info("partition leased", partition=p, member=self.member)
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # noqa: BLE001 - NATS hiccups: keep trying
                log.warning("lease loop error", error=repr(exc))
            await asyncio.sleep(0.5)

    async def _drop(self, p: int, *, release: bool) -> None:
        rev = self.owned.pop(p, None)
        task = self.tasks.pop(p, None)
        if task is not None:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
        self.service.release_partition(p)
        if release and rev is not None and self._leases is not None:
            with contextlib.suppress(Exception):
                await self._leases.delete(f"part.{p:02d}", last=rev)

    async def _run(self, p: int) -> None:
        """Watch the partition's tickets and lobbies; match on every tick."""
        assert self._tickets is not None
        self.service.pools.setdefault(p, {})
        self.service.lobbies.setdefault(p, {})
        watcher = await self._tickets.watch(f"*.{p:02d}.*")
        feed = asyncio.create_task(self._feed(p, watcher))
        try:
            while True:
                try:
                    await self.service.run_partition(p)
                except asyncio.CancelledError:
                    raise
                except Exception as exc:  # noqa: BLE001 - the next tick retries
                    log.warning("matching round failed", partition=p, error=repr(exc))
                await asyncio.sleep(self.service.config.tick_s)
        finally:
            feed.cancel()
            await asyncio.gather(feed, return_exceptions=True)
            with contextlib.suppress(Exception):
                await watcher.stop()  # type: ignore[no-untyped-call]

    async def _feed(self, p: int, watcher: KeyValue.KeyWatcher) -> None:
        while True:
            try:
                entry = await watcher.updates(timeout=3600)  # type: ignore[no-untyped-call]
            except nats.errors.TimeoutError:
                continue
            if entry is None:
                continue
            deleted = entry.operation in (KV_DEL, KV_PURGE)
            self.service.observe(p, entry.key, None if deleted else entry.value, entry.revision or 0)


async def start(nats: NatsConnection, service: MatchmakingService, instance: str = "matchmaking") -> PartitionOwner:
    """Wire the service to NATS and start leasing partitions."""
    js = nats.jetstream
    service.wire(KvStore(await js.key_value(TICKETS_BUCKET)), MatchFormedPublisher(nats))
    if isinstance(service.seat_index, NoSeatIndex):
        service.seat_index = KvSeatIndex(await js.key_value(SEATS_BUCKET))
    owner = PartitionOwner(nats, service, instance)
    await owner.start()
    return owner
