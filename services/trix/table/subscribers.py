"""NATS handlers and JetStream storage of the table service.

Owns the table's NATS side:
- `JetStreamStore`, the `TableStore` port: each table's log on `trix.table.log.<t>` in
  the TABLE_LOG stream (Nats-Msg-Id = table + action id for deduplication, and
  Nats-Expected-Last-Subject-Sequence so a stale writer cannot append), snapshots on
  TABLE_SNAPSHOTS, server seeds in the `table_secrets` bucket, the player -> current
  table index in `player_tables`;
- `JetStreamSink`, the `EventSink` port: every event copy on the subjects its audience
  may read (RULES.md §14), stored by TABLE_EVENTS for resume;
- the command subscription (this replica owns every shard until issue 5 adds leases),
  the MatchFormed consumer, and `TableBus`, which the gRPC API uses to forward
  commands to the owner and to read a seat's stored events.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import nats.errors
import structlog
from nats.aio.msg import Msg
from nats.js.api import DeliverPolicy
from nats.js.errors import APIError, KeyNotFoundError, NotFoundError

from trix.errors import DomainError, Unavailable, from_kind
from trix.natsio import subjects
from trix.natsio.connection import NatsConnection
from trix.natsio.consumer import MemoryProgress, subscribe_durable
from trix.natsio.publish import EXPECTED_LAST_SUBJECT_SEQ_HEADER, publish_once
from trix.table.codec import INTERNAL_KIND, handle_command
from trix.table.identity import TOKEN_HEADER, Caller
from trix.table.service import LogConflict, TableService
from trix.table.table import ALL, PUBLIC_ONLY, Routed
from trix.v1 import events_pb2, table_pb2

log = structlog.get_logger("trix.table.nats")

LOG_STREAM = "TABLE_LOG"
SNAPSHOT_STREAM = "TABLE_SNAPSHOTS"
EVENTS_STREAM = "TABLE_EVENTS"
SECRETS_BUCKET = "table_secrets"
PLAYERS_BUCKET = "player_tables"
WRONG_LAST_SEQUENCE = 10071
MATCH_CONSUMER = "table-match-formed"


class JetStreamStore:
    """`TableStore` on JetStream (see the module docstring)."""

    def __init__(self, nats: NatsConnection) -> None:
        self.nats = nats

    async def append(self, table_id: str, entry: bytes, msg_id: str, expected_last: int) -> int:
        headers = {EXPECTED_LAST_SUBJECT_SEQ_HEADER: str(expected_last)}
        try:
            ack = await publish_once(
                self.nats.jetstream, subjects.table_log(table_id), entry, msg_id=msg_id, headers=headers
            )
        except APIError as err:
            if err.err_code == WRONG_LAST_SEQUENCE:
                raise LogConflict(str(err)) from None
            raise
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


def destinations(table_id: str, audience: int) -> list[str]:
    """RULES.md §14: public events reach every subject; a seat's copy only that seat's subject."""
    if audience == ALL:
        return [subjects.public_events(table_id), *(subjects.seat_events(table_id, s) for s in range(4))]
    if audience == PUBLIC_ONLY:
        return [subjects.public_events(table_id)]
    return [subjects.seat_events(table_id, audience)]


class JetStreamSink:
    """`EventSink` on the TABLE_EVENTS stream."""

    def __init__(self, nats: NatsConnection) -> None:
        self.nats = nats

    async def publish(self, table_id: str, routed: list[Routed], last: dict[str, int] | None = None) -> None:
        by_subject: dict[str, list[events_pb2.Event]] = {}
        for r in routed:
            for subject in destinations(table_id, r.audience):
                if last is None or r.event.sequence > last.get(subject, 0):
                    by_subject.setdefault(subject, []).append(r.event)

        async def chain(subject: str, events: list[events_pb2.Event]) -> None:
            for event in events:  # in order on each subject
                msg_id = f"{subject}.{event.sequence}"
                await publish_once(self.nats.jetstream, subject, event.SerializeToString(), msg_id=msg_id)

        await asyncio.gather(*(chain(s, e) for s, e in by_subject.items()))

    async def publish_missing(self, table_id: str, routed: list[Routed]) -> int:
        """Publish the copies a crash left unpublished (above each subject's last stored event)."""
        last: dict[str, int] = {}
        for subject in destinations(table_id, ALL):
            try:
                msg = await self.nats.jetstream.get_last_msg(EVENTS_STREAM, subject)
            except NotFoundError:
                continue
            last[subject] = events_pb2.Event.FromString(msg.data or b"").sequence
        before = sum(1 for r in routed for s in destinations(table_id, r.audience) if r.event.sequence > last.get(s, 0))
        await self.publish(table_id, routed, last)
        return before


class TableBus:
    """What the gRPC API needs from NATS: forward a command to the owner, read stored events."""

    def __init__(self, timeout_s: float) -> None:
        self.nats: NatsConnection | None = None
        self.timeout_s = timeout_s

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
        try:
            msg = await self._conn().client.request(
                subject, command.SerializeToString(), timeout=self.timeout_s, headers=headers
            )
        except (TimeoutError, nats.errors.NoRespondersError, nats.errors.TimeoutError):
            raise Unavailable("the table's owner did not answer; retry with the same action id") from None
        reply = table_pb2.TableCommandReply.FromString(msg.data)
        if reply.HasField("error"):
            if reply.error.kind == INTERNAL_KIND:
                raise RuntimeError(reply.error.message)
            raise from_kind(reply.error.kind, reply.error.message)
        return reply

    async def events(self, subject: str, after: int) -> AsyncIterator[events_pb2.Event]:
        """A subject's stored events after a table sequence, then live ones, until the game ends."""
        js = self._conn().jetstream
        sub = await js.subscribe(subject, ordered_consumer=True, deliver_policy=DeliverPolicy.ALL)
        try:
            while True:
                try:
                    msg = await sub.next_msg(timeout=30.0)
                except nats.errors.TimeoutError:
                    continue
                event = events_pb2.Event.FromString(msg.data)
                if event.sequence > after:
                    yield event
                if event.HasField("game_ended"):
                    return
        finally:
            await sub.unsubscribe()


class _Handlers:
    def __init__(self, service: TableService) -> None:
        self.service = service
        self.tasks: set[asyncio.Task[None]] = set()

    async def on_command(self, msg: Msg) -> None:
        task = asyncio.ensure_future(self._answer(msg))
        self.tasks.add(task)
        task.add_done_callback(self.tasks.discard)

    async def _answer(self, msg: Msg) -> None:
        token = (msg.headers or {}).get(TOKEN_HEADER)
        reply = await handle_command(self.service, msg.data, token)
        if msg.reply:
            await msg.respond(reply)

    async def on_match(self, event: events_pb2.Event) -> None:
        if not event.HasField("match_formed"):
            return
        m = event.match_formed
        request = table_pb2.CreateTableRequest(table_id=m.match_id, variant=m.variant, options=m.options, seats=m.seats)
        if m.HasField("stake"):
            request.stake.CopyFrom(m.stake)
        try:
            await self.service.create_table(Caller("service", "matchmaking"), request)
        except DomainError as err:  # a bad match is not retried forever
            log.error("match refused", match_id=m.match_id, error=err.public_message)


async def start(nats: NatsConnection, service: TableService, bus: TableBus | None = None) -> Any:
    """Recover every table, then serve commands and consume MatchFormed."""
    service.attach(JetStreamStore(nats), JetStreamSink(nats))
    recovered = await service.recover()
    log.info("tables recovered", tables=recovered, live=sum(1 for t in service.tables.values() if not t.finished))
    handlers = _Handlers(service)
    await nats.client.subscribe(subjects.all_table_commands(), cb=handlers.on_command)
    await subscribe_durable(
        nats.jetstream, subjects.match_formed(), MATCH_CONSUMER, handlers.on_match, MemoryProgress(), stream="MATCHES"
    )
    if bus is not None:
        bus.nats = nats
    return handlers
