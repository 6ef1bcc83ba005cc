"""NATS side of the timers service: consumers in, table commands out, KV storage.

Owns:
- `KvDocStore`, the `DocStore` port on the `timer_deadlines` KV bucket (compare-and-set
  by revision: `create` for a new key, `update(last=revision)` otherwise);
- `NatsTableCommands`, the `TableCommands` port: AutoAct, LeaveTable and ReclaimSeat as
  NATS requests on the table's command subject, signed as the `timers` service, each
  also written to the TIMERS stream for audit (Nats-Msg-Id = table, turn/action, seat);
- `TimersNats`, the running subscriptions: two durable pull consumers shared by every
  replica (`timers-events` on the public table events, `timers-presence` on PRESENCE),
  a watch of the `t.*` documents that feeds the scheduler, and the replica heartbeat in
  `timer_replicas` whose watch gives the live replicas.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from typing import Any

import nats.errors
import structlog
from nats.aio.msg import Msg
from nats.js.api import AckPolicy, ConsumerConfig, DeliverPolicy
from nats.js.client import JetStreamContext
from nats.js.errors import APIError, KeyNotFoundError, KeyWrongLastSequenceError
from nats.js.kv import KeyValue

from trix.natsio import subjects
from trix.natsio.connection import NatsConnection
from trix.natsio.publish import publish_once
from trix.runtime.identity import ROLE_SERVICE, TOKEN_HEADER, sign
from trix.timers.service import CasConflict, Outcome, TimersService
from trix.v1 import events_pb2, table_pb2

log = structlog.get_logger("trix.timers.nats")

DEADLINES_BUCKET = "timer_deadlines"
REPLICAS_BUCKET = "timer_replicas"
EVENTS_STREAM = subjects.TABLE_EVENTS_STREAM
PRESENCE_STREAM = "PRESENCE"
EVENTS_CONSUMER = "timers-events"
PRESENCE_CONSUMER = "timers-presence"
TOKEN_TTL_S = 300
FETCH_BATCH = 64
REFUSED_KINDS = {"StaleTurn", "IllegalMove", "NotFound", "PermissionDenied", "InvalidArgument", "Unauthenticated"}


def sign_service_token(key: bytes, name: str, now_s: float, ttl_s: float = TOKEN_TTL_S) -> str:
    """The service-role caller token the table checks on AutoAct and Leave (trix.runtime.identity)."""
    return sign(key, ROLE_SERVICE, name, now_s, ttl_s)


class KvDocStore:
    """`DocStore` on a KV bucket, values as JSON."""

    def __init__(self, kv: KeyValue) -> None:
        self.kv = kv

    async def get(self, key: str) -> tuple[dict[str, Any] | None, int]:
        try:
            entry = await self.kv.get(key)
        except KeyNotFoundError:
            return None, 0
        if not entry.value:
            return None, 0
        doc: dict[str, Any] = json.loads(entry.value)
        return doc, int(entry.revision or 0)

    async def put(self, key: str, doc: dict[str, Any], revision: int) -> int:
        data = json.dumps(doc, separators=(",", ":")).encode()
        try:
            if revision == 0:
                return int(await self.kv.create(key, data))
            return int(await self.kv.update(key, data, last=revision))
        except KeyWrongLastSequenceError:
            raise CasConflict(key) from None
        except APIError as err:
            if err.err_code in (10071, 10164):
                raise CasConflict(key) from None
            raise


class NatsTableCommands:
    """`TableCommands` as NATS requests to the table's owner."""

    def __init__(self, nats_conn: NatsConnection, secret: bytes, timeout_s: float) -> None:
        self.nats = nats_conn
        self.secret = secret
        self.timeout_s = timeout_s
        self._audits: set[asyncio.Task[None]] = set()

    async def _request(self, table_id: str, command: table_pb2.TableCommand) -> Outcome:
        headers = {TOKEN_HEADER: sign_service_token(self.secret, "timers", time.time())}
        try:
            msg = await self.nats.client.request(
                subjects.table_command(table_id), command.SerializeToString(), timeout=self.timeout_s, headers=headers
            )
        except (
            TimeoutError,
            nats.errors.NoRespondersError,
            nats.errors.TimeoutError,
            nats.errors.ConnectionClosedError,
        ):
            return Outcome.UNAVAILABLE
        reply = table_pb2.TableCommandReply.FromString(msg.data)
        if not reply.HasField("error"):
            return Outcome.ACCEPTED
        if reply.error.kind in REFUSED_KINDS:
            return Outcome.REFUSED
        log.warning("table command failed", table_id=table_id, kind=reply.error.kind, message=reply.error.message)
        return Outcome.UNAVAILABLE

    async def _audit(self, subject: str, payload: bytes, msg_id: str) -> None:
        task = asyncio.ensure_future(self._audit_now(subject, payload, msg_id))
        self._audits.add(task)
        task.add_done_callback(self._audits.discard)

    async def _audit_now(self, subject: str, payload: bytes, msg_id: str) -> None:
        try:
            await publish_once(self.nats.jetstream, subject, payload, msg_id=msg_id, deadline_s=5.0)
        except Exception as exc:  # noqa: BLE001 - the audit copy must not stop the timers
            log.warning("timers audit publish failed", subject=subject, error=repr(exc))

    async def auto_act(self, table_id: str, seat: int, turn_seq: int) -> Outcome:
        request = table_pb2.AutoActRequest(table_id=table_id, seat=seat, turn_seq=turn_seq)
        outcome = await self._request(table_id, table_pb2.TableCommand(auto_act=request))
        if outcome is Outcome.ACCEPTED:
            await self._audit(
                subjects.timers_autoact(table_id), request.SerializeToString(), f"{table_id}.{turn_seq}.{seat}"
            )
        return outcome

    async def leave(self, table_id: str, seat: int, reason: int, action_id: str) -> Outcome:
        header = table_pb2.ActionHeader(table_id=table_id, seat=seat, action_id=action_id)
        request = table_pb2.LeaveTableRequest(header=header, reason=reason)  # type: ignore[arg-type]
        outcome = await self._request(table_id, table_pb2.TableCommand(leave_table=request))
        if outcome is Outcome.ACCEPTED:
            await self._audit(subjects.timers_leave(table_id), request.SerializeToString(), f"{table_id}.{action_id}")
        return outcome

    async def reclaim(self, table_id: str, seat: int, action_id: str) -> Outcome:
        header = table_pb2.ActionHeader(table_id=table_id, seat=seat, action_id=action_id)
        command = table_pb2.TableCommand(reclaim_seat=table_pb2.ReclaimSeatRequest(header=header))
        return await self._request(table_id, command)


class TimersNats:
    """The timers' running NATS subscriptions (see the module docstring)."""

    def __init__(self, nats_conn: NatsConnection, service: TimersService) -> None:
        self.nats = nats_conn
        self.service = service
        self.tasks: list[asyncio.Task[None]] = []
        self.watch_ready = asyncio.Event()
        self.flowing = asyncio.Event()
        """Cleared by tests to hold event consumption (a human move racing a deadline)."""
        self.flowing.set()
        self.events_handled = 0
        self.stopping = False
        self.pulls: list[JetStreamContext.PullSubscription] = []

    async def start(self) -> None:
        js = self.nats.jetstream
        deadlines = await js.key_value(DEADLINES_BUCKET)
        replicas = await js.key_value(REPLICAS_BUCKET)
        cfg = self.service.config
        self.service.attach(KvDocStore(deadlines), NatsTableCommands(self.nats, cfg.service_key, cfg.command_timeout_s))
        events = await js.pull_subscribe(
            subjects.all_public_events(),
            durable=EVENTS_CONSUMER,
            stream=EVENTS_STREAM,
            config=ConsumerConfig(ack_policy=AckPolicy.EXPLICIT, deliver_policy=DeliverPolicy.ALL, ack_wait=30),
        )
        presence = await js.pull_subscribe(
            subjects.all_presence(),
            durable=PRESENCE_CONSUMER,
            stream=PRESENCE_STREAM,
            config=ConsumerConfig(ack_policy=AckPolicy.EXPLICIT, deliver_policy=DeliverPolicy.NEW, ack_wait=30),
        )
        self.pulls = [events, presence]
        await replicas.put(f"r.{self.service.replica_id}", b"1")
        self.tasks = [
            asyncio.ensure_future(self._watch_docs(deadlines)),
            asyncio.ensure_future(self._watch_members(replicas)),
            asyncio.ensure_future(self._heartbeat(replicas)),
            asyncio.ensure_future(self._consume(events, self._events_lane)),
            asyncio.ensure_future(self._consume(presence, self._presence_lane)),
        ]
        await asyncio.wait_for(self.watch_ready.wait(), 30)
        self.service.start()

    async def stop(self) -> None:
        # Let the consumers finish (and ack) the batch in hand, so the next replica does not
        # wait ack_wait for events this one fetched but never handled.
        self.stopping = True
        self.flowing.set()
        consumers = self.tasks[3:]
        if consumers:
            await asyncio.wait(consumers, timeout=3.0)
        await self.service.stop()
        for task in self.tasks:
            task.cancel()
        await asyncio.gather(*self.tasks, return_exceptions=True)
        self.tasks = []
        # Nobody fetches any more: a pull subscription still holding a late delivery would
        # keep the connection's drain waiting for it until its timeout (then an asyncio
        # "exception was never retrieved" at exit). Unacked, it is redelivered elsewhere.
        for sub in self.pulls:
            with contextlib.suppress(Exception):
                await sub.unsubscribe()
        self.pulls = []
        with contextlib.suppress(Exception):
            replicas = await self.nats.jetstream.key_value(REPLICAS_BUCKET)
            await replicas.delete(f"r.{self.service.replica_id}")

    async def _events_lane(self, msgs: list[Msg]) -> None:
        """One table's public events of a fetched batch: one document write for all of them
        (issue 10), then every message acked; on failure all are redelivered (a repeated
        event is harmless: `apply_event` guards by sequence)."""
        try:
            await self.service.on_events([events_pb2.Event.FromString(m.data) for m in msgs])
        except Exception as exc:  # noqa: BLE001 - redelivered after a short delay
            log.warning("timers events failed, redelivering", error=repr(exc), count=len(msgs))
            for msg in msgs:
                with contextlib.suppress(Exception):
                    await msg.nak(delay=0.5)
            return
        self.events_handled += len(msgs)
        for msg in msgs:
            with contextlib.suppress(Exception):
                await msg.ack()

    async def _presence_lane(self, msgs: list[Msg]) -> None:
        """One player's presence events, one by one in order (each a compare-and-set)."""
        for i, msg in enumerate(msgs):
            try:
                event = events_pb2.Event.FromString(msg.data)
                await self.service.on_presence(event, int(msg.metadata.sequence.stream))
            except Exception as exc:  # noqa: BLE001 - redelivered after a short delay, with what follows
                log.warning("timers presence event failed, redelivering", error=repr(exc))
                for later in msgs[i:]:
                    with contextlib.suppress(Exception):
                        await later.nak(delay=0.5)
                return
            with contextlib.suppress(Exception):
                await msg.ack()

    async def _consume(self, sub: Any, lane: Any) -> None:
        while not self.stopping:
            await self.flowing.wait()
            try:
                msgs = await sub.fetch(FETCH_BATCH, timeout=0.5)
            except (nats.errors.TimeoutError, TimeoutError):
                continue
            except Exception as exc:  # noqa: BLE001 - reconnecting: try again
                log.warning("timers fetch failed", error=repr(exc))
                await asyncio.sleep(0.2)
                continue
            # A hold that began while this fetch was in flight holds what it brought too
            # (unacked, in hand) until released: the hold is on handling, not on fetching.
            await self.flowing.wait()
            # One lane per subject (a table's public events, a player's presence): in order
            # within a lane, lanes in parallel.
            lanes: dict[str, list[Msg]] = {}
            for msg in msgs:
                lanes.setdefault(msg.subject, []).append(msg)
            await asyncio.gather(*(lane(msgs_of_lane) for msgs_of_lane in lanes.values()))
            linger = self.service.config.fetch_linger_s
            if len(msgs) < FETCH_BATCH and linger > 0 and not self.stopping:
                await asyncio.sleep(linger)  # let the next events gather: one fetch for several

    async def _watch_docs(self, kv: KeyValue) -> None:
        while True:
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
        while True:
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
        while True:
            await asyncio.sleep(self.service.config.heartbeat_s)
            try:
                await kv.put(f"r.{self.service.replica_id}", b"1")
            except Exception as exc:  # noqa: BLE001 - next beat
                log.warning("timers heartbeat failed", error=repr(exc))


async def start(nats_conn: NatsConnection, service: TimersService) -> TimersNats:
    """Start the timers's subscriptions once NATS is connected and provisioned."""
    running = TimersNats(nats_conn, service)
    await running.start()
    return running


async def _stop_watching(watcher: KeyValue.KeyWatcher) -> None:
    """End a KV watch's subscription (and its ordered consumer): before a new watch replaces
    it after a failure, and when the task stops (else the connection's drain waits on it)."""
    with contextlib.suppress(Exception):
        await watcher.stop()  # type: ignore[no-untyped-call]
