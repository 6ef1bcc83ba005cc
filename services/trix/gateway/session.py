"""One player's stream through the gateway: `Session`, its requests in and everything he
may see out. Owns the session's state machine: its outbox (batched events, the acceptance
of an action riding with its events), the tables it follows and their resumes, its ticket
watchers, its rate limit. `GatewayService` opens and closes sessions and does the rest.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import structlog

from trix.errors import DomainError, InvalidArgument, ResourceExhausted, Unavailable
from trix.gateway.limits import RateLimiter, rate_limited
from trix.gateway.outbox import Outbox, Outgoing
from trix.gateway.ports import SPECTATOR
from trix.gateway.tokens import Principal
from trix.gateway.validation import check_id
from trix.v1 import events_pb2, gateway_pb2, matchmaking_pb2

if TYPE_CHECKING:
    from trix.gateway.service import GatewayService

log = structlog.get_logger("trix.gateway")

TERMINAL_TICKET_STATES = (
    matchmaking_pb2.TICKET_STATE_MATCHED,
    matchmaking_pb2.TICKET_STATE_CANCELLED,
    matchmaking_pb2.TICKET_STATE_EXPIRED,
)
CLOSE_WAIT_S = 2.0
"""How long closing a session waits for its follow and ticket tasks to end."""
MAX_BATCH_EVENTS = 64
MAX_BATCH_BYTES = 256 * 1024
"""Bounds of one EventBatch: far below a client's default 4 MiB receive limit; an
event larger than the byte bound alone (a GameEnded with its record) goes in its own message."""


def client_error(err: DomainError, action_id: str = "") -> gateway_pb2.ClientError:
    from trix.errors import status_code_name

    error = gateway_pb2.ClientError(code=status_code_name(err), message=err.public_message, action_id=action_id)
    if isinstance(err, ResourceExhausted) and err.retry_after_s is not None:
        error.retry_delay.FromNanoseconds(err.retry_delay_ns())
    return error


@dataclass
class _Follow:
    table_id: str
    seat: int
    task: asyncio.Task[None] | None = None
    invitation: str = ""
    """A spectator's invitation to a private table, shown to the table on every read."""


@dataclass
class _Acting:
    """An action of the session sent to its table and not answered yet."""

    table_id: str
    request_id: str
    answered: bool = False
    """Its events came (their batch named it, `Session.applied`): its acceptance goes out with
    them, and the table's reply is not needed any more."""


@dataclass
class Session:
    """One player's stream: requests in, everything he may see out."""

    gateway: GatewayService
    principal: Principal
    interactive: bool = True
    session_id: str = field(default_factory=lambda: uuid.uuid4().hex[:16])
    outbox: Outbox = field(init=False)
    """What goes out, in order: a table event as itself (wrapped, or batched, on the way out)."""
    follows: dict[tuple[str, int], _Follow] = field(default_factory=dict)
    last_seq: dict[tuple[str, int], int] = field(default_factory=dict)
    watchers: dict[str, asyncio.Task[None]] = field(default_factory=dict)
    limiter: RateLimiter = field(init=False)
    """The stream's actions (apart from its other requests, so reads never cost a turn)."""
    requests_limiter: RateLimiter = field(init=False)
    """The stream's other requests (views, queries, pings, resumes, matchmaking)."""
    closed: bool = False
    batch_events: bool = False
    """The client asked for EventBatch messages (`SessionRequest.batch_events`)."""
    actions: dict[str, _Acting] = field(default_factory=dict)
    """The player's actions in flight (sent to the table, not answered yet), by action id."""
    accepts: dict[tuple[str, int], list[tuple[int, gateway_pb2.SessionResponse]]] = field(default_factory=dict)
    """Per followed seat: acceptances due right behind the event of their sequence."""
    chats: set[asyncio.Task[None]] = field(default_factory=set)
    """The stream's chat lines not answered yet (`_chat`)."""

    def __post_init__(self) -> None:
        self.outbox = Outbox(self.gateway.config.outbox_size)
        self.limiter = RateLimiter(self.gateway.config.rate_per_s, self.gateway.config.rate_burst)
        self.requests_limiter = RateLimiter(self.gateway.config.rate_per_s, self.gateway.config.rate_burst)

    @property
    def player_id(self) -> str:
        return self.principal.player_id

    def push(self, message: gateway_pb2.SessionResponse | events_pb2.Event) -> None:
        if self.closed:
            return
        try:
            self.outbox.put_nowait(message)
        except asyncio.QueueFull:  # a client that does not read: end its session, it resumes later
            log.warning("session outbox full, closing", player_id=self.player_id)
            self._finish()

    def _finish(self) -> None:
        if not self.closed:
            self.closed = True
            with contextlib.suppress(asyncio.QueueFull):
                self.outbox.put_nowait(None)

    async def messages(self) -> AsyncIterator[gateway_pb2.SessionResponse]:
        """The outbox, in order. With `batch_events`, the events waiting behind an event go out
        as one EventBatch, up to MAX_BATCH_EVENTS / MAX_BATCH_BYTES, and the acceptance of the
        player's action that produced them, queued right behind them (`applied`), rides in the
        same message: one message per action. Nothing waits. A lone event, and
        every other kind of message, goes out as before."""
        outbox = self.outbox
        held: Outgoing = None
        holding = False
        while True:
            if holding:
                message, held, holding = held, None, False
            else:
                message = await outbox.get()
            if message is None:
                return
            if isinstance(message, gateway_pb2.SessionResponse):
                yield message
                continue
            if not self.batch_events:
                yield gateway_pb2.SessionResponse(event=message)
                continue
            out = gateway_pb2.SessionResponse()
            batch = out.event_batch
            batch.events.append(message)
            size = message.ByteSize()
            while len(batch.events) < MAX_BATCH_EVENTS and not outbox.empty():
                following = outbox.get_nowait()
                if isinstance(following, events_pb2.Event):
                    size += following.ByteSize()
                    if size <= MAX_BATCH_BYTES:
                        batch.events.append(following)
                        continue
                elif following is not None and following.WhichOneof("kind") == "accepted":
                    batch.accepted.CopyFrom(following.accepted)  # the action behind these events
                    out.request_id = following.request_id
                    break
                held, holding = following, True  # a non-event, the end, or too big: next round
                break
            if len(batch.events) == 1 and not batch.HasField("accepted"):
                yield gateway_pb2.SessionResponse(event=message)
            else:
                yield out

    def applied(self, table_id: str, seat: int, action_id: str, sequence: int) -> None:
        """The events of this session's action `action_id`, through `sequence`, have come to
        the seat's live feed (the table's feed batch names its cause, before any reader
        sees them): its acceptance goes right behind them, so one message carries both, and
        the table's reply, which comes next, sends nothing more. The one way an acceptance
        joins its events; none waits for the other (no timer). An action whose batch did not
        come this way (lost, or the seat not followed here) is answered by its reply alone."""
        acting = self.actions.get(action_id)
        key = (table_id, seat)
        follow = self.follows.get(key)
        if acting is None or acting.answered or acting.table_id != table_id:
            return
        if follow is None or follow.task is None or follow.task.done():
            return
        acting.answered = True
        out = gateway_pb2.SessionResponse(request_id=acting.request_id)
        out.accepted.action_id = action_id
        out.accepted.sequence = sequence
        if self.last_seq.get(key, 0) >= sequence:
            self.push(out)
        else:
            self.accepts.setdefault(key, []).append((sequence, out))

    def _flush_accepted(self, key: tuple[str, int], through: int | None = None) -> None:
        """The acceptances of `key` due by sequence `through` (None: all) go out now, in order."""
        due = self.accepts.get(key)
        if not due:
            return
        while due and (through is None or due[0][0] <= through):
            self.push(due.pop(0)[1])
        if not due:
            del self.accepts[key]

    async def close(self) -> None:
        self._finish()
        self.accepts.clear()
        tasks = [f.task for f in self.follows.values() if f.task is not None] + list(self.watchers.values())
        tasks += list(self.chats)
        for task in tasks:
            task.cancel()
        if tasks:
            # Bounded: a cancellation can be swallowed below us (Python 3.11's wait_for
            # returns a result that raced the cancel), so never wait on it forever; such a
            # task sees `closed` at its next step and ends by itself.
            await asyncio.wait(tasks, timeout=CLOSE_WAIT_S)
        self.follows.clear()
        self.watchers.clear()
        await self.gateway.closed(self)

    # -- requests ---------------------------------------------------------------------------

    async def handle(self, request: gateway_pb2.SessionRequest) -> None:
        """Answer one client message; errors become typed ClientError messages."""
        rid = request.request_id[:64]
        which = request.WhichOneof("kind")
        action_id = request.action.action_id[:64] if which == "action" else ""
        if request.batch_events:
            self.batch_events = True  # sticky: a stream's later requests need not repeat it
        try:
            limiter = self.limiter if which == "action" else self.requests_limiter
            if not limiter.allow():
                raise rate_limited(limiter)
            await self._dispatch(request, which, rid)
        except Exception as exc:  # noqa: BLE001 - typed for the client, a bug logged with its id (`_failed`)
            self._failed(exc, rid, action_id)

    def _failed(self, exc: Exception, rid: str, action_id: str = "") -> None:
        """A request's refusal (its typed ClientError), or a bug's (INTERNAL with an id, logged)."""
        if isinstance(exc, DomainError):
            self.push(gateway_pb2.SessionResponse(error=client_error(exc, action_id), request_id=rid))
            return
        error_id = uuid.uuid4().hex[:16]
        log.error("unexpected error in session", error_id=error_id, exc_info=exc)
        internal = gateway_pb2.ClientError(code="INTERNAL", message=f"internal error (error id {error_id})")
        internal.action_id = action_id
        self.push(gateway_pb2.SessionResponse(error=internal, request_id=rid))

    async def _chat(self, social: gateway_pb2.SocialRequest, rid: str) -> None:
        """A chat line, answered on its own task (`_dispatch`)."""
        try:
            answer = await self.gateway.social.handle(
                self.player_id, social, self.principal.display_name, self.session_id
            )
        except Exception as exc:  # noqa: BLE001 - as `handle`'s
            self._failed(exc, rid)
            return
        self.push(gateway_pb2.SessionResponse(request_id=rid, social=answer))

    async def handle_malformed(self) -> None:
        """A message whose bytes did not decode: a typed error, the session goes on."""
        if not self.requests_limiter.allow():
            error = client_error(rate_limited(self.requests_limiter))
        else:
            error = gateway_pb2.ClientError(code="INVALID_ARGUMENT", message="the request did not decode")
        self.push(gateway_pb2.SessionResponse(error=error))

    async def _dispatch(self, request: gateway_pb2.SessionRequest, which: str | None, rid: str) -> None:
        gw, pid = self.gateway, self.player_id
        if which == "action":
            action = request.action
            if not action.action_id:
                action.action_id = uuid.uuid4().hex
            acting = _Acting(action.table_id or gw.player(pid).table_id, rid)
            mine = self.actions.setdefault(action.action_id, acting) is acting  # a repeat in flight: its reply
            try:
                accepted = await gw.act(pid, action)
            except Exception:
                if mine and acting.answered:
                    return  # its events came, so it was accepted; only the reply's way failed
                raise
            finally:
                if mine:
                    del self.actions[action.action_id]
            if not (mine and acting.answered):
                out = gateway_pb2.SessionResponse(request_id=rid)
                out.accepted.CopyFrom(accepted)
                self.push(out)
            return
        out = gateway_pb2.SessionResponse(request_id=rid)
        if which == "find_match":
            ticket = await gw.find_match(pid, request.find_match, self.principal.display_name)
            out.ticket.CopyFrom(ticket)
            self.push(out)
            self.watch_ticket(ticket, rid)
            return
        elif which == "cancel_match":
            out.ticket.CopyFrom(await gw.cancel_match(pid, request.cancel_match.ticket_id))
        elif which == "resume":
            resume = request.resume
            await self.resume(resume.table_id, resume.after_sequence, rid, take_seat=not resume.auto_play)
            return
        elif which == "ping":
            out.pong = True
        elif which == "watch":
            await self.spectate(request.watch.table_id, request.watch.after_sequence, request.watch.invitation)
            return
        elif which == "create_private":
            created = await gw.create_private(pid, request.create_private, self.principal.display_name)
            out.private_game.CopyFrom(created)
            self.push(out)
            self.watch_ticket(created.ticket, rid)
            return
        elif which == "join_private":
            ticket = await gw.join_private(pid, request.join_private, self.principal.display_name)
            out.ticket.CopyFrom(ticket)
            self.push(out)
            self.watch_ticket(ticket, rid)
            return
        elif which == "start_private":
            out.private_started.table_id = await gw.start_private(
                pid, request.start_private.code, request.start_private.partner
            )
        elif which == "query":
            out.query.CopyFrom(await gw.query(pid, request.query))
        elif which == "view":
            out.snapshot.CopyFrom(await gw.view(pid, request.view.table_id))
        elif which == "social":
            if request.social.HasField("send_chat"):
                # A chat line waits for its window (docs/adr/0031): answered on a task of its
                # own, so the stream's next request (an action) never waits behind it.
                chat = asyncio.ensure_future(self._chat(request.social, rid))
                self.chats.add(chat)
                chat.add_done_callback(self.chats.discard)
                return
            social = await gw.social.handle(pid, request.social, self.principal.display_name, self.session_id)
            out.social.CopyFrom(social)
        else:
            raise InvalidArgument("empty or unknown request")
        self.push(out)

    # -- tickets ----------------------------------------------------------------------------

    def watch_ticket(self, ticket: matchmaking_pb2.Ticket, request_id: str = "") -> None:
        """Forward the ticket's updates after `ticket` (already sent), each with `request_id`,
        the request that asked for the ticket; follow its table once matched."""
        if ticket.state == matchmaking_pb2.TICKET_STATE_MATCHED and ticket.table_id:
            self._follow_matched(ticket)
            return
        if ticket.ticket_id in self.watchers or ticket.state in TERMINAL_TICKET_STATES:
            return
        task = asyncio.ensure_future(self._watch(ticket.ticket_id, request_id, ticket.state))
        self.watchers[ticket.ticket_id] = task

    async def _watch(self, ticket_id: str, request_id: str = "", sent: int = 0) -> None:
        """The ticket's updates, each state once (the watch starts with the state the
        request's answer carried already), each with the request's `request_id`."""
        delay = 0.1
        while not self.closed:
            try:
                async for reply in self.gateway.watch_ticket(self.player_id, ticket_id):
                    if self.closed:
                        return
                    if reply.HasField("queue"):
                        self.push(gateway_pb2.SessionResponse(queue=reply.queue, request_id=request_id))
                        continue
                    ticket = reply.ticket
                    if ticket.state != sent:
                        sent = ticket.state
                        self.push(gateway_pb2.SessionResponse(ticket=ticket, request_id=request_id))
                    if ticket.state == matchmaking_pb2.TICKET_STATE_MATCHED and ticket.table_id:
                        self._follow_matched(ticket)
                    if ticket.state in TERMINAL_TICKET_STATES:
                        return
                return
            except DomainError as err:
                if not isinstance(err, Unavailable):
                    self.push(gateway_pb2.SessionResponse(error=client_error(err)))
                    return
            await asyncio.sleep(delay)
            delay = min(delay * 2, 2.0)

    def _follow_matched(self, ticket: matchmaking_pb2.Ticket) -> None:
        self.gateway.player(self.player_id).table_id = ticket.table_id
        self._start_follow(ticket.table_id, ticket.seat, 0)

    # -- table events -----------------------------------------------------------------------

    async def resume(self, table_id: str, after: int, request_id: str = "", *, take_seat: bool = True) -> None:
        """Follow the player's seat from `after`: exactly the missing events, in order, after
        the acknowledgment (`Resumed`, with the resume's `request_id`). His seat still played
        by auto-play is his from now on, unless he asked to leave it so (`take_seat`)."""
        gw = self.gateway
        if not table_id and not gw.player(self.player_id).table_id:
            ticket_id = gw.player(self.player_id).ticket_id
            if ticket_id and ticket_id not in self.watchers:  # not seated yet: the ticket leads to the table
                self._resumed("", SPECTATOR, after, request_id)
                task = asyncio.ensure_future(self._watch(ticket_id, request_id))
                self.watchers[ticket_id] = task
                return
        table_id = gw.current_table(self.player_id, table_id)
        seat = await gw.seat_of(table_id, self.player_id)
        self._resumed(table_id, seat, after, request_id)
        self._start_follow(table_id, seat, after)
        # Followed first: a game the seed completes (every other seat auto-played) is over at
        # once, and its events reach this seat live, before its record can be archived.
        await gw.open_seat(table_id, seat, self.player_id, take=take_seat)

    def _resumed(self, table_id: str, seat: int, after: int, request_id: str) -> None:
        out = gateway_pb2.SessionResponse(request_id=request_id)
        out.resumed.table_id, out.resumed.seat, out.resumed.after_sequence = table_id, seat, after
        self.push(out)

    async def spectate(self, table_id: str, after: int, invitation: str = "") -> None:
        """Public events of a table (docs/rules.md §14) for a signed-in player; the table's
        owner refuses a private table to anyone but its players and the holders of an
        invitation from one of them (PERMISSION_DENIED)."""
        check_id(table_id, "table id")
        self._check_follows((table_id, SPECTATOR))
        # Asked of the table every time (never the cache): it refuses a private table to others.
        await self.gateway.seat_map(table_id, self.player_id, refresh=True, invitation=invitation)  # NOT_FOUND
        self._start_follow(table_id, SPECTATOR, after, invitation)

    def _check_follows(self, key: tuple[str, int]) -> None:
        """At most TRIX_GATEWAY_MAX_STREAMS tables followed at once by one session."""
        running = [k for k, f in self.follows.items() if k != key and f.task is not None and not f.task.done()]
        if len(running) >= self.gateway.config.max_streams:
            raise ResourceExhausted("too many tables watched at once: stop watching one first")

    def _start_follow(self, table_id: str, seat: int, after: int, invitation: str = "") -> None:
        key = (table_id, seat)
        old = self.follows.get(key)
        if old is not None and old.task is not None and not old.task.done():
            old.task.cancel()
        self.last_seq[key] = after
        self._flush_accepted(key, after)
        follow = _Follow(table_id, seat, invitation=invitation)
        follow.task = asyncio.ensure_future(self._follow(follow))
        self.follows[key] = follow
        self.gateway.social.follow(self, table_id, seat, invited=bool(invitation))  # its chat (docs/adr/0031)

    async def _follow(self, follow: _Follow) -> None:
        key = (follow.table_id, follow.seat)
        try:
            await self._follow_events(follow, key)
        finally:
            if self.follows.get(key) is follow:
                self._flush_accepted(key)  # no more events of this seat come here: nothing waits for them
            # Ending: "not running" from now on. And no cycle left behind: a cancelled task keeps
            # its CancelledError, whose traceback holds this frame, which holds `follow`; were
            # `follow.task` still this task, a closed session's follows (their frames, feeds and
            # readers, ~90 objects each) would be cyclic garbage that only a full collection,
            # or the thaw of the frozen, frees (ADR 0024).
            follow.task = None

    def _deliver(self, follow: _Follow, key: tuple[str, int], event: events_pb2.Event) -> bool:
        """One event of a followed seat, in order, out to the client (whichever way it came:
        yielded by the follow, or straight from the live subscription, `TablePort.events`);
        False once nothing more is wanted (the session ended, a newer follow took over, or
        this was the GameEnded)."""
        if self.closed or self.follows.get(key) is not follow:
            return False  # the session ended or a newer follow took over (a swallowed cancel)
        if event.sequence <= self.last_seq[key]:
            return True
        self.last_seq[key] = event.sequence
        self.push(event)  # wrapped (or batched) by `messages` on the way out
        if self.accepts:
            self._flush_accepted(key, event.sequence)
        if event.HasField("game_ended"):
            seats = self.gateway.seat_maps.get(follow.table_id)
            if seats is not None:
                seats.finished = True
            return False
        return True

    async def _follow_events(self, follow: _Follow, key: tuple[str, int]) -> None:
        delay = 0.1
        first = True
        sink = functools.partial(self._deliver, follow, key)
        while not self.closed and self.follows.get(key) is follow:
            try:
                tables = self.gateway._tables()
                events = tables.events(
                    follow.table_id, follow.seat, self.player_id, self.last_seq[key], follow.invitation, sink
                )
                async for event in events:
                    if self.closed or self.follows.get(key) is not follow:
                        return  # the session ended or a newer follow took over (a swallowed cancel)
                    delay = 0.1
                    last = self.last_seq[key]
                    if first and last > 0 and not event.HasField("table_created") and event.sequence > last + 1:
                        # The stored history no longer reaches back to `last`: one fresh view instead.
                        spectator = follow.seat == SPECTATOR
                        view = await self.gateway.view(
                            self.player_id, follow.table_id, spectator=spectator, invitation=follow.invitation
                        )
                        self.push(gateway_pb2.SessionResponse(snapshot=view))
                        self.last_seq[key] = last = view.sequence
                        self._flush_accepted(key, last)
                    first = False
                    if not self._deliver(follow, key, event):
                        return
                return
            except asyncio.CancelledError:
                raise
            except DomainError as err:
                if not isinstance(err, Unavailable):
                    self.push(gateway_pb2.SessionResponse(error=client_error(err)))
                    return
            except Exception as exc:  # noqa: BLE001 - a broken subscription is retried from last_seq
                log.warning("event stream broke, resuming", table_id=follow.table_id, error=type(exc).__name__)
            first = True
            await asyncio.sleep(delay)
            delay = min(delay * 2, 2.0)
