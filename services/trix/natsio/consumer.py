"""Durable JetStream consumers that apply each (table, sequence) exactly once.

Owns `IdempotentEventHandler`: decodes the `trix.v1.Event` envelope, skips an event
whose sequence is not above the last one applied for its table (a redelivery after
a crash, a duplicate publish), runs the handler, records the progress, then acks.
Progress lives in a `ProgressStore`: in memory for tests, or the
`consumer_progress` KV bucket so it survives restarts. A handler that fails is not
acked and JetStream redelivers the event.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Protocol

import structlog
from nats.aio.msg import Msg
from nats.js.client import JetStreamContext
from nats.js.errors import KeyNotFoundError
from nats.js.kv import KeyValue

from trix.natsio import subjects
from trix.v1 import events_pb2

log = structlog.get_logger("trix.natsio.consumer")

EventHandler = Callable[[events_pb2.Event], Awaitable[None]]


class ProgressStore(Protocol):
    """The last sequence applied per table, for one consumer."""

    async def last(self, table_id: str) -> int: ...

    async def advance(self, table_id: str, sequence: int) -> None: ...


class MemoryProgress:
    """Progress kept in memory (tests, or consumers whose effects are themselves idempotent)."""

    def __init__(self) -> None:
        self._last: dict[str, int] = {}

    async def last(self, table_id: str) -> int:
        return self._last.get(table_id, 0)

    async def advance(self, table_id: str, sequence: int) -> None:
        self._last[table_id] = max(sequence, self._last.get(table_id, 0))


class KvProgress:
    """Progress kept in the `consumer_progress` KV bucket under `<consumer>.<table_id>`."""

    def __init__(self, kv: KeyValue, consumer: str) -> None:
        self._kv = kv
        self._consumer = subjects.token(consumer, "consumer name")

    def _key(self, table_id: str) -> str:
        return f"{self._consumer}.{subjects.token(table_id, 'table id')}"

    async def last(self, table_id: str) -> int:
        try:
            entry = await self._kv.get(self._key(table_id))
        except KeyNotFoundError:
            return 0
        return int(entry.value or b"0")

    async def advance(self, table_id: str, sequence: int) -> None:
        await self._kv.put(self._key(table_id), str(sequence).encode())


class IdempotentEventHandler:
    """A JetStream message callback that applies each (table, sequence) once."""

    def __init__(self, handler: EventHandler, progress: ProgressStore) -> None:
        self._handler = handler
        self._progress = progress
        self.applied = 0
        self.skipped = 0

    async def __call__(self, msg: Msg) -> None:
        event = events_pb2.Event()
        try:
            event.ParseFromString(msg.data)
        except Exception:  # noqa: BLE001 - a poison message must not block the consumer
            log.error("undecodable event dropped", subject=msg.subject)
            await msg.term()
            return
        table_id = event.table_id
        if table_id and event.sequence and event.sequence <= await self._progress.last(table_id):
            self.skipped += 1
            await msg.ack()
            return
        await self._handler(event)  # raises -> not acked -> redelivered
        if table_id and event.sequence:
            await self._progress.advance(table_id, event.sequence)
        self.applied += 1
        await msg.ack()


async def subscribe_durable(
    js: JetStreamContext,
    subject: str,
    durable: str,
    handler: EventHandler,
    progress: ProgressStore,
    *,
    stream: str | None = None,
) -> IdempotentEventHandler:
    """Start a durable push consumer with manual acks feeding `handler` exactly once per event."""
    wrapped = IdempotentEventHandler(handler, progress)
    await js.subscribe(subject, durable=durable, stream=stream, cb=wrapped.__call__, manual_ack=True)
    return wrapped
