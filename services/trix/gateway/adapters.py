"""The gateway's outbound NATS adapters (the implementations of its NATS `ports`).

Owns the gateway's NATS side, within the whitelist of its NATS user
(`trix.natsio.permissions.gateway_permissions`):
- `NatsTables` (`TablePort`): table commands as NATS requests on the owner's subject
  with the player's caller token in the `Trix-Caller` header and a deadline; a seat's
  events (the public copies merged with the seat's own) or a spectator's (the public
  copies), live on core NATS through one subscription per table feed for all the
  process's followers (`LiveFeeds`), what was missed asked of the owner with the player's
  token (`read_events`), through `trix.natsio.seatstream`. Nothing else: never a table's
  log, snapshots or secrets (docs/rules.md §14).
- `KvAccounts` (`AccountsPort`): guest accounts in the `gateway_accounts` bucket.
- `NatsPresence` (`PresencePort`): PlayerConnected / PlayerDisconnected on
  `trix.presence.<player>`, stored by the PRESENCE stream the timers consume.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncGenerator, Awaitable, Callable
from contextlib import aclosing
from typing import TypeVar

import nats.errors
import nats.js.api
import structlog
from nats.aio.client import NO_RESPONDERS_STATUS, Client
from nats.aio.msg import Msg
from nats.aio.subscription import Subscription
from nats.js.errors import KeyNotFoundError
from nats.js.kv import KeyValue

from trix.errors import DomainError, Unavailable, error_kind, from_kind
from trix.gateway.ports import SPECTATOR
from trix.natsio import seatstream, served, subjects
from trix.natsio.coalesce import subscribe_direct
from trix.natsio.connection import NatsConnection
from trix.natsio.names import GATEWAY_ACCOUNTS_BUCKET
from trix.natsio.publish import JetStreams, ask_until, kv_write, publish_once
from trix.runtime.identity import ROLE_PLAYER, TOKEN_HEADER, sign
from trix.v1 import events_pb2, table_pb2

log = structlog.get_logger("trix.gateway.nats")
_T = TypeVar("_T")

INTERNAL_KIND = "Internal"
STATUS_HEADER = nats.js.api.Header.STATUS.value
COMMAND_ATTEMPT_S = 0.5
"""How long one attempt of a table command waits before the same bytes are sent again: a
command that went to an owner cut off is never answered, and the new owner should get the next
attempt soon after it serves (1.5 s attempts added up to 1.5 s after it did). A
repeat reaching a table still applying the first waits behind it and answers its result."""
UNAVAILABLE_KIND = error_kind(Unavailable(""))
"""A table's UNAVAILABLE answer (`trix.table.codec.handle_command`): the same bytes are sent again."""
UNAVAILABLE_PAUSE_S = 0.25
"""Pause before a command answered UNAVAILABLE is sent again (the shard's lease, 1.5 s TTL, is
being taken over, or the table's storage waits out an election): a handover costs a few
pauses, not the client's own retry; at most 4 sends a second per waiting command."""
TOKEN_REUSE_S = 60.0
"""A player's caller token (valid `identity.DEFAULT_TTL_S`, 300 s) is signed again after this
long: every command of his within it carries the same one (an HMAC per action saved), and
the table always gets one valid for at least 240 s more."""
ACCOUNTS_ATTEMPT_S = 1.0
"""One attempt of an accounts read or create waits this long at most (`KvAccounts`)."""
MIN_ACCOUNTS_ATTEMPT_S = 0.25
MAX_CACHED_TOKENS = 20000
"""Players whose token is kept at once; past that the stale ones are dropped (all, if none is)."""


class NatsTables:
    """`TablePort` over NATS."""

    def __init__(self, nats: NatsConnection, player_key: bytes, timeout_s: float) -> None:
        self.nats = nats
        self.key = player_key
        self.timeout_s = timeout_s
        self.feeds = seatstream.LiveFeeds(nats, on_cause=self._on_cause)
        """The four seats (and spectators) of a table followed here share its live subscriptions."""
        self._cause_listener: seatstream.OnCause | None = None
        self._waiting: dict[str, asyncio.Future[bytes | int]] = {}
        """Per reply subject: the attempt of a table command waiting for its answer."""
        self._by_cause: dict[tuple[str, str], list[asyncio.Future[bytes | int]]] = {}
        """Per (table, action id): the attempts of a seat action its feed batch's cause ends
        (one per call in flight: a client's repeat of an action it still waits for is another)."""
        self._asked = 0
        self._reply_sub: Subscription | None = None
        self._reply_client: Client | None = None
        self._reply_prefix = ""
        self._reply_lock = asyncio.Lock()
        self._tokens: dict[str, tuple[float, str]] = {}
        """Per player: when his caller token was signed, and the token (`TOKEN_REUSE_S`)."""

    def player_token(self, player_id: str) -> str:
        """The player's caller token for a table command or a chat line (`NatsChatLines`),
        signed again every TOKEN_REUSE_S."""
        now = time.time()
        cached = self._tokens.get(player_id)
        if cached is not None and 0 <= now - cached[0] < TOKEN_REUSE_S:
            return cached[1]
        token = sign(self.key, ROLE_PLAYER, player_id, now)
        if len(self._tokens) >= MAX_CACHED_TOKENS:
            self._tokens = {p: t for p, t in self._tokens.items() if 0 <= now - t[0] < TOKEN_REUSE_S}
            if len(self._tokens) >= MAX_CACHED_TOKENS:
                self._tokens.clear()
        self._tokens[player_id] = (now, token)
        return token

    def hear_causes(self, listener: seatstream.OnCause) -> None:
        """`listener` hears which seat action each feed batch answers (the acceptances, issue
        16), before any reader sees the batch's events."""
        self._cause_listener = listener

    def _on_cause(self, table_id: str, cause: events_pb2.ActionCause, sequence: int) -> None:
        """A feed batch named the seat action it answers: a command waiting for it (sent
        with `ACCEPTED_BY_CAUSE_HEADER`) ends here, with no reply from the table."""
        for waiting in self._by_cause.pop((table_id, cause.action_id), ()):
            if not waiting.done():
                waiting.set_result(sequence)
        if self._cause_listener is not None:
            self._cause_listener(table_id, cause, sequence)

    def _forget_cause(self, key: tuple[str, str], waiting: asyncio.Future[bytes | int]) -> None:
        attempts = self._by_cause.get(key)
        if attempts is not None:
            if waiting in attempts:
                attempts.remove(waiting)
            if not attempts:
                del self._by_cause[key]

    async def _replies(self) -> str:
        """The subject prefix of this gateway's table-command replies, subscribed once (its
        own wildcard under the gateway's inbox prefix, `trix.natsio.permissions`)."""
        nc = self.nats.client
        if self._reply_sub is not None and self._reply_client is nc:
            return self._reply_prefix
        async with self._reply_lock:
            if self._reply_sub is None or self._reply_client is not nc:
                prefix = nc.new_inbox()
                self._reply_sub = await subscribe_direct(nc, f"{prefix}.*", self._on_reply)
                await subscribe_direct(nc, subjects.table_served(), self._on_served)
                self._reply_prefix, self._reply_client = prefix, nc
        return self._reply_prefix

    def _on_served(self, msg: Msg) -> None:
        """A replica serves shards it won: a seat action waiting on one of them (its attempt
        went to the old owner, cut off or gone) is sent again now, not after its attempt."""
        shards = served.decode(msg.data)
        for (table_id, _), attempts in list(self._by_cause.items()):
            if subjects.table_shard(table_id) in shards:
                for waiting in attempts:
                    if not waiting.done():
                        waiting.set_exception(served.ShardServed())

    def _on_reply(self, msg: Msg) -> None:
        waiting = self._waiting.get(msg.subject)
        if waiting is None or waiting.done():
            return  # an attempt given up on, or answered already by its cause
        if not msg.data and msg.headers and msg.headers.get(STATUS_HEADER) == NO_RESPONDERS_STATUS:
            # nats-server's answer to a request nobody is subscribed to (no owner right now)
            waiting.set_exception(nats.errors.NoRespondersError())
        else:
            waiting.set_result(msg.data)

    async def command(
        self, table_id: str, command: table_pb2.TableCommand, player_id: str, *, action_id: str = ""
    ) -> table_pb2.TableCommandReply:
        """Ask the owner, the same bytes again (same action id: applied once) after no
        responders (the shard is changing hands) or an attempt's `COMMAND_ATTEMPT_S` without
        an answer (the request went to an owner cut off, or one waiting out a NATS election:
        its answer to a later attempt comes as soon as the action is stored; a seat action's
        attempt ends at once when a replica says it now serves the table's shard,
        `_on_served`), until twice the
        call timeout (a NATS election takes 4-9 s). An UNAVAILABLE answer (a replica
        still subscribed whose lease lapsed, a new owner not yet writing, its storage waiting
        out an election) is sent again too, after `UNAVAILABLE_PAUSE_S`, within the same
        deadline: the client hears of it only once the deadline has passed.

        A seat action (`action_id`) at a table whose feed this gateway receives is sent first
        with `ACCEPTED_BY_CAUSE_HEADER`: its fresh acceptance ends the call when the feed
        batch naming it as its `cause` arrives (the sequence of its last event), and
        the table sends no reply; its errors and repeats are answered. Attempts
        after the first go without the header, so a lost batch costs one attempt's wait."""
        token = self.player_token(player_id)
        data = command.SerializeToString()
        subject = subjects.table_command(table_id)
        prefix = await self._replies()
        nc = self.nats.client
        loop = asyncio.get_running_loop()
        deadline = loop.time() + 2 * self.timeout_s
        cause_key = (table_id, action_id)
        by_cause = bool(action_id) and self.feeds.live(table_id)
        while True:
            left = deadline - loop.time()
            waiting: asyncio.Future[bytes | int] = loop.create_future()
            self._asked += 1
            inbox = f"{prefix}.{self._asked}"
            self._waiting[inbox] = waiting
            headers = {TOKEN_HEADER: token}
            if by_cause:
                headers[subjects.ACCEPTED_BY_CAUSE_HEADER] = "1"
            if action_id:
                self._by_cause.setdefault(cause_key, []).append(waiting)
            try:
                await nc.publish(subject, data, reply=inbox, headers=headers)
                answer = await asyncio.wait_for(waiting, max(0.05, min(COMMAND_ATTEMPT_S, left)))
            except (TimeoutError, nats.errors.NoRespondersError, nats.errors.TimeoutError, served.ShardServed) as exc:
                if loop.time() + 0.1 >= deadline:
                    raise Unavailable("the table did not answer; retry with the same action id") from None
                if isinstance(exc, nats.errors.NoRespondersError):
                    await asyncio.sleep(0.1)
                by_cause = False
                continue
            except nats.errors.Error:
                raise Unavailable("the table is not reachable; retry with the same action id") from None
            finally:
                del self._waiting[inbox]
                if action_id:
                    self._forget_cause(cause_key, waiting)
            if isinstance(answer, int):
                return table_pb2.TableCommandReply(sequence=answer)
            reply = table_pb2.TableCommandReply.FromString(answer)
            if not (reply.HasField("error") and reply.error.kind == UNAVAILABLE_KIND):
                break
            if loop.time() + UNAVAILABLE_PAUSE_S >= deadline:
                break  # the client is told, and retries with the same action id
            by_cause = False
            await asyncio.sleep(UNAVAILABLE_PAUSE_S)
        if reply.HasField("error"):
            raise _refusal(reply.error)  # never a local of this frame: its traceback would make a cycle
        return reply

    async def events(
        self,
        table_id: str,
        seat: int,
        player_id: str,
        after: int = 0,
        invitation: str = "",
        sink: seatstream.Sink | None = None,
    ) -> AsyncGenerator[events_pb2.Event, None]:
        """What the seat (or a spectator) may see after `after`: the table feed's public copies
        merged with the seat's own, live, gaps asked of the owner as `player_id`, with a spectator's
        `invitation` to a private table (`trix.natsio.seatstream`); live events in order to
        `sink` where they arrive, if given."""

        async def send(command: table_pb2.TableCommand) -> table_pb2.TableCommandReply:
            return await self.command(table_id, command, player_id)

        reader_seat = None if seat == SPECTATOR else seat
        reader = seatstream.follow(
            self.nats,
            table_id,
            reader_seat,
            timeout_s=self.timeout_s,
            history=seatstream.owner_history(table_id, reader_seat, send, invitation=invitation),
            feeds=self.feeds,
            after=after,
            sink=sink,
        )
        async with aclosing(reader) as events:  # leaves the shared feeds as soon as this ends
            async for event in events:
                yield event


def _refusal(error: table_pb2.CommandError) -> DomainError:
    """The table's error as the client is told it: an internal failure or a refusal of no
    known kind becomes UNAVAILABLE, every other kind itself."""
    if error.kind == INTERNAL_KIND:
        return Unavailable("the table failed to answer; retry with the same action id")
    err = from_kind(error.kind, error.message)
    if type(err) is DomainError:
        return Unavailable("the table refused the request")
    return err


class KvAccounts:
    """`AccountsPort` on the `gateway_accounts` bucket. Each attempt waits `ACCOUNTS_ATTEMPT_S`
    at most (a request sent while the bucket's stream elects a leader is never answered, issue
    19); one NATS does not answer (`trix.natsio.publish.RETRYABLE`, or a leader's "in process")
    is tried again until the caller's `until`, then its error is raised (UNAVAILABLE). A create
    stored but not acknowledged meets its own key on the next attempt: False, and the sign-in
    reads the account back (the one it created)."""

    def __init__(self, nats: NatsConnection) -> None:
        self.nats = nats
        self._js = JetStreams(nats)

    async def _within(self, call: Callable[[KeyValue], Awaitable[_T]], until: float | None) -> _T:
        if until is None:  # one attempt, on the connection's own request timeout
            return await call(await self._js.key_value(GATEWAY_ACCOUNTS_BUCKET))

        async def once(wait_s: float) -> _T:
            return await call(await self._js.key_value(GATEWAY_ACCOUNTS_BUCKET, wait_s))

        return await ask_until(
            once,
            deadline_s=until - time.monotonic(),
            attempt_s=ACCOUNTS_ATTEMPT_S,
            min_attempt_s=MIN_ACCOUNTS_ATTEMPT_S,
            first_pause_s=0.1,
            max_pause_s=0.5,
            in_process_too=True,
            log_event="accounts bucket did not answer, asking again",
        )

    async def get(self, key: str, until: float | None = None) -> bytes | None:
        async def once(kv: KeyValue) -> bytes | None:
            try:
                entry = await kv.get(key)
            except KeyNotFoundError:
                return None
            return entry.value

        return await self._within(once, until)

    async def create(self, key: str, value: bytes, until: float | None = None) -> bool:
        async def once(kv: KeyValue) -> bool:
            return await kv_write(kv, key, value, 0) is not None

        return await self._within(once, until)


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
