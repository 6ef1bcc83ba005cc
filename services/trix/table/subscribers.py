"""NATS handlers and JetStream storage of the table service.

Owns the table's NATS side:
- `JetStreamStore`, the `TableStore` port: each table's log on `trix.table.log.<t>` in
  the TABLE_LOG stream (Nats-Msg-Id = table + action id for deduplication, and
  Nats-Expected-Last-Subject-Sequence so a stale writer cannot append), snapshots on
  TABLE_SNAPSHOTS, server seeds in the `table_secrets` bucket, the player -> current
  table index in `player_tables`;
- `JetStreamSink`, the `EventSink` port: every event copy on the subjects its audience
  may read (RULES.md §14), stored by TABLE_EVENTS for resume;
- the shard leases' NATS side (issue 5): `KvLeaseStore` (the `table_leases` and
  `table_replicas` buckets, CAS on revisions), the watchers feeding `LeaseManager`, and
  `ShardRouter`, the `ShardHost` that rebuilds a shard's tables from snapshot + log when
  its lease is won, and only then subscribes `trix.table.cmd.<shard>.*` (so commands
  reach the owner, and nobody while a shard changes hands: the caller sees no
  responders and retries with the same action id); when the lease is handed over it
  drains the subscription and finishes the commands in flight first;
- the MatchFormed consumer (a queue group shared by the replicas; the create goes to the
  owner as a command), the RecordArchived consumer (`Archiver`: scoring stored a finished
  game's record, the owner purges the table's log, snapshot and seed, ADR 0003), and
  `TableBus`, which the gRPC API uses to forward commands to the owner and to read a
  seat's stored events.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import AsyncIterator, Callable
from contextlib import aclosing

import nats.errors
import structlog
from nats.aio.msg import Msg
from nats.aio.subscription import Subscription
from nats.js.api import PubAck
from nats.js.errors import APIError, KeyNotFoundError, KeyWrongLastSequenceError, NotFoundError
from nats.js.kv import KV_DEL, KV_PURGE, KeyValue

from trix.errors import InvalidArgument, Unavailable, from_kind
from trix.natsio import seatstream, subjects
from trix.natsio.connection import NatsConnection
from trix.natsio.consumer import IdempotentEventHandler, MemoryProgress
from trix.natsio.publish import EXPECTED_LAST_SUBJECT_SEQ_HEADER, MSG_ID_HEADER, publish_once
from trix.runtime.identity import ROLE_SERVICE, TOKEN_HEADER, sign
from trix.table.codec import INTERNAL_KIND, handle_command
from trix.table.leases import LeaseManager
from trix.table.service import LogConflict, TableService
from trix.table.table import ALL, PUBLIC_ONLY, Routed
from trix.v1 import events_pb2, table_pb2

log = structlog.get_logger("trix.table.nats")

LOG_STREAM = subjects.TABLE_LOG_STREAM
SNAPSHOT_STREAM = subjects.TABLE_SNAPSHOTS_STREAM
EVENTS_STREAM = subjects.TABLE_EVENTS_STREAM
SECRETS_BUCKET = "table_secrets"
PLAYERS_BUCKET = "player_tables"
WRONG_LAST_SEQUENCE = 10071
MATCH_CONSUMER = "table-match-formed-q"
"""Durable of the MatchFormed consumer, delivered to the replicas' queue group (issue 5)."""
WRITER_HEADER = "Trix-Writer"
"""Header of a log entry: which replica appended it, under which lease epoch (the KV revision at
which it won the shard). Epochs only grow along a table's log: a stale owner never appends."""
LEASES_BUCKET = "table_leases"
ARCHIVE_STREAM = "SCORING_ARCHIVED"
ARCHIVE_CONSUMER = "table-records-archived-q"
"""Durable of the RecordArchived consumer, delivered to the replicas' queue group (issue 4)."""
ARCHIVE_RETRY_S = 0.5
REPLICAS_BUCKET = "table_replicas"


class JetStreamStore:
    """`TableStore` on JetStream (see the module docstring)."""

    def __init__(self, nats: NatsConnection) -> None:
        self.nats = nats
        self.writer: Callable[[str], str] | None = None
        """`<replica>/<lease epoch>` of a table's writer, stored with each entry (audit, tests)."""

    async def append(self, table_id: str, entry: bytes, msg_id: str, expected_last: int) -> int:
        headers = {EXPECTED_LAST_SUBJECT_SEQ_HEADER: str(expected_last)}
        if self.writer is not None:
            headers[WRITER_HEADER] = self.writer(table_id)
        try:
            ack = await publish_once(
                self.nats.jetstream, subjects.table_log(table_id), entry, msg_id=msg_id, headers=headers
            )
        except APIError as err:
            if err.err_code == WRONG_LAST_SEQUENCE:
                raise LogConflict(str(err)) from None
            raise
        if ack.duplicate:
            # This action id is in the log already (stored by an earlier attempt or an earlier
            # owner): the caller reloads the table and answers the first result.
            raise LogConflict(f"duplicate action {msg_id}")
        return int(ack.seq)

    async def read_log(self, table_id: str, after: int) -> AsyncIterator[tuple[int, bytes]]:
        js = self.nats.jetstream
        subject = subjects.table_log(table_id)
        seq = after + 1
        while True:
            try:
                msg = await js.get_msg(LOG_STREAM, seq=seq, subject=subject, next=True, direct=True)
            except NotFoundError:
                return
            assert msg.seq is not None
            yield msg.seq, msg.data or b""
            seq = msg.seq + 1

    async def log_tables(self) -> list[str]:
        info = await self.nats.jetstream.stream_info(LOG_STREAM, subjects_filter=subjects.all_table_logs())
        prefix = subjects.table_log("x")[:-1]
        return sorted(s[len(prefix) :] for s in (info.state.subjects or {}))

    async def put_secret(self, table_id: str, seed: bytes) -> None:
        kv = await self.nats.jetstream.key_value(SECRETS_BUCKET)
        await kv.put(subjects.token(table_id), seed)

    async def get_secret(self, table_id: str) -> bytes | None:
        kv = await self.nats.jetstream.key_value(SECRETS_BUCKET)
        try:
            entry = await kv.get(subjects.token(table_id))
        except KeyNotFoundError:
            return None
        return entry.value

    async def put_snapshot(self, table_id: str, data: bytes) -> None:
        await publish_once(self.nats.jetstream, subjects.table_snapshot(table_id), data)

    async def get_snapshot(self, table_id: str) -> bytes | None:
        try:
            msg = await self.nats.jetstream.get_last_msg(SNAPSHOT_STREAM, subjects.table_snapshot(table_id))
        except NotFoundError:
            return None
        return msg.data

    async def set_player_table(self, player_id: str, table_id: str) -> None:
        kv = await self.nats.jetstream.key_value(PLAYERS_BUCKET)
        await kv.put(subjects.token(player_id, "player id"), table_id.encode())

    async def clear_player_table(self, player_id: str, table_id: str) -> None:
        kv = await self.nats.jetstream.key_value(PLAYERS_BUCKET)
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
        await js.purge_stream(LOG_STREAM, subject=subjects.table_log(table_id))
        await js.purge_stream(SNAPSHOT_STREAM, subject=subjects.table_snapshot(table_id))
        await js.purge_stream(f"KV_{SECRETS_BUCKET}", subject=f"$KV.{SECRETS_BUCKET}.{subjects.token(table_id)}")


def destinations(table_id: str, audience: int) -> list[str]:
    """RULES.md §14: a public event (and the public copy of a per-seat event) goes to the
    public subject only, once; a seat's own copy only to that seat's subject. Readers merge
    the public subject with their seat's (`trix.natsio.seatstream`, ADR 0003 decision 14)."""
    if audience in (ALL, PUBLIC_ONLY):
        return [subjects.public_events(table_id)]
    return [subjects.seat_events(table_id, audience)]


def every_subject(table_id: str) -> list[str]:
    """The table's event subjects: public, then each seat's."""
    return [subjects.public_events(table_id), *(subjects.seat_events(table_id, s) for s in range(4))]


class JetStreamSink:
    """`EventSink` on the TABLE_EVENTS stream.

    An action's event copies are sent pipelined (`publish_async`): every copy is written to
    the connection at once, in order, and only then are the acks awaited together, so an
    action costs one round of acks instead of one per event on each subject, and no task or
    timer per message (the stores stay one message per copy, each fsynced by the server:
    gateway, timers and scoring read the same messages as before). Order per subject holds:
    one connection delivers the copies to the server in send order, and a broken connection
    loses a suffix of them, never one in the middle; after a copy that cannot be sent, none
    of the next is. A copy whose first attempt fails is published again, together with every
    later copy of its subject, one after the other with retries (`publish_once`, same
    Nats-Msg-Id: a copy stored already is not stored twice). `pipelined = False` is the
    previous path (one copy after the other per subject, each ack awaited), kept for that
    fallback and for `make bench-table`'s before/after figures (ADR 0003 decision 13).
    """

    def __init__(self, nats: NatsConnection, *, pipelined: bool = True) -> None:
        self.nats = nats
        self.pipelined = pipelined
        self.attempt_timeout_s = 2.0

    async def publish(self, table_id: str, routed: list[Routed], last: dict[str, int] | None = None) -> None:
        copies: list[tuple[str, str, bytes]] = []  # (subject, msg id, payload), in order
        for r in routed:
            data = r.event.SerializeToString()
            for subject in destinations(table_id, r.audience):
                if last is None or r.event.sequence > last.get(subject, 0):
                    copies.append((subject, f"{subject}.{r.event.sequence}", data))
        if not copies:
            return
        rest: dict[str, list[tuple[str, bytes]]] = {}
        if self.pipelined:
            ok = await self._send_all(copies)
            for (subject, msg_id, data), stored in zip(copies, ok, strict=True):
                if not stored:
                    rest.setdefault(subject, []).append((msg_id, data))
                elif subject in rest:
                    # A later copy stored after an earlier one failed: only a server refusing one
                    # message and accepting the next could do it (not a connection loss).
                    log.error("event copy stored after a failed earlier one", subject=subject, msg_id=msg_id)
        else:
            for subject, msg_id, data in copies:
                rest.setdefault(subject, []).append((msg_id, data))

        async def chain(subject: str, items: list[tuple[str, bytes]]) -> None:
            for msg_id, data in items:  # in order on each subject
                await publish_once(self.nats.jetstream, subject, data, msg_id=msg_id)

        if rest:
            await asyncio.gather(*(chain(s, items) for s, items in rest.items()))

    async def _send_all(self, copies: list[tuple[str, str, bytes]]) -> list[bool]:
        """Publish every copy in order without waiting, then await the acks together (one
        attempt each, `attempt_timeout_s`); whether each copy is stored."""
        js = self.nats.jetstream
        futures: list[asyncio.Future[PubAck] | None] = []
        for subject, msg_id, data in copies:
            if len(futures) > 0 and futures[-1] is None:
                futures.append(None)  # after a copy that could not be sent, none is: order holds
                continue
            try:
                futures.append(await js.publish_async(subject, data, headers={MSG_ID_HEADER: msg_id}))
            except Exception as exc:  # noqa: BLE001 - not sent (reconnecting, buffer full): retried in order
                log.info("event publish deferred", subject=subject, error=type(exc).__name__)
                futures.append(None)
        waiting = [f for f in futures if f is not None]
        if waiting:
            _, pending = await asyncio.wait(waiting, timeout=self.attempt_timeout_s)
            for f in pending:
                f.cancel()  # no ack in time: retried (same Nats-Msg-Id, stored at most once)
        return [f is not None and not f.cancelled() and f.exception() is None for f in futures]

    async def _last_stored(self, table_id: str) -> dict[str, int]:
        """Each subject's last stored event sequence (absent: nothing stored)."""
        last: dict[str, int] = {}
        for subject in every_subject(table_id):
            try:
                msg = await self.nats.jetstream.get_last_msg(EVENTS_STREAM, subject)
            except NotFoundError:
                continue
            last[subject] = events_pb2.Event.FromString(msg.data or b"").sequence
        return last

    async def stored_through(self, table_id: str) -> int:
        """The last sequence stored on the public subject, which carries every sequence; a
        seat's own copy is sent before its public copy on the same connection (one connection
        loses a suffix of what it sends, never a message in the middle)."""
        last = await self._last_stored(table_id)
        return last.get(subjects.public_events(table_id), 0)

    async def publish_missing(self, table_id: str, routed: list[Routed]) -> int:
        """Publish the copies a crash left unpublished (above each subject's last stored event)."""
        last = await self._last_stored(table_id)
        before = sum(1 for r in routed for s in destinations(table_id, r.audience) if r.event.sequence > last.get(s, 0))
        await self.publish(table_id, routed, last)
        return before


class TableBus:
    """What the gRPC API needs from NATS: forward a command to the owner, read stored events."""

    def __init__(self, timeout_s: float) -> None:
        self.nats: NatsConnection | None = None
        self.timeout_s = timeout_s
        self._feeds: seatstream.LiveFeeds | None = None

    def _conn(self) -> NatsConnection:
        if self.nats is None:
            raise Unavailable("NATS is not connected")
        return self.nats

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
                msg = await self._conn().client.request(
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

    async def events(self, table_id: str, seat: int | None, after: int) -> AsyncIterator[events_pb2.Event]:
        """What `seat` (None: the public) may see after a table sequence: stored, then live,
        until the game ends (`trix.natsio.seatstream`; the live part shared by the streams of a
        table through one `LiveFeeds` per connection)."""
        conn = self._conn()
        if self._feeds is None or self._feeds.nats is not conn:
            self._feeds = seatstream.LiveFeeds(conn)
        reader = seatstream.follow(conn, table_id, seat, timeout_s=self.timeout_s, feeds=self._feeds)
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

    task = asyncio.ensure_future(run())
    await asyncio.wait({task, ready}, return_when=asyncio.FIRST_COMPLETED)
    return task


def shard_of_subject(subject: str) -> int:
    """`trix.table.cmd.<shard>.<table>` -> shard."""
    return int(subject.split(".")[3])


class ShardRouter:
    """`ShardHost`: serve the commands of the shards this replica holds (see the module docstring)."""

    def __init__(self, nats: NatsConnection, service: TableService) -> None:
        self.nats = nats
        self.service = service
        self.manager: LeaseManager | None = None
        self.subs: dict[int, Subscription] = {}
        self.draining: set[int] = set()
        self.inflight: dict[int, set[asyncio.Task[None]]] = {}
        self.served = 0

    def serving(self, shard: int) -> bool:
        """Subscribed (or draining) and the lease still valid: may answer the shard's commands."""
        if shard not in self.subs and shard not in self.draining:
            return False
        return self.manager is None or self.manager.valid(shard)

    def owns_table(self, table_id: str) -> bool:
        return self.serving(subjects.table_shard(table_id))

    def writer(self, table_id: str) -> str:
        assert self.manager is not None
        held = self.manager.held.get(subjects.table_shard(table_id))
        return f"{self.manager.me}/{held.epoch if held else 0}"

    async def acquired(self, shards: list[int]) -> None:
        wanted = set(shards)
        t0 = time.perf_counter()
        count = await self.service.recover(lambda t: subjects.table_shard(t) in wanted)
        for shard in shards:
            if shard in self.subs or (self.manager is not None and shard not in self.manager.held):
                continue
            self.subs[shard] = await self.nats.client.subscribe(
                subjects.table_commands_of_shard(shard), cb=self._on_command
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

    async def _on_command(self, msg: Msg) -> None:
        shard = shard_of_subject(msg.subject)
        if not self.serving(shard):
            return  # not ours (any more): no answer, the owner's comes, or the caller retries
        task = asyncio.ensure_future(self._answer(msg))
        tasks = self.inflight.setdefault(shard, set())
        tasks.add(task)
        task.add_done_callback(tasks.discard)

    async def _answer(self, msg: Msg) -> None:
        token = (msg.headers or {}).get(TOKEN_HEADER)
        reply = await handle_command(self.service, msg.data, token)
        self.served += 1
        if msg.reply:
            try:
                await msg.respond(reply)
            except Exception as exc:  # noqa: BLE001 - the caller retries
                log.warning("reply failed", error=repr(exc))


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
        request = table_pb2.CreateTableRequest(table_id=m.match_id, variant=m.variant, options=m.options, seats=m.seats)
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

    A durable consumer in the replicas' queue group on SCORING_ARCHIVED: the message is
    acked once the table's owner has purged (or refused) it; a replica that does not own
    the table, or any failure, naks it for redelivery, so a restart of either side loses
    no signal.
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

    def __init__(self, router: ShardRouter, manager: LeaseManager, watchers: list[asyncio.Task[None]]) -> None:
        self.router = router
        self.manager = manager
        self.watchers = watchers

    async def handover(self, timeout_s: float = 10.0) -> None:
        """Graceful shutdown (SIGTERM): every shard to another replica, then stop."""
        try:
            await asyncio.wait_for(self.manager.handover(timeout_s), timeout_s + 2)
        except Exception as exc:  # noqa: BLE001 - shutting down anyway; the leases expire
            log.warning("handover incomplete", error=repr(exc))
        await self.close()

    async def close(self) -> None:
        await self.manager.stop()
        for task in self.watchers:
            task.cancel()
        await asyncio.gather(*self.watchers, return_exceptions=True)


def replica_id(instance: str) -> str:
    """A replica's id in the leases: its instance name plus a fresh suffix (a restart is a new replica)."""
    base = "".join(c if c.isalnum() or c in "-_" else "-" for c in instance)[:60] or "table"
    return f"{base}-{uuid.uuid4().hex[:8]}"


async def start(nats: NatsConnection, service: TableService, bus: TableBus | None = None) -> TableReplica:
    """Join the replicas, win a fair share of the shards (rebuilding their tables), serve their
    commands, and consume MatchFormed in the replicas' queue group."""
    store = JetStreamStore(nats)
    service.attach(store, JetStreamSink(nats))
    router = ShardRouter(nats, service)
    service.may_write = router.owns_table
    js = nats.jetstream
    leases_kv = await js.key_value(LEASES_BUCKET)
    replicas_kv = await js.key_value(REPLICAS_BUCKET)
    manager = LeaseManager(replica_id(service.config.runtime.instance), KvLeaseStore(leases_kv, replicas_kv), router)
    router.manager = manager
    store.writer = router.writer
    watchers = [
        await watch_leases(replicas_kv, manager, members=True),
        await watch_leases(leases_kv, manager, members=False),
    ]
    await manager.start()
    log.info("table replica started", replica=manager.me, shards=len(manager.held), tables=len(service.tables))
    creator = MatchCreator(nats, service)
    wrapped = IdempotentEventHandler(creator.on_match, MemoryProgress())
    await js.subscribe(
        subjects.match_formed(),
        durable=MATCH_CONSUMER,
        queue=MATCH_CONSUMER,
        stream="MATCHES",
        cb=wrapped.__call__,
        manual_ack=True,
    )
    archiver = Archiver(service)
    await js.subscribe(
        subjects.all_records_archived(),
        durable=ARCHIVE_CONSUMER,
        queue=ARCHIVE_CONSUMER,
        stream=ARCHIVE_STREAM,
        cb=archiver.on_msg,
        manual_ack=True,
    )
    if bus is not None:
        bus.nats = nats
    return TableReplica(router, manager, watchers)
