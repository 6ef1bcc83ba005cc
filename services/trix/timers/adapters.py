"""The timers' outbound NATS adapters: the implementations of `trix.timers.ports`.

Owns:
- `KvDocStore`, the `DocStore` port on the `timer_deadlines` KV bucket (compare-and-set
  by revision: `create` for a new key, `update(last=revision)` otherwise);
- `NatsTableCommands`, the `TableCommands` port: AutoAct, LeaveTable and ReclaimSeat as
  NATS requests on the table's command subject, signed as the `timers` service, each
  also written to the TIMERS stream for audit (Nats-Msg-Id = table, turn/action, seat);
- `TableHistory`, what a catching-up replica reads from the table replicas: their
  unfinished tables and a table's public events after a sequence.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from typing import Any

import nats.errors
import structlog
from nats.aio.msg import Msg
from nats.js.client import JetStreamContext
from nats.js.errors import APIError, KeyNotFoundError, KeyWrongLastSequenceError
from nats.js.kv import KeyValue

from trix.natsio import names, seatstream, subjects
from trix.natsio.connection import NatsConnection
from trix.natsio.publish import EXPECTED_LAST_SUBJECT_SEQ_HEADER, RETRYABLE, ask_until, kv_write, publish_once
from trix.natsio.served import ServedRequests
from trix.runtime.identity import TOKEN_HEADER, ServiceSigner
from trix.runtime.tasks import start_kept
from trix.timers.ports import CasConflict, Outcome
from trix.v1 import events_pb2, table_pb2

log = structlog.get_logger("trix.timers.nats")

DEADLINES_BUCKET = names.TIMER_DEADLINES_BUCKET
LIVE_QUIET_S = 0.5
"""Catching up: the table replicas' answers are in once none came for this long (at most LIVE_WAIT_S)."""
LIVE_WAIT_S = 3.0
READ_BATCH = 512
COMMAND_ATTEMPT_S = 0.5
"""One attempt of a command to a table (AutoAct, Leave, Reclaim) waits this long; unanswered, the
same bytes are sent again within `command_timeout_s`. A request that went to an owner cut off
(its shards about to be taken over) is never answered, and one sent while the table waits out a
NATS election is answered only once its append is stored: with one 3 s attempt the next bot
move came up to 3 s after the new owner served, or after NATS was back. The table
applies a repeated AutoAct once (the turn's entry id); a repeat queued behind the first is
refused as stale, as a re-fired deadline was before. An attempt waiting on a shard that a replica
says it now serves (`trix.natsio.served`) is sent again at once."""
MIN_ATTEMPT_S = 0.1
MAX_PAUSE_S = 0.1
"""Longest pause between two attempts (an attempt that timed out has waited already)."""
UNANSWERED: tuple[type[BaseException], ...] = (*RETRYABLE, nats.errors.ConnectionClosedError)
REFUSED_KINDS = {"StaleTurn", "IllegalMove", "NotFound", "PermissionDenied", "InvalidArgument", "Unauthenticated"}


class KvDocStore:
    """`DocStore` on a KV bucket, values as JSON."""

    def __init__(self, kv: KeyValue, js: JetStreamContext, bucket: str = DEADLINES_BUCKET) -> None:
        self.kv = kv
        self.js = js
        self.subject_prefix = f"$KV.{bucket}."
        """The bucket's subjects (NATS ADR-8: `$KV.<bucket>.<key>`), for a write with its own TTL."""

    async def get(self, key: str) -> tuple[dict[str, Any] | None, int]:
        try:
            entry = await self.kv.get(key)
        except KeyNotFoundError:
            return None, 0
        if not entry.value:
            return None, 0
        doc: dict[str, Any] = json.loads(entry.value)
        return doc, int(entry.revision or 0)

    async def put(self, key: str, doc: dict[str, Any], revision: int, ttl_s: float = 0.0) -> int:
        """Compare-and-set; `ttl_s` > 0 as the message's own TTL (`Nats-TTL`, nats-server 2.11+,
        the bucket's `allow_msg_ttl`, `trix.natsio.provisioning`): the server removes it then.
        nats-py's `KeyValue.update` takes no TTL, so that write is the same JetStream publish
        it makes (the expected last sequence of the key's subject) with the TTL added."""
        data = json.dumps(doc, separators=(",", ":")).encode()
        try:
            if revision == 0:
                created = await kv_write(self.kv, key, data, 0, msg_ttl=ttl_s or None)
                if created is None:
                    raise CasConflict(key)
                return created
            if ttl_s > 0:
                headers = {EXPECTED_LAST_SUBJECT_SEQ_HEADER: str(revision)}
                ack = await self.js.publish(self.subject_prefix + key, data, headers=headers, msg_ttl=ttl_s)
                return int(ack.seq)
            return int(await self.kv.update(key, data, last=revision))
        except KeyWrongLastSequenceError:
            raise CasConflict(key) from None
        except APIError as err:
            if err.err_code in (10071, 10164):
                raise CasConflict(key) from None
            raise


class NatsTableCommands:
    """`TableCommands` as NATS requests to the table's owner."""

    def __init__(self, nats_conn: NatsConnection, signer: ServiceSigner, timeout_s: float) -> None:
        self.nats = nats_conn
        self.signer = signer
        self.timeout_s = timeout_s
        self._audits: set[asyncio.Task[None]] = set()
        self.requests = ServedRequests(nats_conn)
        """Each attempt ends at once when a replica says it now serves the table's shard."""

    async def _request(self, table_id: str, command: table_pb2.TableCommand) -> Outcome:
        headers = {TOKEN_HEADER: self.signer.token()}
        subject, data = subjects.table_command(table_id), command.SerializeToString()
        shard = subjects.table_shard(table_id)

        async def attempt(wait_s: float) -> Msg:
            return await self.requests.request(subject, shard, data, headers, wait_s)

        try:
            msg = await ask_until(
                attempt,
                deadline_s=self.timeout_s,
                attempt_s=COMMAND_ATTEMPT_S,
                min_attempt_s=MIN_ATTEMPT_S,
                max_pause_s=MAX_PAUSE_S,
            )
        except UNANSWERED:
            return Outcome.UNAVAILABLE
        reply = table_pb2.TableCommandReply.FromString(msg.data)
        if not reply.HasField("error"):
            return Outcome.ACCEPTED
        if reply.error.kind in REFUSED_KINDS:
            return Outcome.REFUSED
        log.warning("table command failed", table_id=table_id, kind=reply.error.kind, message=reply.error.message)
        return Outcome.UNAVAILABLE

    async def _audit(self, subject: str, payload: bytes, msg_id: str) -> None:
        start_kept(self._audits, self._audit_now(subject, payload, msg_id))

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


class TableHistory:
    """What the table replicas tell a replica catching up (`entrypoints.TimersNats.catch_up`)."""

    def __init__(self, nats_conn: NatsConnection, signer: ServiceSigner, timeout_s: float) -> None:
        self.nats = nats_conn
        self.signer = signer
        self.timeout_s = timeout_s

    async def live_tables(self) -> list[table_pb2.LiveTable]:
        """Every table replica's unfinished tables (`trix.table.live`), gathered until the
        answers stop (LIVE_QUIET_S) or LIVE_WAIT_S."""
        nc = self.nats.client
        inbox = nc.new_inbox()
        got: list[table_pb2.LiveTable] = []
        came = asyncio.Event()

        async def on_reply(msg: Msg) -> None:
            got.extend(table_pb2.LiveTablesResponse.FromString(msg.data).tables)
            came.set()

        sub = await nc.subscribe(inbox, cb=on_reply)
        try:
            await nc.publish(subjects.table_live(), b"", reply=inbox)
            loop = asyncio.get_running_loop()
            end = loop.time() + LIVE_WAIT_S
            while loop.time() < end:
                came.clear()
                try:
                    await asyncio.wait_for(came.wait(), LIVE_QUIET_S)
                except TimeoutError:
                    break  # quiet: every replica answered
        finally:
            with contextlib.suppress(Exception):
                await sub.unsubscribe()
        return got

    async def public_events(self, table_id: str, after: int) -> list[events_pb2.Event]:
        """The table's public events after `after` (at most READ_BATCH), read from its owner
        (`read_events`); none if the table refuses."""

        async def send(command: table_pb2.TableCommand) -> table_pb2.TableCommandReply:
            headers = {TOKEN_HEADER: self.signer.token()}
            msg = await self.nats.client.request(
                subjects.table_command(table_id),
                command.SerializeToString(),
                timeout=self.timeout_s,
                headers=headers,
            )
            reply = table_pb2.TableCommandReply.FromString(msg.data)
            if reply.HasField("error"):
                log.info("table events not read", table_id=table_id, kind=reply.error.kind)
                return table_pb2.TableCommandReply()  # nothing read: caught up as far as it goes
            return reply

        return await seatstream.owner_history(table_id, None, send, limit=READ_BATCH)(after)
