"""The timers' inbound NATS entrypoints: what feeds `TimersService`.

Owns `TimersNats`, the running subscriptions: the tables' public event batches on core
NATS, every batch to every replica (each keeps the turns in memory and writes a table's
document only when §10 state changes; one lane per table keeps a table's batches in
order), what was missed read from the table owners (`catch_up`, through
`adapters.TableHistory`), a durable pull consumer shared by every replica on PRESENCE
(`timers-presence`), a watch of the `t.*` documents that feeds the scheduler, and the
replica heartbeat in `timer_replicas` whose watch gives the live replicas.
"""

from __future__ import annotations

import asyncio
import contextlib
import json

import structlog
from nats.aio.msg import Msg
from nats.aio.subscription import Subscription
from nats.js.api import AckPolicy, ConsumerConfig, DeliverPolicy
from nats.js.kv import KeyValue

from trix.natsio import names, subjects
from trix.natsio.coalesce import subscribe_direct
from trix.natsio.connection import NatsConnection
from trix.natsio.consumer import STOP_WAIT_S, PullConsumer
from trix.runtime.tasks import cancel_and_wait
from trix.timers.adapters import TableHistory
from trix.timers.service import TimersService
from trix.v1 import events_pb2

log = structlog.get_logger("trix.timers.nats")

REPLICAS_BUCKET = names.TIMER_REPLICAS_BUCKET
PRESENCE_STREAM = names.PRESENCE_STREAM
PRESENCE_CONSUMER = names.TIMERS_PRESENCE_CONSUMER
FETCH_BATCH = 64
CATCH_UP_CONCURRENCY = 16


class TimersNats:
    """The timers' running NATS subscriptions (see the module docstring)."""

    def __init__(
        self, nats_conn: NatsConnection, service: TimersService, deadlines: KeyValue, replicas: KeyValue
    ) -> None:
        self.nats = nats_conn
        self.service = service
        self.deadlines = deadlines
        self.replicas = replicas
        self.tasks: list[asyncio.Task[None]] = []
        self.watch_ready = asyncio.Event()
        self.flowing = asyncio.Event()
        """Cleared by tests to hold event consumption (a human move racing a deadline)."""
        self.flowing.set()
        self.events_handled = 0
        self.stopping = False
        self.presence: PullConsumer | None = None
        self.events_sub: Subscription | None = None
        self.lanes: dict[str, asyncio.Task[None]] = {}
        """The last batch task of each table: the next one waits for it (a table's batches in order)."""
        self.history = TableHistory(nats_conn, service.config.signer, service.config.command_timeout_s)

    async def start(self) -> None:
        js = self.nats.jetstream
        deadlines, replicas = self.deadlines, self.replicas
        cfg = self.service.config
        # One player's presence events in order (each a compare-and-set), players in parallel.
        self.presence = PullConsumer(
            PRESENCE_CONSUMER,
            self.nats.client,
            self._on_presence,
            batch=FETCH_BATCH,
            fetch_timeout_s=0.5,
            linger_s=cfg.fetch_linger_s,
            lane=lambda msg: msg.subject,
            gate=self.flowing,
        )
        config = ConsumerConfig(
            durable_name=PRESENCE_CONSUMER, ack_policy=AckPolicy.EXPLICIT, deliver_policy=DeliverPolicy.NEW, ack_wait=30
        )
        await self.presence.start(js, subjects.all_presence(), stream=PRESENCE_STREAM, config=config)
        await replicas.put(f"r.{self.service.replica_id}", b"1")
        self.tasks = [
            asyncio.ensure_future(self._watch_docs(deadlines)),
            asyncio.ensure_future(self._watch_members(replicas)),
            asyncio.ensure_future(self._heartbeat(replicas)),
        ]
        self.events_sub = await subscribe_direct(self.nats.client, subjects.all_public_events(), self._on_batch)
        await asyncio.wait_for(self.watch_ready.wait(), 30)
        self.service.start()
        self.tasks.append(asyncio.ensure_future(self._catch_up_at_start()))
        self.nats.reconnect_hooks.append(self.catch_up)

    async def stop(self) -> None:
        # Let the consumers finish (and ack) the batch in hand, so the next replica does not
        # wait ack_wait for events this one fetched but never handled.
        self.stopping = True
        self.flowing.set()
        with contextlib.suppress(ValueError):
            self.nats.reconnect_hooks.remove(self.catch_up)
        if self.events_sub is not None:
            with contextlib.suppress(Exception):
                await self.events_sub.unsubscribe()
            self.events_sub = None
        lanes = list(self.lanes.values())
        await asyncio.gather(
            *([self.presence.stop()] if self.presence is not None else []),
            *([asyncio.wait(lanes, timeout=STOP_WAIT_S)] if lanes else []),
        )
        self.presence = None
        await self.service.stop()
        # Bounded (trix.runtime.tasks): a task whose cancellation was swallowed also sees
        # `stopping` at its next step and ends by itself.
        await cancel_and_wait(self.tasks, STOP_WAIT_S)
        self.tasks = []
        with contextlib.suppress(Exception):
            replicas = await self.nats.jetstream.key_value(REPLICAS_BUCKET)
            await replicas.delete(f"r.{self.service.replica_id}")

    async def catch_up(self) -> int:
        """Read what this replica missed: the table events travel unstored on core NATS,
        so a replica that was down or disconnected asks every table replica for
        its unfinished tables (`trix.table.live`) and each owner for the public events after
        what its document of the table reflects (`read_events`); they are folded in like a
        live batch. Returns the events read. Never raises (logged)."""
        try:
            live = await self.history.live_tables()
            gate = asyncio.Semaphore(CATCH_UP_CONCURRENCY)
            read = 0

            async def one(table_id: str, sequence: int) -> None:
                nonlocal read
                after = self.service.known_sequence(table_id)
                while after < sequence and not self.stopping:
                    async with gate:
                        events = await self.history.public_events(table_id, after)
                    if not events:
                        return
                    await self.service.on_events(events)
                    read += len(events)
                    after = events[-1].sequence

            await asyncio.gather(*(one(t.table_id, t.sequence) for t in live))
            log.info("timers caught up", tables=len(live), events=read)
            return read
        except Exception as exc:  # noqa: BLE001 - the next reconnect (or restart) tries again
            log.warning("timers catch-up failed", error=repr(exc))
            return 0

    async def _catch_up_at_start(self) -> None:
        await self.catch_up()

    def _on_batch(self, msg: Msg) -> None:
        """One action's public events (direct, `subscribe_direct`): folded in at once when they
        need no store (`TimersService.fold_in_memory`, the steady path: no task), else queued
        behind the table's previous batch (its lane)."""
        try:
            batch = events_pb2.TableEventBatch.FromString(msg.data).events
        except Exception:  # noqa: BLE001 - a poison message must not stop the subscription
            log.error("undecodable event batch dropped", subject=msg.subject)
            return
        if not batch or self.stopping:
            return
        table_id = batch[0].table_id
        before = self.lanes.get(table_id)
        if before is None and self.flowing.is_set() and self.service.fold_in_memory(batch):
            self.events_handled += len(batch)
            return
        events = list(batch)
        task = asyncio.ensure_future(self._events_lane(before, events))
        self.lanes[table_id] = task

        def done(finished: asyncio.Task[None]) -> None:
            if self.lanes.get(table_id) is finished:
                del self.lanes[table_id]

        task.add_done_callback(done)

    async def _events_lane(self, before: asyncio.Task[None] | None, events: list[events_pb2.Event]) -> None:
        """One table's batch: one document write for all its events, after the
        table's previous batch; a failed write is tried again until it holds or the replica
        stops (a repeated event is harmless: `apply_event` guards by sequence)."""
        if before is not None:
            await asyncio.wait({before})
        delay = 0.1
        while True:
            await self.flowing.wait()
            try:
                await self.service.on_events(events)
            except Exception as exc:  # noqa: BLE001 - NATS trouble: again after a short delay
                if self.stopping:
                    return
                log.warning("timers events failed, retrying", error=repr(exc), count=len(events))
                await asyncio.sleep(delay)
                delay = min(delay * 2, 2.0)
                continue
            self.events_handled += len(events)
            return

    async def _on_presence(self, msg: Msg) -> None:
        event = events_pb2.Event.FromString(msg.data)
        await self.service.on_presence(event, int(msg.metadata.sequence.stream))

    async def _watch_docs(self, kv: KeyValue) -> None:
        while not self.stopping:
            try:
                watcher = await kv.watch("t.*")
                try:
                    async for entry in watcher:
                        if entry is None:
                            self.watch_ready.set()
                            continue
                        table_id = entry.key[2:]
                        revision = int(entry.revision or 0)
                        if entry.operation in ("DEL", "PURGE") or not entry.value:
                            self.service.on_doc(table_id, None)
                        elif not self.service.knows(table_id, revision):  # not this replica's own write
                            self.service.on_doc(table_id, json.loads(entry.value), revision)
                finally:
                    await _stop_watching(watcher)
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # noqa: BLE001 - resubscribe; the watch replays the last values
                log.warning("deadline watch failed, restarting", error=repr(exc))
                await asyncio.sleep(0.5)

    async def _watch_members(self, kv: KeyValue) -> None:
        members: set[str] = set()
        while not self.stopping:
            try:
                watcher = await kv.watch("r.*")
                try:
                    async for entry in watcher:
                        if entry is None:
                            self.service.on_members(set(members))
                            continue
                        name = entry.key[2:]
                        if entry.operation in ("DEL", "PURGE") or not entry.value:
                            members.discard(name)
                        else:
                            members.add(name)
                        self.service.on_members(set(members))
                finally:
                    await _stop_watching(watcher)
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # noqa: BLE001 - resubscribe
                log.warning("replica watch failed, restarting", error=repr(exc))
                await asyncio.sleep(0.5)

    async def _heartbeat(self, kv: KeyValue) -> None:
        while not self.stopping:
            await asyncio.sleep(self.service.config.heartbeat_s)
            try:
                await kv.put(f"r.{self.service.replica_id}", b"1")
            except Exception as exc:  # noqa: BLE001 - next beat
                log.warning("timers heartbeat failed", error=repr(exc))


async def _stop_watching(watcher: KeyValue.KeyWatcher) -> None:
    """End a KV watch's subscription (and its ordered consumer): before a new watch replaces
    it after a failure, and when the task stops (else the connection's drain waits on it)."""
    with contextlib.suppress(Exception):
        await watcher.stop()  # type: ignore[no-untyped-call]
