"""The matchmaking's outbound NATS adapters: the implementations of `trix.matchmaking.ports`.

Owns `KvStore` (the compare-and-set `Store` over the `match_tickets` KV bucket, its ticket
watches served by one `KeyWatchHub` subscription per process), `MatchFormedPublisher`
(MatchFormed on `trix.match.formed`, message id = match id, so a republish after a crash
is stored once) and `KvSeatIndex` (reads the table service's `player_tables` index). The
scoring service's `Wallet` and `RatingSource` (gRPC) are in `wallet`.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping

import nats.js.errors
from google.protobuf.timestamp_pb2 import Timestamp
from nats.aio.msg import Msg
from nats.aio.subscription import Subscription
from nats.js.kv import KV_DEL, KV_PURGE, KeyValue

from trix.matchmaking.ports import Versioned
from trix.matchmaking.records import MatchRecord
from trix.natsio import names, subjects
from trix.natsio.connection import NatsConnection
from trix.natsio.publish import kv_create, publish_once
from trix.v1 import common_pb2, events_pb2

TICKETS_BUCKET = names.MATCH_TICKETS_BUCKET
SEATS_BUCKET = names.PLAYER_TABLES_BUCKET
STALE_READS = 3
STALE_READ_S = 0.005
"""After a wake-up the key is read again up to STALE_READS times, 5, 10 and 20 ms apart, until
the write that woke it is readable (`KeyWatchHub.watch`); after that the 1 s re-read covers it."""
TICKET_PREFIX = "tk"
"""Tickets are `tk.<partition>.<id>` (`records.ticket_key`); WatchTicket reads them."""
QUEUE_STATUS_RECHECK_S = 5.0
"""A queue's count (`queue_status`, what a waiting player is shown) is re-read this often
without a write heard: a lost wake-up delays that line a little, never a match."""


async def kv_get(kv: KeyValue, key: str) -> Versioned | None:
    """A key's value and revision (None when absent or deleted)."""
    try:
        entry = await kv.get(key)
    except nats.js.errors.KeyNotFoundError:
        return None
    return (entry.value or b"", entry.revision or 0)


class KeyWatchHub:
    """Wakes the readers of a KV bucket's keys through ONE plain subscription per process.

    A `KeyValue.watch` is an ordered consumer on the bucket's stream; nats-server allows
    1,000 consumers per stream, so a watch per WatchTicket stream failed with "maximum
    consumers limit reached" once ~1,000 players waited at once (a load test's ramp of 250
    tables). Here every write to `$KV.<bucket>.<prefix>.>` only wakes the readers of that
    key, which then read the key (a direct get): the value read is the store's, in revision
    order. A reader also re-reads its key every `RECHECK_S` (which also covers a NATS
    reconnect): core NATS is at most once, and a write reaches the subscription before the
    stream stores it.
    In load-test ramps (100 tables at once) a few readers were woken, read the previous
    revision, and with a 30 s re-read waited that long for a match formed in the first
    seconds (the cause was not pinned down); with the 1 s re-read every ramp seated all
    tables in 8-10 s, as the consumer per watch did. A waiting ticket costs one get a second.
    """

    RECHECK_S = 1.0

    def __init__(
        self,
        nats: NatsConnection,
        bucket: str,
        prefix: str | tuple[str, ...],
        read: Callable[[str], Awaitable[Versioned | None]],
        recheck_s: Mapping[str, float] | None = None,
    ) -> None:
        self.nats = nats
        self.read = read
        """The key's value now (`KvStore.get`: None when absent or deleted)."""
        self.subject_prefix = f"$KV.{bucket}."
        self.key_prefixes = tuple(f"{p}." for p in ((prefix,) if isinstance(prefix, str) else prefix))
        self.recheck_s = {f"{p}.": s for p, s in (recheck_s or {}).items()}
        """A prefix's own re-read period instead of `RECHECK_S` (a queue's count: informational)."""
        self._readers: dict[str, set[asyncio.Event]] = {}
        self._subs: list[Subscription] = []

    def covers(self, key: str) -> bool:
        return key.startswith(self.key_prefixes)

    async def start(self) -> None:
        for prefix in self.key_prefixes:
            subject = f"{self.subject_prefix}{prefix}>"
            self._subs.append(await self.nats.client.subscribe(subject, cb=self._on_write))

    async def stop(self) -> None:
        for sub in self._subs:
            with contextlib.suppress(Exception):
                await sub.unsubscribe()

    async def _on_write(self, msg: Msg) -> None:
        for event in self._readers.get(msg.subject[len(self.subject_prefix) :], ()):
            event.set()

    async def watch(self, key: str) -> AsyncIterator[Versioned | None]:
        """The key's value now and after each change (None once it is deleted)."""
        wake = asyncio.Event()
        recheck = next((s for p, s in self.recheck_s.items() if key.startswith(p)), self.RECHECK_S)
        self._readers.setdefault(key, set()).add(wake)
        try:
            last = 0
            present = False
            woken = False
            stale = 0
            while True:
                wake.clear()
                entry = await self.read(key)
                changed = False
                if entry is None:
                    if present:
                        present, changed = False, True
                        yield None
                elif entry[1] > last:
                    last, present, changed = entry[1], True, True
                    yield entry
                if woken and not changed and stale < STALE_READS:
                    # The write reached this subscription before the stream stored it (core
                    # delivery does not wait for JetStream), or it was a refused compare-and-
                    # set: read again shortly, a few times, before waiting for the next write.
                    stale += 1
                    await asyncio.sleep(STALE_READ_S * 2 ** (stale - 1))
                    continue
                stale = 0
                try:
                    await asyncio.wait_for(wake.wait(), recheck)
                    woken = True
                except TimeoutError:
                    woken = False
        finally:
            readers = self._readers.get(key)
            if readers is not None:
                readers.discard(wake)
                if not readers:
                    del self._readers[key]


class KvStore:
    """`trix.matchmaking.ports.Store` over a JetStream KV bucket."""

    def __init__(
        self,
        kv: KeyValue,
        js: nats.js.JetStreamContext | None = None,
        bucket: str = TICKETS_BUCKET,
        hub: KeyWatchHub | None = None,
    ) -> None:
        self.kv = kv
        self.js = js
        self.bucket = bucket
        self.hub = hub
        """Serves `watch` of the keys it covers without a consumer per watch (`start`)."""

    async def get(self, key: str) -> Versioned | None:
        return await kv_get(self.kv, key)

    async def create(self, key: str, value: bytes) -> int | None:
        return await kv_create(self.kv, key, value)

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

    async def purge(self, key: str, revision: int) -> None:
        """Stream purge of the key's subject below `revision + 1`: no marker, a newer value stays."""
        if self.js is None:
            raise RuntimeError("KvStore.purge needs the JetStream context")
        await self.js.purge_stream(names.kv_stream(self.bucket), seq=revision + 1, subject=f"$KV.{self.bucket}.{key}")

    async def watch(self, key: str) -> AsyncIterator[Versioned | None]:
        if self.hub is not None and self.hub.covers(key):
            async for item in self.hub.watch(key):
                yield item
            return
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
            common_pb2.Seat(
                index=i, player_id=s.player_id, bot=s.bot, client_seed=s.client_seed, display_name=s.display_name
            )
            for i, s in enumerate(record.seats)
        ],
        ticket_ids=[s.ticket_id for s in record.seats],
        private_table=record.private,
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
    """Player -> current table from the table service's `player_tables` bucket."""

    def __init__(self, kv: KeyValue) -> None:
        self.kv = kv

    async def _value(self, player_id: str) -> str:
        try:
            entry = await self.kv.get(player_id)
        except (nats.js.errors.KeyNotFoundError, nats.js.errors.InvalidKeyError):
            return ""
        return (entry.value or b"").decode(errors="replace").strip()

    async def current_table(self, player_id: str) -> str | None:
        value = await self._value(player_id)
        return None if not value or value.startswith(names.ENDED_TABLE_PREFIX) else value

    async def has_ended(self, player_id: str, table_id: str) -> bool:
        return await self._value(player_id) == names.ENDED_TABLE_PREFIX + table_id
