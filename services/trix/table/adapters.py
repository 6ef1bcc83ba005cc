"""The table service's outbound NATS adapters (the implementations of its NATS `ports`).

- `JetStreamStore`, the `TableStore` port: each table's log on `trix.table.log.<t>` in
  the TABLE_LOG stream (Nats-Msg-Id = table + action id for deduplication, and
  Nats-Expected-Last-Subject-Sequence so a stale writer cannot append), snapshots on
  TABLE_SNAPSHOTS, server seeds in the `table_secrets` bucket, the player -> current
  table index in `player_tables`;
- `NatsSink`, the `EventSink` port: an action's event copies as one core NATS batch per
  audience on the subjects it may read (docs/rules.md §14), unstored (the log entry is the
  action's one stored message; readers' gaps are served by `read_events`), and the results
  scoring settles from on the durable TABLE_RESULTS stream;
- `TableBus`, which the gRPC API uses to forward commands to the owner and to read a
  seat's events.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import aclosing, suppress
from typing import TypeVar

import nats.errors
import structlog
from nats.js.api import RawStreamMsg
from nats.js.client import JetStreamContext
from nats.js.errors import APIError, KeyNotFoundError, KeyWrongLastSequenceError, NotFoundError
from nats.js.kv import KV_DEL, KV_PURGE, KeyValue

from trix.errors import Unavailable, from_kind
from trix.natsio import names, seatstream, subjects
from trix.natsio.connection import NatsConnection
from trix.natsio.kvwatch import watch_bucket
from trix.natsio.publish import EXPECTED_LAST_SUBJECT_SEQ_HEADER, JetStreams, ask_until, publish_once
from trix.runtime.identity import TOKEN_HEADER
from trix.table.codec import INTERNAL_KIND
from trix.table.ports import LogConflict, StaleWriter
from trix.table.table import ALL, PUBLIC_ONLY, Routed
from trix.v1 import events_pb2, table_pb2

RESULT_BODIES = frozenset({"table_created", "seat_control_changed", "deal_scored", "game_ended"})
"""The public events scoring settles from: stored on TABLE_RESULTS."""

log = structlog.get_logger("trix.table.nats")

LOG_STREAM = names.TABLE_LOG_STREAM
SNAPSHOT_STREAM = names.TABLE_SNAPSHOTS_STREAM
SECRETS_BUCKET = names.TABLE_SECRETS_BUCKET
PLAYERS_BUCKET = names.PLAYER_TABLES_BUCKET
LEASES_BUCKET = names.TABLE_LEASES_BUCKET
REPLICAS_BUCKET = names.TABLE_REPLICAS_BUCKET
WRITER_HEADER = "Trix-Writer"
"""Header of a log entry: which replica appended it, under which lease epoch (the KV revision at
which it won the shard). Epochs only grow along a table's log: a stale owner never appends."""
WRONG_LAST_SEQUENCE = 10071
WRONG_LAST_SEQUENCE_IN_PROCESS = 10164
"""A clustered log's leader cannot check the expected sequence while another entry of the table
is in process: retried by `publish_once` (`IN_PROCESS`); still so at its deadline, a conflict."""
APPEND_ATTEMPT_S = 1.0
"""One attempt of a log append waits this long before it is sent again (same message id): a
publish into a SIGSTOPped or cut-off leader gets no answer, and the first attempt after the
election should not wait out a longer timeout. A late ack of an earlier attempt
makes the next one a duplicate: the table reloads and answers the stored result."""
PUBLISH_ATTEMPT_S = 0.5
"""The same for a snapshot or a result (each stored once by its message id, a late ack's repeat
answered as a duplicate): each holds its table's lock, and a 2 s attempt sent into an election
held the table's next command up to 2 s after the stream answered again."""
HEARTBEAT_ATTEMPT_S = 0.5
"""A replica's heartbeat waits this long for its ack; failed, it is sent again `leases.RETRY_S`
later. Sent into an election of the replicas bucket (a leader stopped or cut off), the
connection's 5 s request held the next heartbeat back for up to 5 s after the bucket answered
again, and the other replicas, hearing none for the TTL, took this one's shards."""
READ_ATTEMPT_S = 0.5
"""One attempt of a read of a table's storage (a log entry, its snapshot, its seed, the log's
tables) waits this long before it is asked again. A JetStream API request sent while the stream
has no leader (the RAFT election after its leader died, 4-9 s) is never answered: with the
connection's 5 s request timeout a read sent just before the election ended waited out the rest
of its 5 s, holding the table's lock (every command of the table queued behind it) or a shard's
rebuild, and back-to-back elections chained such waits (play resumed 4.6 s after
TABLE_LOG answered again, three 5 s timeouts in a row). 0.5 s, was 1 s."""
LIST_ATTEMPT_S = 1.0
"""The same for the list of the log's tables (`log_tables`, at a shard's rebuild): one stream
info listing every table's subject, heavier than a read of one message. 1 s, was 3 s (ADR 0021:
a shard taken over from a replica cut off, while TABLE_LOG changed leader after a node's
partition healed, was rebuilt in 3.8 s, its games waiting)."""
READ_DEADLINE_S = 10.0
"""A read NATS does not answer is asked again for this long (an election, twice if the first
fails), then its error is raised (the command answers UNAVAILABLE, the rebuild is tried again)."""
SEEDS_KEPT = 100_000
"""Seeds a replica keeps in memory (`JetStreamStore.seeds`, ~10 MB): the oldest learnt go first
(most likely finished tables); a rebuild reads a seed it no longer holds from the bucket."""
_T = TypeVar("_T")


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
        self.seeds: dict[str, bytes] = {}
        """Table -> its seed as stored (`watch_seeds`, or stored or read here). A seed is
        stored once (`keep_secret`, compare-and-set) and never changed, so a known one is the
        table's: a rebuild reads the bucket only for a seed this replica has not seen."""

    async def watch_seeds(self) -> asyncio.Task[None]:
        """Learn every table's seed as the bucket stores it (`seeds`); returns once the stored
        ones are in. A rebuild of shards taken over from a replica cut off then reads only the
        table's snapshot and log: a NATS node healed from a partition deposes the leaders of
        the groups it followed (its RAFT term grew while it campaigned alone; nats-server has
        no pre-vote) and the bucket had no leader for another election, ~5 s, while the move
        path's streams answered (issue 42: games waited 3.7-5.5 s). A seed missed (a watcher
        lost with its NATS node) is read from the bucket as before."""

        def on_entry(entry: KeyValue.Entry) -> None:
            if entry.operation in (KV_DEL, KV_PURGE) or not entry.value:
                self.seeds.pop(entry.key, None)
            else:
                self._know(entry.key, entry.value)

        return await watch_bucket(await self._reads.key_value(SECRETS_BUCKET), on_entry)

    def _know(self, token: str, seed: bytes) -> None:
        """Remember a table's seed; past `SEEDS_KEPT`, the oldest learnt goes (a finished
        table's seed is purged by a stream purge, which no watcher sees)."""
        self.seeds[token] = seed
        if len(self.seeds) > SEEDS_KEPT:
            self.seeds.pop(next(iter(self.seeds)))

    async def _read(self, call: Callable[[JetStreamContext], Awaitable[_T]], attempt_s: float = READ_ATTEMPT_S) -> _T:
        """`call` on a JetStream context whose requests wait `attempt_s`, asked again while NATS
        does not answer (`RETRYABLE`), for `READ_DEADLINE_S`: answered right after an election
        instead of after the lost request's timeout. Reads only: asking again is harmless."""
        js = self._reads.waiting(attempt_s)
        return await ask_until(lambda _timeout: call(js), deadline_s=READ_DEADLINE_S, attempt_s=attempt_s)

    async def append(self, table_id: str, entry: bytes, msg_id: str, expected_last: int) -> int:
        """Append after the entry at `expected_last`, fenced by the writer epoch: a
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
        may be answered by a follower still behind (a node catching up after a fault),
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
        the table's seed, the first stored (a create that ran again, a MatchFormed
        redelivered while the first create's entry was still in process, overwrote the seed
        the log's create entry was made with, and the table never replayed again)."""
        kv = await self._reads.key_value(SECRETS_BUCKET)
        for _ in range(40):
            try:
                await kv.create(subjects.token(table_id), seed)
                self._know(subjects.token(table_id), seed)
                return seed
            except KeyWrongLastSequenceError:
                stored = await self.get_secret(table_id)  # the leader's answer
                if stored is not None:
                    return stored
            await asyncio.sleep(0.1)  # another create of it in process: its write lands first
        raise Unavailable("the table's seed is being stored; retry")

    async def get_secret(self, table_id: str) -> bytes | None:
        """The seed this replica knows (`seeds`), else from the bucket's leader (not a direct
        get: a follower behind may not have a new table's seed yet, and the table would be
        skipped by a rebuild)."""
        token = subjects.token(table_id)
        known = self.seeds.get(token)
        if known is not None:
            return known
        key = f"$KV.{SECRETS_BUCKET}.{token}"
        try:
            msg = await self._read(lambda js: js.get_last_msg(names.kv_stream(SECRETS_BUCKET), key))
        except NotFoundError:
            return None
        if (msg.headers or {}).get("KV-Operation") in (KV_DEL, KV_PURGE) or not msg.data:
            return None
        self._know(token, msg.data)
        return msg.data

    async def put_snapshot(self, table_id: str, data: bytes) -> None:
        await publish_once(
            self.nats.jetstream, subjects.table_snapshot(table_id), data, attempt_timeout_s=PUBLISH_ATTEMPT_S
        )

    async def get_snapshot(self, table_id: str) -> bytes | None:
        try:
            msg = await self._read(lambda js: js.get_last_msg(SNAPSHOT_STREAM, subjects.table_snapshot(table_id)))
        except NotFoundError:
            return None
        return msg.data

    async def set_player_table(self, player_id: str, table_id: str) -> None:
        kv = await self._reads.key_value(PLAYERS_BUCKET)
        await kv.put(subjects.token(player_id, "player id"), table_id.encode())

    async def end_player_table(self, player_id: str, table_id: str) -> None:
        kv = await self._reads.key_value(PLAYERS_BUCKET)
        key = subjects.token(player_id, "player id")
        try:
            entry = await kv.get(key)
        except KeyNotFoundError:
            return
        if entry.value != table_id.encode() or entry.revision is None:
            return
        with suppress(KeyWrongLastSequenceError):  # seated at a new table meanwhile: it stays
            await kv.update(key, (names.ENDED_TABLE_PREFIX + table_id).encode(), last=entry.revision)

    async def purge_table(self, table_id: str) -> None:
        # Log first: a crash after it leaves a finished snapshot, which recovery reads as a
        # finished table (nothing to republish), and the redelivered signal purges the rest.
        js = self.nats.jetstream
        self.tails.pop(table_id, None)
        self.seeds.pop(subjects.token(table_id), None)
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
        self._reads = JetStreams(nats)
        self.published = 0
        """Batches published (tests, benchmarks)."""

    async def publish(
        self, table_id: str, routed: list[Routed], cause: events_pb2.ActionCause | None = None, *, results: bool = True
    ) -> bool:
        """Publish an action's events (with `results`, its results too); whether its `cause`
        went out on the feed (the gateway that sent it answers the actor from there)."""
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
        if results:
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
                    attempt_timeout_s=PUBLISH_ATTEMPT_S,
                )

    async def publish_missing_results(self, table_id: str, routed: list[Routed]) -> None:
        """The results among `routed` after the table's last one on TABLE_RESULTS (asked of the
        stream's leader): a table's results are stored in order, so those are what it lacks.
        Published again they would be stored twice once the stream's duplicate window is past."""
        stored = 0
        if any(r.audience == ALL and r.event.WhichOneof("body") in RESULT_BODIES for r in routed):
            stored = await self._last_result(table_id)
        await self.publish_results(table_id, [r for r in routed if r.event.sequence > stored])

    async def _last_result(self, table_id: str) -> int:
        """The sequence of the table's last result on TABLE_RESULTS (0: none)."""
        js = self._reads.waiting(READ_ATTEMPT_S)
        subject = subjects.table_results(table_id)
        try:
            msg = await ask_until(
                lambda _timeout: js.get_last_msg(names.TABLE_RESULTS_STREAM, subject),
                deadline_s=READ_DEADLINE_S,
                attempt_s=READ_ATTEMPT_S,
            )
        except NotFoundError:
            return 0
        return events_pb2.Event.FromString(msg.data or b"").sequence


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
            # No responders: the table's shard is changing hands; the same bytes
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
