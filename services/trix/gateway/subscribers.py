"""NATS adapters of the gateway service.

Owns the gateway's NATS side, within the whitelist of its NATS user
(`trix.natsio.permissions.gateway_permissions`):
- `NatsTables` (`TablePort`): table commands as NATS requests on the owner's subject
  with the player's caller token in the `Trix-Caller` header and a deadline; events
  of one seat's subject or the public subject of a table through an ordered JetStream
  consumer on TABLE_EVENTS (stored, then live). Nothing else: never a table's log,
  snapshots or secrets (RULES.md §14).
- `KvAccounts` (`AccountsPort`): guest accounts in the `gateway_accounts` bucket.
- `NatsPresence` (`PresencePort`): PlayerConnected / PlayerDisconnected on
  `trix.presence.<player>`, stored by the PRESENCE stream the timers consume.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator

import nats.errors
import structlog
from nats.aio.msg import Msg
from nats.js.api import AckPolicy, ConsumerConfig, DeliverPolicy
from nats.js.errors import KeyNotFoundError, KeyWrongLastSequenceError

from trix.errors import DomainError, Unavailable, from_kind
from trix.gateway.service import SPECTATOR, GatewayService
from trix.gateway.tokens import table_caller_token
from trix.natsio import subjects
from trix.natsio.connection import NatsConnection
from trix.natsio.permissions import GATEWAY_ACCOUNTS_BUCKET
from trix.natsio.publish import publish_once
from trix.v1 import events_pb2, table_pb2

log = structlog.get_logger("trix.gateway.nats")

CALLER_HEADER = "Trix-Caller"
"""NATS header of the caller token (the table service's `TOKEN_HEADER`)."""
EVENTS_STREAM = "TABLE_EVENTS"
INTERNAL_KIND = "Internal"
STATUS_HEADER = "Status"
"""Header of a JetStream status message (no messages, request timeout) on a pull's inbox."""
HISTORY_BATCH = 512
"""Stored events read per pull; a seat sees about a thousand events in a whole game."""
QUIET_RECHECK_S = 30.0
"""A subject quiet this long is checked against the store (a live message may be lost)."""
CONSUMER_IDLE_S = 30.0
"""The server removes a history consumer left behind (e.g. by a crash) after this long."""


class NatsTables:
    """`TablePort` over NATS."""

    def __init__(self, nats: NatsConnection, secret: bytes, timeout_s: float) -> None:
        self.nats = nats
        self.secret = secret
        self.timeout_s = timeout_s

    async def command(
        self, table_id: str, command: table_pb2.TableCommand, player_id: str
    ) -> table_pb2.TableCommandReply:
        token = table_caller_token(self.secret, player_id, time.time())
        try:
            msg = await self.nats.client.request(
                subjects.table_command(table_id),
                command.SerializeToString(),
                timeout=self.timeout_s,
                headers={CALLER_HEADER: token},
            )
        except (TimeoutError, nats.errors.NoRespondersError, nats.errors.TimeoutError):
            raise Unavailable("the table did not answer; retry with the same action id") from None
        except nats.errors.Error:
            raise Unavailable("the table is not reachable; retry with the same action id") from None
        reply = table_pb2.TableCommandReply.FromString(msg.data)
        if reply.HasField("error"):
            if reply.error.kind == INTERNAL_KIND:
                raise Unavailable("the table failed to answer; retry with the same action id")
            err = from_kind(reply.error.kind, reply.error.message)
            if type(err) is DomainError:
                raise Unavailable("the table refused the request")
            raise err
        return reply

    async def events(self, table_id: str, seat: int) -> AsyncIterator[events_pb2.Event]:
        """The subject's stored events, then live ones, in order and without duplicates.

        Live events come through a plain NATS subscription (no server-side consumer per
        follower: a stream holds at most 1,000 consumers by default and thousands of players
        follow at once). The stored ones are read through a short-lived pull consumer: first
        right after subscribing, then once more when the first live event arrives (every
        event before it on the subject is stored by then, since the table publishes each
        subject in order), which closes the window between subscribing and reading. After a
        NATS reconnect, or when a subject stays quiet, the store is read again from where
        the last read ended, so a live message lost on the way is still delivered."""
        subject = subjects.public_events(table_id) if seat == SPECTATOR else subjects.seat_events(table_id, seat)
        live: asyncio.Queue[Msg] = asyncio.Queue()

        async def on_live(msg: Msg) -> None:
            live.put_nowait(msg)

        sub = await self.nats.client.subscribe(subject, cb=on_live)
        last = 0
        try:
            await self.nats.client.flush(timeout=max(1, round(self.timeout_s)))
            reconnects = self.nats.reconnects
            pending, next_seq = await self._stored(subject, 0)
            verified = False
            while True:
                for event in pending:
                    if event.sequence > last:
                        last = event.sequence
                        yield event
                        if event.HasField("game_ended"):
                            return
                msg: Msg | None = None
                try:
                    async with asyncio.timeout(QUIET_RECHECK_S):
                        msg = await live.get()
                except TimeoutError:
                    pass
                pending = []
                if msg is None or not verified or self.nats.reconnects != reconnects:
                    reconnects = self.nats.reconnects
                    verified = msg is not None
                    pending, next_seq = await self._stored(subject, next_seq)
                if msg is not None:
                    pending.append(events_pb2.Event.FromString(msg.data))
        finally:
            try:
                await sub.unsubscribe()
            except Exception as exc:  # noqa: BLE001 - the connection may be gone
                log.debug("unsubscribe failed", error=type(exc).__name__)

    async def _stored(self, subject: str, start_seq: int) -> tuple[list[events_pb2.Event], int]:
        """The subject's stored events from stream sequence `start_seq` (0: all), and the
        stream sequence to read from next time; one ephemeral pull consumer, deleted after."""
        js = self.nats.jetstream
        config = ConsumerConfig(
            filter_subject=subject,
            ack_policy=AckPolicy.NONE,
            deliver_policy=DeliverPolicy.BY_START_SEQUENCE if start_seq else DeliverPolicy.ALL,
            opt_start_seq=start_seq or None,
            inactive_threshold=CONSUMER_IDLE_S,
            mem_storage=True,
            num_replicas=1,
        )
        info = await js.add_consumer(EVENTS_STREAM, config=config, timeout=self.timeout_s)
        events: list[events_pb2.Event] = []
        next_seq = start_seq
        try:
            while True:
                batch = await self._pull(info.name)
                for msg in batch:
                    meta = msg.metadata
                    next_seq = meta.sequence.stream + 1
                    events.append(events_pb2.Event.FromString(msg.data))
                if len(batch) < HISTORY_BATCH or (batch and batch[-1].metadata.num_pending == 0):
                    break
        finally:
            try:
                await js.delete_consumer(EVENTS_STREAM, info.name)
            except Exception as exc:  # noqa: BLE001 - its inactivity threshold removes it anyway
                log.debug("consumer not deleted", error=type(exc).__name__)
        return events, next_seq  # still 0 if nothing is stored yet: next time reads all

    async def _pull(self, consumer: str) -> list[Msg]:
        """One no-wait pull of up to HISTORY_BATCH messages: what is stored, then a status."""
        nc = self.nats.client
        got: asyncio.Queue[Msg] = asyncio.Queue()

        async def on_msg(msg: Msg) -> None:
            got.put_nowait(msg)

        inbox = nc.new_inbox()
        sub = await nc.subscribe(inbox, cb=on_msg)
        try:
            request = json.dumps({"batch": HISTORY_BATCH, "no_wait": True}).encode()
            await nc.publish(f"$JS.API.CONSUMER.MSG.NEXT.{EVENTS_STREAM}.{consumer}", request, reply=inbox)
            batch: list[Msg] = []
            async with asyncio.timeout(self.timeout_s):
                while len(batch) < HISTORY_BATCH:
                    msg = await got.get()
                    if msg.headers and msg.headers.get(STATUS_HEADER):
                        break  # 404 no (more) messages, 408 request done
                    batch.append(msg)
            return batch
        except TimeoutError:
            raise Unavailable("the table's events could not be read; retrying") from None
        finally:
            await sub.unsubscribe()


class KvAccounts:
    """`AccountsPort` on the `gateway_accounts` bucket."""

    def __init__(self, nats: NatsConnection) -> None:
        self.nats = nats

    async def get(self, key: str) -> bytes | None:
        kv = await self.nats.jetstream.key_value(GATEWAY_ACCOUNTS_BUCKET)
        try:
            entry = await kv.get(key)
        except KeyNotFoundError:
            return None
        return entry.value

    async def create(self, key: str, value: bytes) -> bool:
        kv = await self.nats.jetstream.key_value(GATEWAY_ACCOUNTS_BUCKET)
        try:
            await kv.create(key, value)
        except KeyWrongLastSequenceError:
            return False
        return True


class NatsPresence:
    """`PresencePort`: presence events stored by the PRESENCE stream."""

    def __init__(self, nats: NatsConnection, timeout_s: float) -> None:
        self.nats = nats
        self.timeout_s = timeout_s

    async def publish(self, player_id: str, event: events_pb2.Event) -> None:
        await publish_once(
            self.nats.jetstream,
            subjects.presence(player_id),
            event.SerializeToString(),
            attempt_timeout_s=self.timeout_s,
            deadline_s=self.timeout_s * 2,
        )


async def start(nats: NatsConnection, service: GatewayService) -> None:
    """Attach the NATS ports once NATS is connected and provisioned."""
    timeout = service.config.call_timeout_s
    service.tables = NatsTables(nats, service.config.table_secret, timeout)
    service.accounts = KvAccounts(nats)
    service.presence = NatsPresence(nats, timeout)
