"""NATS handlers and JetStream storage of the table service.

Owns the table's NATS side:
- `JetStreamStore`, the `TableStore` port: each table's log on `trix.table.log.<t>` in
  the TABLE_LOG stream (Nats-Msg-Id = table + action id for deduplication, and
  Nats-Expected-Last-Subject-Sequence so a stale writer cannot append), snapshots on
  TABLE_SNAPSHOTS, server seeds in the `table_secrets` bucket, the player -> current
  table index in `player_tables`;
- `NatsSink`, the `EventSink` port: an action's event copies as one core NATS batch per
  audience on the subjects it may read (docs/rules.md §14), unstored (the log entry is the
  action's one stored message; readers' gaps are served by `read_events`, issue 16), and
  the results scoring settles from on the durable TABLE_RESULTS stream;
- the shard leases' NATS side (issue 5): `KvLeaseStore` (the `table_leases` and
  `table_replicas` buckets, CAS on revisions), the watchers feeding `LeaseManager`, and
  `ShardRouter`, the `ShardHost` that rebuilds a shard's tables from snapshot + log when
  its lease is won, and only then subscribes `trix.table.cmd.<shard>.*` (so commands
  reach the owner, and nobody while a shard changes hands: the caller sees no
  responders and retries with the same action id); when the lease is handed over it
  drains the subscription and finishes the commands in flight first;
- the MatchFormed consumer (a durable pull consumer the replicas share, `PullConsumer`;
  the create goes to the owner as a command), the RecordArchived consumer (`Archiver`, the
  same: scoring stored a finished game's record, the owner purges the table's log,
  snapshot and seed, ADR 0003), and
  `TableBus`, which the gRPC API uses to forward commands to the owner and to read a
  seat's stored events.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import aclosing
from typing import Protocol, TypeVar

import nats.errors
import structlog
from nats.aio.msg import Msg
from nats.aio.subscription import Subscription
from nats.js.api import AckPolicy, ConsumerConfig, RawStreamMsg
from nats.js.client import JetStreamContext
from nats.js.errors import APIError, KeyNotFoundError, KeyWrongLastSequenceError, NotFoundError
from nats.js.kv import KV_DEL, KV_PURGE, KeyValue

from trix.errors import InvalidArgument, Unavailable, from_kind
from trix.natsio import names, seatstream, subjects
from trix.natsio.coalesce import subscribe_direct
from trix.natsio.connection import NatsConnection
from trix.natsio.consumer import IdempotentEventHandler, MemoryProgress, PullConsumer
from trix.natsio.publish import EXPECTED_LAST_SUBJECT_SEQ_HEADER, JetStreams, ask_until, publish_once
from trix.runtime.identity import ROLE_SERVICE, TOKEN_HEADER, sign
from trix.runtime.tasks import cancel_and_wait, start_kept
from trix.table.codec import INTERNAL_KIND, handle_command
from trix.table.config import TableConfig
from trix.table.leases import LeaseManager
from trix.table.service import EventSink, LogConflict, StaleWriter, TableService, TableStore
from trix.table.table import ALL, PUBLIC_ONLY, Routed
from trix.v1 import events_pb2, table_pb2

RESULT_BODIES = frozenset({"table_created", "seat_control_changed", "deal_scored", "game_ended"})
"""The public events scoring settles from: stored on TABLE_RESULTS (issue 16)."""

log = structlog.get_logger("trix.table.nats")

LOG_STREAM = names.TABLE_LOG_STREAM
SNAPSHOT_STREAM = names.TABLE_SNAPSHOTS_STREAM
SECRETS_BUCKET = names.TABLE_SECRETS_BUCKET
PLAYERS_BUCKET = names.PLAYER_TABLES_BUCKET
WRONG_LAST_SEQUENCE = 10071
WRONG_LAST_SEQUENCE_IN_PROCESS = 10164
"""A clustered log's leader cannot check the expected sequence while another entry of the table
is in process: retried by `publish_once` (`IN_PROCESS`); still so at its deadline, a conflict."""
MATCH_CONSUMER = names.TABLE_MATCH_CONSUMER
"""Durable pull consumer of MatchFormed, shared by the replicas (issue 5; ADR 0020: it was the
push consumer `table-match-formed-q` of a queue group)."""
WRITER_HEADER = "Trix-Writer"
"""Header of a log entry: which replica appended it, under which lease epoch (the KV revision at
which it won the shard). Epochs only grow along a table's log: a stale owner never appends."""
LEASES_BUCKET = names.TABLE_LEASES_BUCKET
ARCHIVE_STREAM = names.SCORING_ARCHIVED_STREAM
ARCHIVE_CONSUMER = names.TABLE_ARCHIVE_CONSUMER
"""Durable pull consumer of RecordArchived, shared by the replicas (issue 4; it was the push
consumer `table-records-archived-q` of a queue group)."""
CONSUMER_BATCH = 16
"""Messages one replica fetches at once from a shared consumer (the others fetch the rest)."""
CONSUMER_FETCH_S = 0.5
"""A fetch waits this long for messages: also how long a stopping consumer may wait for the
fetch in flight (what it brings is applied and acked, not left to the ack wait)."""
ARCHIVE_RETRY_S = 0.5
REPLICAS_BUCKET = names.TABLE_REPLICAS_BUCKET
APPEND_ATTEMPT_S = 1.0
"""One attempt of a log append waits this long before it is sent again (same message id): a
publish into a SIGSTOPped or cut-off leader gets no answer, and the first attempt after the
election should not wait out a longer timeout (issue 19). A late ack of an earlier attempt
makes the next one a duplicate: the table reloads and answers the stored result."""
READ_ATTEMPT_S = 1.0
"""One attempt of a read of a table's storage (a log entry, its snapshot, its seed, the log's
tables) waits this long before it is asked again. A JetStream API request sent while the stream
has no leader (the RAFT election after its leader died, 4-9 s) is never answered: with the
connection's 5 s request timeout a read sent just before the election ended waited out the rest
of its 5 s, holding the table's lock (every command of the table queued behind it) or a shard's
rebuild, and back-to-back elections chained such waits (issue 19: play resumed 4.6 s after
TABLE_LOG answered again, three 5 s timeouts in a row)."""
LIST_ATTEMPT_S = 3.0
"""The same for the list of the log's tables (`log_tables`, at a shard's rebuild): one stream
info listing every table's subject, heavier than a read of one message."""
READ_DEADLINE_S = 10.0
"""A read NATS does not answer is asked again for this long (an election, twice if the first
fails), then its error is raised (the command answers UNAVAILABLE, the rebuild is tried again)."""
_T = TypeVar("_T")


class NewTable(Protocol):
    """Builds the service from its adapters (`TableService` itself; tests add a clock, seeds)."""

    def __call__(
        self,
        config: TableConfig,
        store: TableStore,
        sink: EventSink,
        *,
        may_write: Callable[[str], bool],
        on_stale_writer: Callable[[str], None],
    ) -> TableService: ...


class JetStreamStore:
    """`TableStore` on JetStream (see the module docstring)."""

    def __init__(self, nats: NatsConnection, writer: Callable[[str], str]) -> None:
        self.nats = nats
        self.writer = writer
        """`<replica>/<lease epoch>` of a table's writer, stored with each entry: the fencing of
        `append`, and the fault runs' one-writer check."""
        self.tails: dict[str, tuple[int, int]] = {}
        """Table -> (log sequence, writer epoch) of the last entry this replica appended or read."""
        self._reads = JetStreams(nats)

    async def _read(self, call: Callable[[JetStreamContext], Awaitable[_T]], attempt_s: float = READ_ATTEMPT_S) -> _T:
        """`call` on a JetStream context whose requests wait `attempt_s`, asked again while NATS
        does not answer (`RETRYABLE`), for `READ_DEADLINE_S`: answered right after an election
        instead of after the lost request's timeout. Reads only: asking again is harmless."""
        js = self._reads.waiting(attempt_s)
        return await ask_until(lambda _timeout: call(js), deadline_s=READ_DEADLINE_S, attempt_s=attempt_s)

    async def append(self, table_id: str, entry: bytes, msg_id: str, expected_last: int) -> int:
        """Append after the entry at `expected_last`, fenced by the writer epoch (issue 19): a
        writer appends only after an entry of its own epoch or an older one. Together with
        Nats-Expected-Last-Subject-Sequence (the entry appended after is the log's last), the
        epochs along a table's log never go back, so a stale owner (its lease taken by a newer
        one it has not heard of: a paused process, a partition, a watcher gone deaf) that reloaded
        the table after a conflict cannot append after the new owner; `StaleWriter`."""
        writer = self.writer(table_id)
        headers = {EXPECTED_LAST_SUBJECT_SEQ_HEADER: str(expected_last), WRITER_HEADER: writer}
        epoch = writer_epoch(writer)
        if expected_last > 0:
            before = await self._epoch_at(table_id, expected_last)
            if before > epoch:
                raise StaleWriter(f"{table_id}: entry {expected_last} has writer epoch {before} > {epoch}")
        try:
            ack = await publish_once(
                self.nats.jetstream,
                subjects.table_log(table_id),
                entry,
                msg_id=msg_id,
                headers=headers,
                attempt_timeout_s=APPEND_ATTEMPT_S,
            )
        except APIError as err:
            if err.err_code in (WRONG_LAST_SEQUENCE, WRONG_LAST_SEQUENCE_IN_PROCESS):
                raise LogConflict(str(err)) from None
            raise
        if ack.duplicate:
            # This action id is in the log already (stored by an earlier attempt or an earlier
            # owner): the caller reloads the table and answers the first result.
            raise LogConflict(f"duplicate action {msg_id}")
        self.tails[table_id] = (int(ack.seq), epoch)
        return int(ack.seq)

    async def _epoch_at(self, table_id: str, seq: int) -> int:
        """The writer epoch of the table's log entry `seq` (known from the last append or read,
        else read: after a snapshot with no entry behind it)."""
        tail = self.tails.get(table_id)
        if tail is not None and tail[0] == seq:
            return tail[1]
        try:
            msg = await self._read(lambda js: js.get_msg(LOG_STREAM, seq=seq))  # the leader's answer (`read_log`)
        except NotFoundError:
            return 0  # purged: the table is finished, nothing is appended after it
        if msg.subject != subjects.table_log(table_id):
            return 0  # not this table's entry: the expected-sequence check refuses the append
        epoch = writer_epoch((msg.headers or {}).get(WRITER_HEADER, ""))
        self.tails[table_id] = (seq, epoch)
        return epoch

    async def read_log(self, table_id: str, after: int) -> AsyncIterator[tuple[int, bytes]]:
        """The table's entries after log sequence `after`, from the stream's leader: a direct get
        may be answered by a follower still behind (a node catching up after a fault, issue 19),
        and a table rebuilt without its last entries answered "last_seen_sequence is ahead of
        the table" until it caught up."""
        subject = subjects.table_log(table_id)

        async def entry_from(at: int) -> RawStreamMsg:
            return await self._read(lambda js: js.get_msg(LOG_STREAM, seq=at, subject=subject, next=True))

        seq = after + 1
        while True:
            try:
                msg = await entry_from(seq)
            except NotFoundError:
                return
            assert msg.seq is not None
            self.tails[table_id] = (msg.seq, writer_epoch((msg.headers or {}).get(WRITER_HEADER, "")))
            yield msg.seq, msg.data or b""
            seq = msg.seq + 1

    async def log_tables(self) -> list[str]:
        info = await self._read(
            lambda js: js.stream_info(LOG_STREAM, subjects_filter=subjects.all_table_logs()), LIST_ATTEMPT_S
        )
        prefix = subjects.table_log("x")[:-1]
        return sorted(s[len(prefix) :] for s in (info.state.subjects or {}))

    async def keep_secret(self, table_id: str, seed: bytes) -> bytes:
        """Store `seed` as the table's unless one is stored (compare-and-set: create); returns
        the table's seed, the first stored (issue 19: a create that ran again, a MatchFormed
        redelivered while the first create's entry was still in process, overwrote the seed
        the log's create entry was made with, and the table never replayed again)."""
        kv = await self._reads.key_value(SECRETS_BUCKET)
        for _ in range(40):
            try:
                await kv.create(subjects.token(table_id), seed)
                return seed
            except KeyWrongLastSequenceError:
                stored = await self.get_secret(table_id)  # the leader's answer
                if stored is not None:
                    return stored
            await asyncio.sleep(0.1)  # another create of it in process: its write lands first
        raise Unavailable("the table's seed is being stored; retry")

    async def get_secret(self, table_id: str) -> bytes | None:
        """From the bucket's leader (not a direct get: a follower behind may not have a new
        table's seed yet, and the table would be skipped by a rebuild)."""
        key = f"$KV.{SECRETS_BUCKET}.{subjects.token(table_id)}"
        try:
            msg = await self._read(lambda js: js.get_last_msg(names.kv_stream(SECRETS_BUCKET), key))
        except NotFoundError:
            return None
        if (msg.headers or {}).get("KV-Operation") in (KV_DEL, KV_PURGE):
            return None
        return msg.data

    async def put_snapshot(self, table_id: str, data: bytes) -> None:
        await publish_once(self.nats.jetstream, subjects.table_snapshot(table_id), data)

    async def get_snapshot(self, table_id: str) -> bytes | None:
        try:
            msg = await self._read(lambda js: js.get_last_msg(SNAPSHOT_STREAM, subjects.table_snapshot(table_id)))
        except NotFoundError:
            return None
        return msg.data

    async def set_player_table(self, player_id: str, table_id: str) -> None:
        kv = await self._reads.key_value(PLAYERS_BUCKET)
        await kv.put(subjects.token(player_id, "player id"), table_id.encode())

    async def clear_player_table(self, player_id: str, table_id: str) -> None:
        kv = await self._reads.key_value(PLAYERS_BUCKET)
        try:
            entry = await kv.get(subjects.token(player_id, "player id"))
        except KeyNotFoundError:
            return
        if entry.value == table_id.encode():
            await kv.delete(player_id)

    async def purge_table(self, table_id: str) -> None:
        # Log first: a crash after it leaves a finished snapshot, which recovery reads as a
        # finished table (nothing to republish), and the redelivered signal purges the rest.
        js = self.nats.jetstream
        self.tails.pop(table_id, None)
        await js.purge_stream(LOG_STREAM, subject=subjects.table_log(table_id))
        await js.purge_stream(SNAPSHOT_STREAM, subject=subjects.table_snapshot(table_id))
        await js.purge_stream(
            names.kv_stream(SECRETS_BUCKET), subject=f"$KV.{SECRETS_BUCKET}.{subjects.token(table_id)}"
        )


def writer_epoch(writer: str) -> int:
    """`<replica>/<epoch>` (a log entry's WRITER_HEADER) -> the epoch; 0 for none."""
    _, _, epoch = writer.rpartition("/")
    return int(epoch) if epoch.isdigit() else 0


class NatsSink:
    """`EventSink` on core NATS, plus the durable results (see the module docstring).

    An action's events go out twice, on the same connection: first on the table's feed, one
    batch with the public copies and every seat's own (what the gateways read: each seat takes
    its own copies, a spectator none, docs/rules.md §14), then the same public copies alone on
    the public subject (the timers, public tools). The feed batch is the public batch's bytes
    followed by the own copies' (concatenated protobuf messages merge): the public copies are
    serialized once. A core publish that fails (NATS reconnecting) is not retried: readers see
    the gap and ask the owner. The results are published one after the other, each awaited
    (`publish_once`, Nats-Msg-Id `<table>.<sequence>`: stored once), before the command is
    answered, so scoring never misses one and never gets one twice."""

    def __init__(self, nats: NatsConnection) -> None:
        self.nats = nats
        self.published = 0
        """Batches published (tests, benchmarks)."""

    async def publish(self, table_id: str, routed: list[Routed], cause: events_pb2.ActionCause | None = None) -> bool:
        """Publish an action's events; whether its `cause` went out on the feed (the gateway
        that sent it answers the actor from there)."""
        own: dict[int, list[events_pb2.Event]] = {}
        public: list[events_pb2.Event] = []
        for r in routed:
            if r.audience in (ALL, PUBLIC_ONLY):
                public.append(r.event)
            else:
                own.setdefault(r.audience, []).append(r.event)
        public_bytes = events_pb2.TableEventBatch(events=public, cause=cause).SerializeToString() if public else b""
        feed = public_bytes
        if own:
            seats = [events_pb2.SeatCopies(seat=seat, events=events) for seat, events in sorted(own.items())]
            feed += events_pb2.TableEventBatch(seats=seats).SerializeToString()
        announced = await self._publish(subjects.table_feed(table_id), feed) and cause is not None and bool(public)
        await self._publish(subjects.public_events(table_id), public_bytes)
        await self.publish_results(table_id, routed)
        return announced

    async def _publish(self, subject: str, data: bytes) -> bool:
        """One core publish of a batch (none if empty); False if it failed."""
        if not data:
            return False
        try:
            await self.nats.client.publish(subject, data)
        except Exception as exc:  # noqa: BLE001 - readers ask the owner for what they miss
            log.info("event batch not published", subject=subject, error=type(exc).__name__)
            return False
        self.published += 1
        return True

    async def publish_results(self, table_id: str, routed: list[Routed]) -> None:
        for r in routed:
            if r.audience == ALL and r.event.WhichOneof("body") in RESULT_BODIES:
                await publish_once(
                    self.nats.jetstream,
                    subjects.table_results(table_id),
                    r.event.SerializeToString(),
                    msg_id=f"{table_id}.{r.event.sequence}",
                )


class TableBus:
    """What the gRPC API needs from NATS: forward a command to the owner, read stored events."""

    def __init__(self, nats: NatsConnection, timeout_s: float) -> None:
        self.nats = nats
        self.timeout_s = timeout_s
        self._feeds: seatstream.LiveFeeds | None = None

    async def forward(
        self, table_id: str, command: table_pb2.TableCommand, token: str | None
    ) -> table_pb2.TableCommandReply:
        """Send a command to the table's owner; raises its domain error."""
        headers = {TOKEN_HEADER: token} if token else None
        subject = subjects.table_command(table_id)
        data = command.SerializeToString()
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.timeout_s
        while True:
            # No responders: the table's shard is changing hands (issue 5); the same bytes
            # (same action id) are sent again until the deadline, so nothing applies twice.
            try:
                msg = await self.nats.client.request(
                    subject, data, timeout=max(0.1, deadline - loop.time()), headers=headers
                )
                break
            except nats.errors.NoRespondersError:
                if loop.time() + 0.1 >= deadline:
                    raise Unavailable("the table's owner did not answer; retry with the same action id") from None
                await asyncio.sleep(0.1)
            except (TimeoutError, nats.errors.TimeoutError):
                raise Unavailable("the table's owner did not answer; retry with the same action id") from None
        reply = table_pb2.TableCommandReply.FromString(msg.data)
        if reply.HasField("error"):
            if reply.error.kind == INTERNAL_KIND:
                raise RuntimeError(reply.error.message)
            raise from_kind(reply.error.kind, reply.error.message)
        return reply

    async def events(
        self, table_id: str, seat: int | None, after: int, token: str | None = None
    ) -> AsyncIterator[events_pb2.Event]:
        """What `seat` (None: the public) may see after a table sequence: what the owner holds,
        then live, until the game ends (`trix.natsio.seatstream`; the live part shared by the
        streams of a table through one `LiveFeeds` per connection). `token` is the caller's:
        the owner serves only what it may see."""
        conn = self.nats
        if self._feeds is None or self._feeds.nats is not conn:
            self._feeds = seatstream.LiveFeeds(conn)

        async def send(command: table_pb2.TableCommand) -> table_pb2.TableCommandReply:
            return await self.forward(table_id, command, token)

        history = seatstream.owner_history(table_id, seat, send)
        reader = seatstream.follow(
            conn, table_id, seat, timeout_s=self.timeout_s, history=history, feeds=self._feeds, after=after
        )
        async with aclosing(reader) as events:
            async for event in events:
                if event.sequence > after:
                    yield event


class KvLeaseStore:
    """`LeaseStore` on the `table_leases` (key = shard) and `table_replicas` (key = replica) buckets."""

    def __init__(self, leases: KeyValue, replicas: KeyValue) -> None:
        self.leases = leases
        self.replicas = replicas

    async def heartbeat(self, replica: str) -> None:
        await self.replicas.put(replica, b"up")

    async def leave(self, replica: str) -> None:
        await self.replicas.delete(replica)

    async def create(self, shard: int, owner: str) -> int | None:
        try:
            return int(await self.leases.create(str(shard), owner.encode()))
        except KeyWrongLastSequenceError:
            return None

    async def update(self, shard: int, owner: str, last: int) -> int | None:
        try:
            return int(await self.leases.update(str(shard), owner.encode(), last=last))
        except KeyWrongLastSequenceError:
            return None

    async def release(self, shard: int, last: int) -> bool:
        try:
            await self.leases.delete(str(shard), last=last)
        except KeyWrongLastSequenceError:
            return False
        except APIError as err:
            if err.err_code == WRONG_LAST_SEQUENCE:  # a delete's CAS failure comes as a plain 400
                return False
            raise
        return True


async def watch_leases(kv: KeyValue, manager: LeaseManager, *, members: bool) -> asyncio.Task[None]:
    """Feed every lease (or heartbeat) change to the manager; returns once the current values are in."""
    watcher = await kv.watchall()
    ready = asyncio.get_running_loop().create_future()

    async def run() -> None:
        try:
            async for entry in watcher:
                if entry is None:
                    if not ready.done():
                        ready.set_result(None)
                    continue
                alive = entry.operation not in (KV_DEL, KV_PURGE)
                if members:
                    manager.on_member(entry.key, alive)
                elif entry.key.isdigit():
                    owner = (entry.value or b"").decode() if alive else None
                    manager.on_lease(int(entry.key), owner, int(entry.revision or 0))
        finally:
            with contextlib.suppress(Exception):  # its consumer goes (or expires, NATS away)
                await asyncio.wait_for(watcher.stop(), 2.0)  # type: ignore[no-untyped-call]

    task = asyncio.ensure_future(run())
    await asyncio.wait({task, ready}, return_when=asyncio.FIRST_COMPLETED)
    return task


class LeaseWatchers:
    """The two watchers feeding a `LeaseManager` (heartbeats, leases), started again from every
    key's latest value when the manager finds one deaf (`LeaseManager.rewatch`, issue 19)."""

    def __init__(self, replicas: KeyValue, leases: KeyValue, manager: LeaseManager) -> None:
        self.replicas = replicas
        self.leases = leases
        self.manager = manager
        self.tasks: list[asyncio.Task[None]] = []
        self.restarts = 0

    async def _both(self) -> list[asyncio.Task[None]]:
        fresh: list[asyncio.Task[None]] = []
        try:
            fresh.append(await watch_leases(self.replicas, self.manager, members=True))
            fresh.append(await watch_leases(self.leases, self.manager, members=False))
        except BaseException:
            await cancel_and_wait(fresh)
            raise
        return fresh

    async def start(self) -> None:
        self.tasks = await self._both()
        self.manager.rewatch = self.restart

    async def restart(self) -> None:
        fresh = await self._both()  # the old ones go once the new ones delivered the current values
        old, self.tasks = self.tasks, fresh
        self.restarts += 1
        await cancel_and_wait(old)

    async def stop(self) -> None:
        self.manager.rewatch = None
        await cancel_and_wait(self.tasks)


def shard_of_subject(subject: str) -> int:
    """`trix.table.cmd.<shard>.<table>` -> shard."""
    return int(subject.split(".")[3])


class ShardRouter:
    """`ShardHost`: serve the commands of the shards this replica holds (see the module docstring).

    It builds the two parts that ask it things, handing each itself: the service (whether
    this replica serves a table's shard, before each append; the lease epoch its store
    writes with each entry) and the lease manager (which shards were won or lost)."""

    def __init__(
        self,
        nats: NatsConnection,
        new_service: Callable[[ShardRouter], TableService],
        new_manager: Callable[[ShardRouter], LeaseManager],
    ) -> None:
        self.nats = nats
        self.subs: dict[int, Subscription] = {}
        self.draining: set[int] = set()
        self.inflight: dict[int, set[asyncio.Task[None]]] = {}
        self.served = 0
        self.service = new_service(self)
        self.manager = new_manager(self)

    def serving(self, shard: int) -> bool:
        """Subscribed (or draining) and the lease still valid: may answer the shard's commands."""
        if shard not in self.subs and shard not in self.draining:
            return False
        return self.manager.valid(shard)

    def owns_table(self, table_id: str) -> bool:
        return self.serving(subjects.table_shard(table_id))

    def stale_writer(self, table_id: str) -> None:
        """The table's append was fenced off (a newer owner wrote its log): the shard is lost."""
        self.manager.fenced(subjects.table_shard(table_id))

    def writer(self, table_id: str) -> str:
        held = self.manager.held.get(subjects.table_shard(table_id))
        return f"{self.manager.me}/{held.epoch if held else 0}"

    async def acquired(self, shards: list[int]) -> None:
        wanted = set(shards)
        t0 = time.perf_counter()
        count = await self.service.recover(lambda t: subjects.table_shard(t) in wanted)
        for shard in shards:
            if shard in self.subs or shard not in self.manager.held:
                continue
            self.subs[shard] = await subscribe_direct(
                self.nats.client, subjects.table_commands_of_shard(shard), self._on_command
            )
        log.info("shards serving", shards=shards, tables=count, rebuild_s=round(time.perf_counter() - t0, 3))

    async def releasing(self, shard: int) -> None:
        sub = self.subs.pop(shard, None)
        if sub is None:
            return
        self.draining.add(shard)
        try:
            await asyncio.wait_for(sub.drain(), 2.0)  # type: ignore[no-untyped-call]  # no new commands; queued ones are dispatched
        except Exception as exc:  # noqa: BLE001 - the subscription is gone either way
            log.warning("shard drain failed", shard=shard, error=repr(exc))
        tasks = self.inflight.get(shard, set())
        if tasks:
            await asyncio.wait(tasks, timeout=2.0)  # finish the commands in flight
        self.draining.discard(shard)

    async def lost(self, shard: int) -> None:
        self.draining.discard(shard)
        sub = self.subs.pop(shard, None)
        if sub is not None:
            try:
                await sub.unsubscribe()
            except Exception as exc:  # noqa: BLE001 - connection closed: nothing to undo
                log.warning("shard unsubscribe failed", shard=shard, error=repr(exc))
        dropped = self.service.forget(lambda t: subjects.table_shard(t) == shard)
        log.info("shard dropped", shard=shard, tables=dropped)

    def _on_command(self, msg: Msg) -> None:
        """Direct (`subscribe_direct`): each command on a task of its own, at once."""
        shard = shard_of_subject(msg.subject)
        if not self.serving(shard):
            return  # not ours (any more): no answer, the owner's comes, or the caller retries
        start_kept(self.inflight.setdefault(shard, set()), self._answer(msg))

    async def _answer(self, msg: Msg) -> None:
        await answer_command(self.service, msg)
        self.served += 1


async def answer_command(service: TableService, msg: Msg) -> bytes | None:
    """One command message on a table's command subject, answered as its owner answers it
    (`trix.table.codec.handle_command`, quiet for a sender with `ACCEPTED_BY_CAUSE_HEADER`);
    the reply sent to `msg.reply`, or None when the action's feed batch was its answer."""
    headers = msg.headers or {}
    quiet = headers.get(subjects.ACCEPTED_BY_CAUSE_HEADER) == "1"
    reply = await handle_command(service, msg.data, headers.get(TOKEN_HEADER), quiet=quiet)
    if reply is not None and msg.reply:
        try:
            await msg.respond(reply)
        except Exception as exc:  # noqa: BLE001 - the caller retries
            log.warning("reply failed", error=repr(exc))
    return reply


class MatchCreator:
    """MatchFormed -> CreateTable, sent to the table's owner like any command."""

    def __init__(self, nats: NatsConnection, service: TableService, deadline_s: float = 60.0) -> None:
        self.nats = nats
        self.service = service
        self.deadline_s = deadline_s

    async def on_match(self, event: events_pb2.Event) -> None:
        if not event.HasField("match_formed"):
            return
        m = event.match_formed
        request = table_pb2.CreateTableRequest(
            table_id=m.match_id,
            variant=m.variant,
            options=m.options,
            seats=m.seats,
            private_table=m.private_table,
            ticket_ids=m.ticket_ids,
        )
        if m.HasField("stake"):
            request.stake.CopyFrom(m.stake)
        command = table_pb2.TableCommand(create_table=request).SerializeToString()
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.deadline_s
        while True:
            token = sign(self.service.config.keys.service, ROLE_SERVICE, "matchmaking", time.time(), ttl_s=60)
            try:
                msg = await self.nats.client.request(
                    subjects.table_command(m.match_id), command, timeout=5.0, headers={TOKEN_HEADER: token}
                )
            except (TimeoutError, nats.errors.NoRespondersError, nats.errors.TimeoutError):
                if loop.time() > deadline:
                    raise  # not acknowledged: redelivered later
                await asyncio.sleep(0.2)
                continue
            reply = table_pb2.TableCommandReply.FromString(msg.data)
            if not reply.HasField("error"):
                return
            if reply.error.kind in ("Unavailable", INTERNAL_KIND) and loop.time() < deadline:
                await asyncio.sleep(0.2)
                continue
            log.error("match refused", match_id=m.match_id, error=reply.error.message)  # not retried forever
            return


class Archiver:
    """RecordArchived (scoring stored a finished game's record) -> purge the table (issue 4).

    A durable pull consumer the replicas share on SCORING_ARCHIVED: the message is acked
    once the table's owner has purged (or refused) it; a replica that does not own the
    table, or any failure, naks it for redelivery (to any replica), so a restart of either
    side loses no signal.
    """

    def __init__(self, service: TableService) -> None:
        self.service = service
        self.purged = 0

    async def on_msg(self, msg: Msg) -> None:
        try:
            body = events_pb2.RecordArchived.FromString(msg.data)
        except Exception:  # noqa: BLE001 - a poison message must not block the consumer
            log.error("undecodable RecordArchived dropped", subject=msg.subject)
            await msg.term()
            return
        try:
            if await self.service.archive(body.table_id, body.game_ended_sequence):
                self.purged += 1
        except Unavailable:
            await msg.nak(delay=ARCHIVE_RETRY_S)  # not the owner (now): redelivered
            return
        except InvalidArgument as err:
            log.error("bad RecordArchived dropped", error=str(err))
            await msg.term()
            return
        except Exception as exc:  # noqa: BLE001 - NATS trouble: try again later
            log.warning("table purge failed, retrying", table_id=body.table_id, error=repr(exc))
            await msg.nak(delay=ARCHIVE_RETRY_S)
            return
        await msg.ack()


class TableReplica:
    """What `start` leaves running: the router, the lease manager and their watchers."""

    def __init__(
        self,
        router: ShardRouter,
        manager: LeaseManager,
        watchers: LeaseWatchers,
        consumers: list[PullConsumer],
    ) -> None:
        self.router = router
        self.service = router.service
        self.manager = manager
        self.watchers = watchers
        self.consumers = consumers
        """MatchFormed and RecordArchived: stopped first (the batch in hand finishes)."""

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
        await self.watchers.stop()


def replica_id(instance: str) -> str:
    """A replica's id in the leases: its instance name plus a fresh suffix (a restart is a new replica)."""
    base = "".join(c if c.isalnum() or c in "-_" else "-" for c in instance)[:60] or "table"
    return f"{base}-{uuid.uuid4().hex[:8]}"


async def start(nats: NatsConnection, config: TableConfig, new_service: NewTable = TableService) -> TableReplica:
    """Build the service on its adapters, join the replicas, win a fair share of the shards
    (rebuilding their tables), serve their commands, and consume MatchFormed and RecordArchived
    from the pull consumers the replicas share (`TableReplica.service` is the service)."""
    js = nats.jetstream
    leases_kv = await js.key_value(LEASES_BUCKET)
    replicas_kv = await js.key_value(REPLICAS_BUCKET)
    leases = KvLeaseStore(leases_kv, replicas_kv)
    me = replica_id(config.runtime.instance)

    def table_service(router: ShardRouter) -> TableService:
        store = JetStreamStore(nats, router.writer)
        return new_service(
            config, store, NatsSink(nats), may_write=router.owns_table, on_stale_writer=router.stale_writer
        )

    router = ShardRouter(nats, table_service, lambda host: LeaseManager(me, leases, host))
    service, manager = router.service, router.manager
    watchers = LeaseWatchers(replicas_kv, leases_kv, manager)
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

    async def on_live(msg: Msg) -> None:
        """`trix.table.live`: this replica's unfinished tables (a timers replica catching up)."""
        live = table_pb2.LiveTablesResponse()
        for table_id, table in list(service.tables.items()):
            if not table.finished and router.owns_table(table_id):
                live.tables.add(table_id=table_id, sequence=table.sequence)
        if msg.reply:
            with contextlib.suppress(Exception):
                await msg.respond(live.SerializeToString())

    await nats.client.subscribe(subjects.table_live(), cb=on_live)
    # After a reconnect, each live table's last batch goes again: one sent into the dying
    # connection is lost for every reader (core NATS), the timers included (issue 19). At
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
    return TableReplica(router, manager, watchers, [matches, archived])
