"""JetStream consumers: the one pull-consumer loop, and applying each (table, sequence) once (ADR 0017).

Owns `PullConsumer` (fetch, linger, apply in order within lanes, ack; on an error retry the
same message; a durable deleted under it is created again from its configuration; with ack
"last", a jump in the consumer sequence (a delivery lost in transit, which the batch's
cumulative ack would ack away; the first batch checked against the ack floor read at the bind)
recreates the durable after the last message applied; `stop`
lets the batch in hand finish), `read_range` (a bounded read of a stream), `decode_event`
(an undecodable envelope is terminated) and `IdempotentEventHandler` (skips an event not
above the last sequence applied for its table, acks only after the handler succeeded).
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
from collections.abc import Awaitable, Callable
from typing import Literal, Protocol

import nats.errors
import structlog
from nats.aio.client import Client
from nats.aio.msg import Msg
from nats.js.api import AckPolicy, ConsumerConfig, DeliverPolicy
from nats.js.client import JetStreamContext
from nats.js.errors import NotFoundError

from trix.runtime.tasks import cancel_and_wait
from trix.v1 import events_pb2

log = structlog.get_logger("trix.natsio.consumer")

EventHandler = Callable[[events_pb2.Event], Awaitable[None]]
MsgHandler = Callable[[Msg], Awaitable[None]]
AckMode = Literal["each", "last"]
"""`each`: every message is acked once applied (AckPolicy.EXPLICIT); `last`: the batch's
last message is acked once every one before it applied (AckPolicy.ALL: one ack a fetch)."""

STOP_WAIT_S = 3.0
"""How long a stopping consumer may take to finish the batch in hand."""
FETCH_ERROR_PAUSE_S = 0.5
"""After a failed fetch (NATS restarting): the next one waits this long."""
REWIND_MIN_INTERVAL_S = 5.0
"""Two rewinds of a consumer at least this far apart: a durable that another process fetches
from too (its deliveries are gaps here) is not deleted under it in a loop (ADR 0004: one
scoring process consumes at a time)."""
RETRY_FIRST_S = 0.1
RETRY_MAX_S = 2.0
"""A message that failed to apply is applied again after 0.1 s, doubling up to 2 s."""


class PullConsumer:
    """One pull subscription and the task that consumes it (see the module docstring)."""

    def __init__(
        self,
        name: str,
        nc: Client,
        apply: MsgHandler,
        *,
        batch: int,
        fetch_timeout_s: float,
        linger_s: float = 0.0,
        ack: AckMode = "each",
        lane: Callable[[Msg], str] | None = None,
        gate: asyncio.Event | None = None,
    ) -> None:
        self.name = name
        self.nc = nc
        self.apply = apply
        self.batch = batch
        self.fetch_timeout_s = fetch_timeout_s
        self.linger_s = linger_s
        self.ack = ack
        self.lane = lane
        """Messages of one lane are applied in order, lanes in parallel (None: one lane)."""
        self.gate = gate
        """While cleared, nothing is applied (what a fetch in flight brings waits in hand)."""
        self.consumed = 0
        self.stopping = False
        self.task: asyncio.Task[None] | None = None
        self.recreated = 0
        """Times the durable consumer was found deleted and created again."""
        self._binding: tuple[JetStreamContext, str, str, ConsumerConfig] | None = None
        self._last_applied = 0
        """The stream sequence of the last batch applied (where a recreated consumer resumes)."""
        self._delivered: int | None = None
        """The consumer sequence of the last message fetched (0: a consumer this loop created,
        none fetched yet; at the start, the durable's ack floor; None: not checked, ack "each")."""
        self.rewound = 0
        """Times a delivery was found lost in transit and the consumer rewound past it."""
        self._rewound_at = -REWIND_MIN_INTERVAL_S

    async def start(self, js: JetStreamContext, subject: str, *, stream: str, config: ConsumerConfig) -> None:
        """Create (or bind to) the consumer `config` names and start consuming it."""
        self._binding = (js, subject, stream, config)
        sub = await js.pull_subscribe(subject, durable=config.durable_name, stream=stream, config=config)
        if self.ack == "last" and config.durable_name:
            try:
                await self._read_floor(js, stream, config.durable_name)
            except BaseException:
                with contextlib.suppress(Exception):
                    await sub.unsubscribe()
                raise
        self.task = asyncio.ensure_future(self._run(sub))

    async def _read_floor(self, js: JetStreamContext, stream: str, durable: str) -> None:
        """Where the first batch must start (ack "last"; once, when the loop binds: nothing is
        asked per batch). A consumer sequence numbers deliveries, a redelivery taking a new one
        (nats-server 2.15), so the first message this loop may be given is the one after the
        ack floor's: a delivery it never had (made to a process that died, or lost between the
        bind and the first fetch) is a gap, and the consumer is rewound. Every message up to
        the floor's stream sequence was applied (or precedes a consumer's start sequence): a
        rewind resumes after it, not from the configured start."""
        floor = (await js.consumer_info(stream, durable)).ack_floor
        self._delivered = int(floor.consumer_seq or 0) if floor is not None else 0
        if floor is not None:
            self._last_applied = max(self._last_applied, int(floor.stream_seq or 0))

    async def _heal(self, sub: JetStreamContext.PullSubscription) -> JetStreamContext.PullSubscription:
        """`sub`, or a new subscription when its durable consumer was deleted: the consumer
        created again from its configuration, resuming after the last message applied (one
        `BY_START_SEQUENCE`; the others as configured). NATS not answering: `sub` unchanged."""
        if self._binding is None:
            return sub
        js, subject, stream, config = self._binding
        durable = config.durable_name
        if not durable:
            return sub
        try:
            await js.consumer_info(stream, durable)
            return sub
        except NotFoundError:
            pass
        except Exception:  # noqa: BLE001 - NATS restarting: asked again after the next failed fetch
            return sub
        try:
            new = await js.pull_subscribe(subject, durable=durable, stream=stream, config=self._resuming(config))
        except Exception as exc:  # noqa: BLE001 - tried again after the next failed fetch
            log.warning("consumer gone, not created again yet", consumer=self.name, error=repr(exc))
            return sub
        with contextlib.suppress(Exception):
            await sub.unsubscribe()
        self._delivered = 0
        self.recreated += 1
        log.warning("consumer was deleted: created again", consumer=self.name, resume_after=self._last_applied)
        return new

    def _resuming(self, config: ConsumerConfig) -> ConsumerConfig:
        """`config`, a `BY_START_SEQUENCE` one starting after the last message applied."""
        if config.deliver_policy == DeliverPolicy.BY_START_SEQUENCE and self._last_applied:
            return dataclasses.replace(config, opt_start_seq=max(config.opt_start_seq or 1, self._last_applied + 1))
        return config

    async def stop(self, timeout_s: float = STOP_WAIT_S) -> None:
        """Finish (and ack) the batch in hand, stop fetching and unsubscribe, before the
        connection drains. Bounded: after `timeout_s` the loop is cancelled (what it held
        unacked is delivered again; the consumers' applying is idempotent)."""
        self.stopping = True
        task = self.task
        if task is None:
            return
        done, _ = await asyncio.wait({task}, timeout=timeout_s)
        if not done:
            await cancel_and_wait([task], timeout_s)  # bounded too (a swallowed cancellation)

    async def _run(self, sub: JetStreamContext.PullSubscription) -> None:
        held = [sub]  # the current subscription (`_consume` replaces it when it heals)
        try:
            await self._consume(held)
        finally:
            with contextlib.suppress(Exception):
                await held[0].unsubscribe()

    async def _consume(self, held: list[JetStreamContext.PullSubscription]) -> None:
        while not self.stopping:
            sub = held[0]
            if self.gate is not None:
                await self.gate.wait()
            try:
                msgs = await sub.fetch(self.batch, timeout=self.fetch_timeout_s)
            except (nats.errors.TimeoutError, TimeoutError):
                continue
            except (nats.errors.ConnectionClosedError, nats.errors.DrainTimeoutError):
                return
            except Exception as exc:  # noqa: BLE001 - NATS restarting: keep consuming
                log.warning("fetch failed, retrying", consumer=self.name, error=repr(exc))
                await asyncio.sleep(FETCH_ERROR_PAUSE_S)
                if not self.stopping:
                    held[0] = await self._heal(sub)
                continue
            if self._skips_a_delivery(msgs):
                held[0] = await self._rewind(sub)
                continue
            if self.gate is not None:
                await self.gate.wait()  # a hold that began during the fetch holds what it brought
            if not await self._handle(msgs):
                return
            if len(msgs) < self.batch and self.linger_s > 0 and not self.stopping:
                await asyncio.sleep(self.linger_s)  # let the next messages gather: one fetch for several

    def _skips_a_delivery(self, msgs: list[Msg]) -> bool:
        """True when this batch's consumer sequences jump past one this loop never received:
        a delivery lost in transit (a NATS node killed, a reconnect, a consumer leader change
        with a fetch's messages on the wire). With ack "last" (AckPolicy.ALL) the batch's ack
        would ack the lost message too: it would never come again, a game never settled."""
        if self.ack != "last" or not msgs:
            return False
        try:
            sequences = [int(msg.metadata.sequence.consumer) for msg in msgs]
        except Exception:  # noqa: BLE001 - a message without JetStream metadata: nothing to check
            return False
        expected = None if self._delivered is None else self._delivered + 1
        for sequence in sequences:
            if expected is not None and sequence > expected:
                return True
            expected = sequence + 1
        self._delivered = sequences[-1]
        return False

    async def _rewind(self, sub: JetStreamContext.PullSubscription) -> JetStreamContext.PullSubscription:
        """A new consumer from the message after the last one applied (one `BY_START_SEQUENCE`
        durable: delivered again in stream order; applying is idempotent). What this batch
        brought is not applied nor acked. NATS not answering: `sub`, checked again next fetch."""
        if self._binding is None:
            return sub
        js, subject, stream, config = self._binding
        durable = config.durable_name
        if not durable or config.deliver_policy != DeliverPolicy.BY_START_SEQUENCE:
            return sub
        log.warning(
            "a delivery was lost in transit: consumer rewound", consumer=self.name, resume_after=self._last_applied
        )
        loop = asyncio.get_running_loop()
        await asyncio.sleep(max(0.0, self._rewound_at + REWIND_MIN_INTERVAL_S - loop.time()))
        self._rewound_at = loop.time()
        if self.stopping:
            return sub
        try:
            with contextlib.suppress(NotFoundError):
                await js.delete_consumer(stream, durable)
            new = await js.pull_subscribe(subject, durable=durable, stream=stream, config=self._resuming(config))
        except Exception as exc:  # noqa: BLE001 - NATS restarting: the gap is seen again next fetch
            log.warning("consumer not rewound yet", consumer=self.name, error=repr(exc))
            await asyncio.sleep(FETCH_ERROR_PAUSE_S)
            return sub
        with contextlib.suppress(Exception):
            await sub.unsubscribe()
        self._delivered = 0
        self.rewound += 1
        return new

    async def _handle(self, msgs: list[Msg]) -> bool:
        """Apply a batch; False when the consumer gave up on it (stopping, connection closed)."""
        if self.lane is None:
            applied = await self._lane(msgs)
        else:
            lanes: dict[str, list[Msg]] = {}
            for msg in msgs:
                lanes.setdefault(self.lane(msg), []).append(msg)
            applied = all(await asyncio.gather(*(self._lane(of_lane) for of_lane in lanes.values())))
        if applied and self.ack == "last" and msgs:
            await _ack(msgs[-1])
        if applied and msgs:
            with contextlib.suppress(Exception):  # a message without JetStream metadata: none
                self._last_applied = max(self._last_applied, int(msgs[-1].metadata.sequence.stream))
        return applied

    async def _lane(self, msgs: list[Msg]) -> bool:
        for i, msg in enumerate(msgs):
            if not await self._apply_until_done(msg):
                if self.ack == "each":  # the rest of the lane to another replica, now
                    for later in msgs[i:]:
                        with contextlib.suppress(Exception):
                            await later.nak()
                return False
            self.consumed += 1
            if self.ack == "each":
                await _ack(msg)
        return True

    async def _apply_until_done(self, msg: Msg) -> bool:
        delay = RETRY_FIRST_S
        while True:
            try:
                await self.apply(msg)
                return True
            except Exception as exc:  # noqa: BLE001 - paused, then applied again
                if self.nc.is_closed or self.stopping:
                    return False
                log.warning("message not applied yet, retrying", consumer=self.name, error=repr(exc), retry_in_s=delay)
                await asyncio.sleep(delay)
                delay = min(delay * 2, RETRY_MAX_S)


async def _ack(msg: Msg) -> None:
    """Ack, unless the handler already acked or termed it (a poison message); a failed ack
    (NATS restarting) leaves it to be redelivered, which the consumers' applying skips."""
    try:
        await msg.ack()
    except nats.errors.MsgAlreadyAckdError:
        pass
    except Exception as exc:  # noqa: BLE001
        log.warning("ack failed", error=repr(exc))


async def read_range(
    js: JetStreamContext, subject: str, stream: str, first: int, *, batch: int, fetch_timeout_s: float
) -> list[tuple[int, bytes]]:
    """The messages of `stream` on `subject` from sequence `first` to the stream's last
    when called, as (stream sequence, data): an ephemeral consumer without acks."""
    info = await js.stream_info(stream)
    last = int(info.state.last_seq)
    if last < first:
        return []
    config = ConsumerConfig(
        deliver_policy=DeliverPolicy.BY_START_SEQUENCE,
        opt_start_seq=max(1, first),
        ack_policy=AckPolicy.NONE,
        inactive_threshold=60.0,
        mem_storage=True,
    )
    sub = await js.pull_subscribe(subject, stream=stream, config=config)
    entries: list[tuple[int, bytes]] = []
    try:
        seen = first - 1
        while seen < last:
            try:
                msgs = await sub.fetch(batch, timeout=fetch_timeout_s)
            except nats.errors.TimeoutError:
                break  # nothing more (e.g. the tail was purged): what we have is all there is
            for msg in msgs:
                seen = int(msg.metadata.sequence.stream)
                entries.append((seen, msg.data))
    finally:
        await sub.unsubscribe()
    return entries


async def decode_event(msg: Msg) -> events_pb2.Event | None:
    """The message's `trix.v1.Event`, or None after terminating an undecodable one (a poison
    message must not block the consumer: it is never delivered again)."""
    event = events_pb2.Event()
    try:
        event.ParseFromString(msg.data)
    except Exception:  # noqa: BLE001 - any decode failure
        log.error("undecodable event dropped", subject=msg.subject)
        await msg.term()
        return None
    return event


class ProgressStore(Protocol):
    """The last sequence applied per table, for one consumer."""

    async def last(self, table_id: str) -> int: ...

    async def advance(self, table_id: str, sequence: int) -> None: ...


class MemoryProgress:
    """Progress kept in memory (consumers whose effects are themselves idempotent)."""

    def __init__(self) -> None:
        self._last: dict[str, int] = {}

    async def last(self, table_id: str) -> int:
        return self._last.get(table_id, 0)

    async def advance(self, table_id: str, sequence: int) -> None:
        self._last[table_id] = max(sequence, self._last.get(table_id, 0))


class IdempotentEventHandler:
    """A JetStream message callback that applies each (table, sequence) once."""

    def __init__(self, handler: EventHandler, progress: ProgressStore) -> None:
        self._handler = handler
        self._progress = progress
        self.applied = 0
        self.skipped = 0

    async def __call__(self, msg: Msg) -> None:
        event = await decode_event(msg)
        if event is None:
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
