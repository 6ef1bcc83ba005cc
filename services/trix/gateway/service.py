"""The gateway service's logic: players' sessions: authentication, one stream per
connected player, resume, per-seat filtering, rate limits, presence.

Owns `GatewayService` (sign-in, authentication, the seat check of every action, the
translation of a client action into a table command, queries) and `Session` (one
player's live stream: its outbox, the tables it follows, its ticket watchers, its rate
limit). What it reaches is behind ports (`TablePort`, `MatchmakingPort`, `ScoringPort`,
`AccountsPort`, `PresencePort`): NATS and gRPC adapters live in `subscribers` and
`upstream`. Must not import grpc or nats; raises `trix.errors` domain errors only,
whose messages are safe to show (never exception text, never a hidden card:
the gateway forwards only the own copies of the caller's own seat and the public
copies, docs/rules.md §14).
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import json
import re
import secrets
import time
import unicodedata
import uuid
from collections import OrderedDict, deque
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import Protocol

import structlog

from trix.errors import (
    DomainError,
    InvalidArgument,
    NotFound,
    PermissionDenied,
    ResourceExhausted,
    StaleTurn,
    Unauthenticated,
    Unavailable,
)
from trix.fairness import CLIENT_SEED_MAX_BYTES
from trix.gateway.config import GatewayConfig
from trix.gateway.tokens import HmacTokens, Principal, TokenVerifier, hash_device_secret
from trix.rules import PLAYER_ID
from trix.runtime.identity import sign_invitation
from trix.runtime.tasks import start_kept
from trix.v1 import common_pb2, events_pb2, gateway_pb2, matchmaking_pb2, table_pb2

log = structlog.get_logger("trix.gateway")

ID = PLAYER_ID  # trix.rules: 1-128 of A-Z a-z 0-9 _ -
ACTION_ID = re.compile(r"^[A-Za-z0-9_.:-]{1,64}$")
MIN_DEVICE_SECRET = 16
MAX_DEVICE_SECRET = 256
MAX_DISPLAY_NAME = 32
"""Characters of a display name, at most."""
MAX_DISPLAY_NAME_BYTES = 64
"""UTF-8 bytes of a display name, at most (what other players' screens and the records hold)."""
_HIDDEN_CATEGORIES = ("Cc", "Cf", "Cs", "Co", "Cn")
"""Control, format (right-to-left overrides, zero-width joiners), surrogate, private-use and
unassigned characters: removed from display names (issue 18)."""
MAX_CLIENT_SEED_BYTES = CLIENT_SEED_MAX_BYTES  # trix.fairness, docs/rules.md §11
TERMINAL_TICKET_STATES = (
    matchmaking_pb2.TICKET_STATE_MATCHED,
    matchmaking_pb2.TICKET_STATE_CANCELLED,
    matchmaking_pb2.TICKET_STATE_EXPIRED,
)
SPECTATOR = -1
SIGN_IN_BUDGET_S = 9.0
"""The longest a sign-in waits for the accounts bucket (a call with no deadline, or a long one)."""
SIGN_IN_ANSWER_S = 0.75
"""Kept from the call's time left to answer in time (UNAVAILABLE before the client's deadline)."""
CLOSE_WAIT_S = 2.0
"""How long closing a session waits for its follow and ticket tasks to end."""
MAX_BATCH_EVENTS = 64
MAX_BATCH_BYTES = 256 * 1024
"""Bounds of one EventBatch (issue 10): far below a client's default 4 MiB receive limit; an
event larger than the byte bound alone (a GameEnded with its record) goes in its own message."""


# -- ports ----------------------------------------------------------------------------------


class TablePort(Protocol):
    """Table commands (NATS requests to the owner) and live events, gaps filled by the owner."""

    async def command(
        self, table_id: str, command: table_pb2.TableCommand, player_id: str, *, action_id: str = ""
    ) -> table_pb2.TableCommandReply:
        """Send a command as the player; raises the table's domain error. A seat action names
        its `action_id`: its acceptance may end the call as its feed batch's cause (issue 16;
        the reply then carries only the sequence)."""
        ...

    def events(
        self,
        table_id: str,
        seat: int,
        player_id: str,
        after: int = 0,
        invitation: str = "",
        sink: Callable[[events_pb2.Event], bool] | None = None,
    ) -> AsyncIterator[events_pb2.Event]:
        """What the seat (or the public, for SPECTATOR) may see after `after`, then live,
        ending after GameEnded; the owner checks `player_id` (or, for the public events of a
        private table, his `invitation`) may see it. With `sink`, live events that come in
        order while the iterator waits go to `sink` where they arrive instead of being
        yielded (`trix.natsio.seatstream.Sink`): one ordered stream across both ways."""
        ...

    def hear_causes(self, listener: Callable[[str, events_pb2.ActionCause, int], None]) -> None:
        """`listener(table_id, cause, sequence)` hears which seat action each feed batch
        answers, before the batch's events reach any reader (the acceptances, issue 16)."""
        ...


class MatchmakingPort(Protocol):
    async def enqueue(
        self, player_id: str, request: gateway_pb2.FindMatchRequest, display_name: str = ""
    ) -> matchmaking_pb2.Ticket: ...
    async def cancel(self, player_id: str, ticket_id: str) -> matchmaking_pb2.Ticket: ...
    def watch(self, player_id: str, ticket_id: str) -> AsyncIterator[matchmaking_pb2.Ticket]: ...
    async def create_private(
        self, player_id: str, request: gateway_pb2.CreatePrivateGameRequest, display_name: str = ""
    ) -> gateway_pb2.CreatePrivateGameResponse: ...
    async def join_private(
        self, player_id: str, request: gateway_pb2.JoinPrivateGameRequest, display_name: str = ""
    ) -> matchmaking_pb2.Ticket: ...
    async def start_private(self, player_id: str, code: str) -> str: ...


class ScoringPort(Protocol):
    async def query(self, request: gateway_pb2.QueryRequest) -> gateway_pb2.QueryResponse: ...


class AccountsPort(Protocol):
    """Guest accounts by hashed device secret (JetStream KV `gateway_accounts`). `until`: the
    `time.monotonic()` by which to answer, asking the bucket again meanwhile if it does not
    answer (its election); None: one attempt."""

    async def get(self, key: str, until: float | None = None) -> bytes | None: ...
    async def create(self, key: str, value: bytes, until: float | None = None) -> bool:
        """Store if absent; False when another sign-in created it first."""
        ...


class PresencePort(Protocol):
    async def publish(self, player_id: str, event: events_pb2.Event) -> None: ...


# -- helpers --------------------------------------------------------------------------------


def check_id(value: str, what: str) -> str:
    if not ID.fullmatch(value):
        raise InvalidArgument(f"{what} must be 1-128 of A-Z a-z 0-9 _ -")
    return value


def check_client_seed(seed: str) -> str:
    """docs/rules.md §11: at most 64 bytes of UTF-8, no `|`."""
    if len(seed.encode()) > MAX_CLIENT_SEED_BYTES or "|" in seed:
        raise InvalidArgument("client seed: at most 64 bytes of UTF-8, no '|' (docs/rules.md §11)")
    return seed


class KeyedLimits:
    """One token bucket per key (a player, a client address), the least recently used
    forgotten beyond `max_keys` (a forgotten key starts again with a full bucket)."""

    def __init__(self, rate: float, burst: int, max_keys: int = 10000) -> None:
        self.rate, self.burst, self.max_keys = rate, burst, max_keys
        self.buckets: OrderedDict[str, RateLimiter] = OrderedDict()

    def allow(self, key: str) -> bool:
        bucket = self.buckets.get(key)
        if bucket is None:
            bucket = self.buckets[key] = RateLimiter(self.rate, self.burst)
            while len(self.buckets) > self.max_keys:
                self.buckets.popitem(last=False)
        else:
            self.buckets.move_to_end(key)
        return bucket.allow()


class RateLimiter:
    """A token bucket: `rate` messages per second, up to `burst` at once."""

    def __init__(self, rate: float, burst: int, clock: Callable[[], float] = time.monotonic) -> None:
        self.rate = rate
        self.burst = float(burst)
        self.tokens = float(burst)
        self.clock = clock
        self.at = clock()

    def allow(self) -> bool:
        now = self.clock()
        self.tokens = min(self.burst, self.tokens + (now - self.at) * self.rate)
        self.at = now
        if self.tokens >= 1.0:
            self.tokens -= 1.0
            return True
        return False


def client_error(err: DomainError, action_id: str = "") -> gateway_pb2.ClientError:
    from trix.errors import status_code_name

    return gateway_pb2.ClientError(code=status_code_name(err), message=err.public_message, action_id=action_id)


@dataclass
class SeatMap:
    """Who sits where at a table (public: docs/rules.md §14)."""

    players: list[str]
    finished: bool = False


@dataclass
class PlayerState:
    """What the gateway remembers of a player between calls (per replica, a cache)."""

    table_id: str = ""
    ticket_id: str = ""
    sessions: int = 0


# -- the service ----------------------------------------------------------------------------


def clean_display_name(raw: str) -> str:
    """A display name others may be shown: NFC, without control or format characters (NUL,
    ANSI escapes, right-to-left overrides), whitespace runs as one space, at most
    MAX_DISPLAY_NAME characters and MAX_DISPLAY_NAME_BYTES UTF-8 bytes (never a cut character)."""
    text = unicodedata.normalize("NFC", raw)
    text = "".join(
        " " if ch.isspace() else ch for ch in text if ch.isspace() or unicodedata.category(ch) not in _HIDDEN_CATEGORIES
    )
    name = " ".join(text.split())[:MAX_DISPLAY_NAME]
    while len(name.encode()) > MAX_DISPLAY_NAME_BYTES:
        name = name[:-1]
    return name.rstrip()


class GatewayService:
    """The gateway's domain logic."""

    def __init__(
        self,
        config: GatewayConfig,
        tables: TablePort,
        accounts: AccountsPort,
        presence: PresencePort,
        *,
        matchmaking: MatchmakingPort | None = None,
        scoring: ScoringPort | None = None,
        verifier: TokenVerifier | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.config = config
        self.tables = tables
        tables.hear_causes(self.action_applied)
        self.accounts = accounts
        self.presence = presence
        self.matchmaking = matchmaking
        """None when the configuration names no matchmaking service (its calls: UNAVAILABLE)."""
        self.scoring = scoring
        """None when the configuration names no scoring service (its calls: UNAVAILABLE)."""
        self.clock = clock
        self.tokens = HmacTokens(
            config.token_key or secrets.token_bytes(32),
            config.token_ttl_s,
            previous=config.previous_token_key,
            max_age_s=config.token_max_age_s,
        )
        self.verifier: TokenVerifier = verifier or self.tokens
        # Limits per player and per client address, never per TCP connection (ADR 0018).
        self.call_limits = KeyedLimits(config.rate_per_s, config.rate_burst)
        self.signin_limits = KeyedLimits(config.signin_per_min / 60, config.signin_burst)
        self.account_limits = KeyedLimits(config.accounts_per_hour / 3600, config.accounts_burst)
        self.seat_maps: dict[str, SeatMap] = {}
        self.players: dict[str, PlayerState] = {}
        self.live: dict[str, Session] = {}
        self._closing: set[asyncio.Task[None]] = set()
        """Replaced sessions being closed in the background (references keep them alive)."""

    # -- ports ------------------------------------------------------------------------------

    def _tables(self) -> TablePort:
        return self.tables

    def _mm(self) -> MatchmakingPort:
        if self.matchmaking is None:
            raise Unavailable("matchmaking is not reachable; retry")
        return self.matchmaking

    def _scoring(self) -> ScoringPort:
        if self.scoring is None:
            raise Unavailable("scoring is not reachable; retry")
        return self.scoring

    def player(self, player_id: str) -> PlayerState:
        state = self.players.get(player_id)
        if state is None:  # (not setdefault: no PlayerState built per call, several per action)
            state = self.players[player_id] = PlayerState()
        return state

    # -- sign-in and authentication ---------------------------------------------------------

    async def sign_in(
        self, device_secret: str, display_name: str, address: str = "", time_left_s: float | None = None
    ) -> tuple[str, str, int]:
        """Guest sign-in: (player id, token, expires at). Same secret, same player. Sign-ins
        and new accounts are bounded per client `address` (RESOURCE_EXHAUSTED beyond).

        The accounts read and create share one budget (issue 19): the call's own time left
        (`time_left_s`, from the client's deadline) less `SIGN_IN_ANSWER_S`, at most
        `SIGN_IN_BUDGET_S`. Within it the bucket is asked again while it does not answer (an
        election of its stream, 4-9 s), so most sign-ins ride one out; past it the answer is
        UNAVAILABLE, before the client's deadline, so the client signs in again (a
        DEADLINE_EXCEEDED it would not)."""
        if not self.signin_limits.allow(address):
            raise ResourceExhausted("too many sign-ins from your address: wait a minute")
        if not MIN_DEVICE_SECRET <= len(device_secret) <= MAX_DEVICE_SECRET:
            raise InvalidArgument(f"device secret must be {MIN_DEVICE_SECRET}-{MAX_DEVICE_SECRET} characters")
        name = clean_display_name(display_name)
        key = hash_device_secret(device_secret)
        budget = SIGN_IN_BUDGET_S if time_left_s is None else min(SIGN_IN_BUDGET_S, time_left_s - SIGN_IN_ANSWER_S)
        until = time.monotonic() + max(0.0, budget)
        stored = await self.accounts.get(key, until)
        if stored is None:
            if not self.account_limits.allow(address):
                raise ResourceExhausted("too many new accounts from your address: sign in with an existing one")
            player_id = "g" + uuid.uuid4().hex[:15]
            doc = {"player_id": player_id, "display_name": name, "created": int(self.clock())}
            if not await self.accounts.create(key, json.dumps(doc).encode(), until):
                stored = await self.accounts.get(key, until)
        if stored is not None:
            player_id = str(json.loads(stored)["player_id"])
        token, expires = self.tokens.issue(player_id, name, self.clock())
        log.info("signed in", player_id=player_id)
        return player_id, token, expires

    @staticmethod
    def _bearer(authorization: str | None) -> str:
        if not authorization:
            raise Unauthenticated("missing token: sign in and send `authorization: Bearer <token>`")
        scheme, _, token = authorization.strip().partition(" ")
        if scheme.lower() != "bearer" or not token:
            raise Unauthenticated("malformed authorization: use `Bearer <token>`")
        return token.strip()

    def authenticate(self, authorization: str | None) -> Principal:
        """`authorization: Bearer <token>` -> the principal; Unauthenticated otherwise."""
        return self.verifier.verify(self._bearer(authorization), self.clock())

    def refresh_token(self, authorization: str | None) -> tuple[str, int]:
        """A new token (current key, full lifetime) for the caller's valid one (ADR 0018)."""
        token = self._bearer(authorization)
        if self.verifier is not self.tokens:
            raise Unauthenticated("tokens of this identity provider are refreshed by the provider")
        return self.tokens.refresh(token, self.clock())

    def allow_call(self, player_id: str) -> None:
        """The player's call budget (all his connections together); RESOURCE_EXHAUSTED beyond."""
        if not self.call_limits.allow(player_id):
            raise ResourceExhausted("rate limit: slow down")

    # -- seats ------------------------------------------------------------------------------

    async def seat_map(self, table_id: str, player_id: str, *, refresh: bool = False, invitation: str = "") -> SeatMap:
        cached = self.seat_maps.get(table_id)
        if cached is not None and not refresh:
            return cached
        ask = table_pb2.GetSeatViewRequest(table_id=table_id, seat=SPECTATOR, invitation=invitation)
        command = table_pb2.TableCommand(get_seat_view=ask)
        reply = await self._tables().command(table_id, command, player_id)
        view = reply.get_seat_view.view
        seats = SeatMap([s.player_id for s in sorted(view.seats, key=lambda s: s.index)], view.finished)
        self.seat_maps[table_id] = seats
        return seats

    async def seat_of(self, table_id: str, player_id: str) -> int:
        """The caller's seat at a table; PERMISSION_DENIED when he holds none."""
        check_id(table_id, "table id")
        seats = await self.seat_map(table_id, player_id)
        if player_id not in seats.players:
            raise PermissionDenied("you hold no seat at this table")
        self.player(player_id).table_id = table_id
        return seats.players.index(player_id)

    def current_table(self, player_id: str, table_id: str) -> str:
        if table_id:
            return check_id(table_id, "table id")
        current = self.player(player_id).table_id
        if not current:
            raise NotFound("no current table: give table_id")
        return current

    # -- actions ----------------------------------------------------------------------------

    async def act(self, player_id: str, action: gateway_pb2.Action) -> gateway_pb2.SubmitActionResponse:
        """One in-game action of the player at his own seat (one NATS request to the owner)."""
        table_id = self.current_table(player_id, action.table_id)
        action_id = action.action_id or uuid.uuid4().hex
        if not ACTION_ID.fullmatch(action_id):
            raise InvalidArgument("action id must be 1-64 of A-Z a-z 0-9 _ . : -")
        kind = action.WhichOneof("kind")
        if kind is None:
            raise InvalidArgument("the action is empty")
        seat = await self.seat_of(table_id, player_id)
        header = table_pb2.ActionHeader(
            table_id=table_id, seat=seat, action_id=action_id, last_seen_sequence=action.last_seen_sequence
        )
        command = table_pb2.TableCommand()
        if kind == "choose_contract":
            if action.choose_contract not in common_pb2.Contract.values() or action.choose_contract == 0:
                raise InvalidArgument("unknown contract")
            command.choose_contract.header.CopyFrom(header)
            command.choose_contract.contract = action.choose_contract
        elif kind == "answer_double":
            cards = list(action.answer_double.cards)
            if len(cards) > 5 or any(not 0 <= c.id < 52 for c in cards):
                raise InvalidArgument("cards must be card ids 0..51, at most five")
            command.answer_double.header.CopyFrom(header)
            command.answer_double.cards.extend(common_pb2.Card(id=c.id) for c in cards)
        elif kind == "play_card":
            if not 0 <= action.play_card.id < 52:
                raise InvalidArgument("card must be a card id 0..51")
            command.play_card.header.CopyFrom(header)
            command.play_card.card.id = action.play_card.id
        elif kind == "leave":
            if not action.leave:
                raise InvalidArgument("leave must be true")
            command.leave_table.header.CopyFrom(header)
            command.leave_table.reason = events_pb2.LEAVE_REASON_EXPLICIT
        elif kind == "client_seed":
            command.set_client_seed.header.CopyFrom(header)
            command.set_client_seed.client_seed = check_client_seed(action.client_seed)
        else:  # pragma: no cover - every oneof member is handled above
            raise InvalidArgument("unknown action")
        reply = await self._tables().command(table_id, command, player_id, action_id=action_id)
        return gateway_pb2.SubmitActionResponse(action_id=action_id, sequence=reply.sequence)

    async def view(
        self, player_id: str, table_id: str, *, spectator: bool = False, invitation: str = ""
    ) -> table_pb2.SeatView:
        """The caller's seat view (PERMISSION_DENIED without a seat), or the public view (a
        private table's with an invitation when he holds no seat there)."""
        table_id = self.current_table(player_id, table_id)
        seat = SPECTATOR if spectator else await self.seat_of(table_id, player_id)
        ask = table_pb2.GetSeatViewRequest(table_id=table_id, seat=seat, invitation=invitation if spectator else "")
        command = table_pb2.TableCommand(get_seat_view=ask)
        reply = await self._tables().command(table_id, command, player_id)
        return reply.get_seat_view.view

    async def invite_spectator(self, player_id: str, table_id: str) -> tuple[str, str, int]:
        """An invitation to watch the caller's table (ADR 0018): (invitation, table id, expires
        at), signed with the player-role key the table verifies it with; PERMISSION_DENIED when
        he holds no seat there. It admits whoever holds it, to that table only, until it expires."""
        table_id = self.current_table(player_id, table_id)
        await self.seat_of(table_id, player_id)
        now = self.clock()
        ttl = self.config.invitation_ttl_s
        invitation = sign_invitation(self.config.player_key, table_id, player_id, now, ttl)
        log.info("spectator invitation made", player_id=player_id, table_id=table_id)
        return invitation, table_id, int(now + ttl)

    # -- matchmaking ------------------------------------------------------------------------

    async def find_match(
        self, player_id: str, request: gateway_pb2.FindMatchRequest, display_name: str = ""
    ) -> matchmaking_pb2.Ticket:
        """Queue the player; `display_name` (his token's cleaned sign-in name) is what the
        others see at the table (issue 20)."""
        check_client_seed(request.client_seed)
        if request.partner_id:
            check_id(request.partner_id, "partner id")
        ticket = await self._mm().enqueue(player_id, request, clean_display_name(display_name))
        self.player(player_id).ticket_id = ticket.ticket_id
        return ticket

    async def cancel_match(self, player_id: str, ticket_id: str) -> matchmaking_pb2.Ticket:
        ticket_id = ticket_id or self.player(player_id).ticket_id
        check_id(ticket_id, "ticket id")
        return await self._mm().cancel(player_id, ticket_id)

    async def create_private(
        self, player_id: str, request: gateway_pb2.CreatePrivateGameRequest, display_name: str = ""
    ) -> gateway_pb2.CreatePrivateGameResponse:
        check_client_seed(request.client_seed)
        reply = await self._mm().create_private(player_id, request, clean_display_name(display_name))
        self.player(player_id).ticket_id = reply.ticket.ticket_id
        return reply

    async def join_private(
        self, player_id: str, request: gateway_pb2.JoinPrivateGameRequest, display_name: str = ""
    ) -> matchmaking_pb2.Ticket:
        check_client_seed(request.client_seed)
        check_id(request.code, "code")
        ticket = await self._mm().join_private(player_id, request, clean_display_name(display_name))
        self.player(player_id).ticket_id = ticket.ticket_id
        return ticket

    async def start_private(self, player_id: str, code: str) -> str:
        check_id(code, "code")
        return await self._mm().start_private(player_id, code)

    def watch_ticket(self, player_id: str, ticket_id: str) -> AsyncIterator[matchmaking_pb2.Ticket]:
        return self._mm().watch(player_id, check_id(ticket_id, "ticket id"))

    # -- queries ----------------------------------------------------------------------------

    async def query(self, player_id: str, request: gateway_pb2.QueryRequest) -> gateway_pb2.QueryResponse:
        """Scoring queries; player ids default to the caller; balance and ledger are his own."""
        which = request.WhichOneof("query")
        if which is None:
            raise InvalidArgument("the query is empty")
        q = gateway_pb2.QueryRequest()
        q.CopyFrom(request)
        if which == "standings":
            check_id(q.standings.table_id or self.current_table(player_id, ""), "table id")
            q.standings.table_id = q.standings.table_id or self.current_table(player_id, "")
        elif which == "history":
            q.history.player_id = check_id(q.history.player_id or player_id, "player id")
        elif which == "game_record":
            q.game_record.table_id = check_id(q.game_record.table_id or self.current_table(player_id, ""), "table id")
        elif which == "player_stats":
            q.player_stats.player_id = check_id(q.player_stats.player_id or player_id, "player id")
        elif which == "balance":
            if q.balance.player_id not in ("", player_id):
                raise PermissionDenied("a balance is visible to its owner only")
            q.balance.player_id = player_id
        elif which == "ledger":
            if q.ledger.player_id not in ("", player_id):
                raise PermissionDenied("a ledger is visible to its owner only")
            q.ledger.player_id = player_id
        elif which == "leaderboard" and q.leaderboard.around_player_id:
            check_id(q.leaderboard.around_player_id, "player id")
        reply = await self._scoring().query(q)
        if which == "game_record" and reply.game_record.record_json:
            # docs/rules.md §14: hands and the seed are public only once the game has ended.
            record = json.loads(reply.game_record.record_json)
            if not (record.get("fairness") or {}).get("server_seed"):
                raise StaleTurn("the game is still running; its record is available when it ends")
        return reply

    # -- sessions ---------------------------------------------------------------------------

    def action_applied(self, table_id: str, cause: events_pb2.ActionCause, sequence: int) -> None:
        """A feed batch of `table_id` has come with the events, through `sequence`, of seat
        `cause.seat`'s action `cause.action_id` (issue 16): the actor's session, if it waits for
        that action's answer, sends the acceptance in the same message as those events."""
        seats = self.seat_maps.get(table_id)
        if seats is None or not 0 <= cause.seat < len(seats.players):
            return
        session = self.live.get(seats.players[cause.seat])
        if session is not None:
            session.applied(table_id, cause.seat, cause.action_id, sequence)

    async def open_session(self, principal: Principal, *, interactive: bool = True) -> Session:
        """A new session; an interactive one replaces the player's previous session."""
        session = Session(self, principal, interactive=interactive)
        if interactive:
            old = self.live.get(principal.player_id)
            self.live[principal.player_id] = session
            if old is not None:
                old.push(
                    gateway_pb2.SessionResponse(
                        error=gateway_pb2.ClientError(code="ABORTED", message="replaced by a newer session")
                    )
                )
                # Closed beside the new session, never in its way: the new one answers at
                # once even if the old one's tasks take a while to wind down.
                start_kept(self._closing, old.close())
            state = self.player(principal.player_id)
            state.sessions += 1
            await self._presence(principal.player_id, session.session_id, connected=True)
        return session

    async def closed(self, session: Session) -> None:
        if not session.interactive:
            return
        pid = session.principal.player_id
        state = self.player(pid)
        state.sessions = max(0, state.sessions - 1)
        if self.live.get(pid) is session:
            del self.live[pid]
            await self._presence(pid, session.session_id, connected=False)

    async def _presence(self, player_id: str, session_id: str, *, connected: bool) -> None:
        event = events_pb2.Event()
        if connected:
            event.player_connected.player_id = player_id
            event.player_connected.session_id = session_id
        else:
            event.player_disconnected.player_id = player_id
            event.player_disconnected.session_id = session_id
        try:
            await asyncio.wait_for(self.presence.publish(player_id, event), self.config.call_timeout_s)
        except Exception as exc:  # noqa: BLE001 - presence is best effort; timers keep the seat anyway
            log.warning("presence not published", player_id=player_id, error=type(exc).__name__)


Outgoing = gateway_pb2.SessionResponse | events_pb2.Event | None
"""What a session's outbox holds: a message, a table event (wrapped or batched on the way out),
or None, the end."""


class Outbox:
    """A session's bounded outbox with its one reader (`Session.messages`): a deque and one
    bare future to wake the reader. asyncio.Queue's bookkeeping (its getter and putter lists,
    unfinished-task counter and event, a loop lookup per call) was a visible share of the
    gateway's CPU with four messages per action."""

    __slots__ = ("_items", "_maxsize", "_waiter")

    def __init__(self, maxsize: int) -> None:
        self._items: deque[Outgoing] = deque()
        self._maxsize = maxsize
        self._waiter: asyncio.Future[None] | None = None

    def empty(self) -> bool:
        return not self._items

    def qsize(self) -> int:
        return len(self._items)

    def put_nowait(self, item: Outgoing) -> None:
        """Queue `item`; asyncio.QueueFull when `maxsize` are waiting."""
        if len(self._items) >= self._maxsize:
            raise asyncio.QueueFull
        self._items.append(item)
        waiter = self._waiter
        if waiter is not None:
            self._waiter = None
            if not waiter.done():
                waiter.set_result(None)

    def get_nowait(self) -> Outgoing:
        if not self._items:
            raise asyncio.QueueEmpty
        return self._items.popleft()

    async def get(self) -> Outgoing:
        """The next item, waiting for one (a single reader). Cancel-safe: nothing is taken
        until it returns."""
        while not self._items:
            waiter = self._waiter = asyncio.get_running_loop().create_future()
            try:
                await waiter
            finally:
                if self._waiter is waiter:
                    self._waiter = None
        return self._items.popleft()


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
    closed: bool = False
    batch_events: bool = False
    """The client asked for EventBatch messages (`SessionRequest.batch_events`, issue 10)."""
    actions: dict[str, _Acting] = field(default_factory=dict)
    """The player's actions in flight (sent to the table, not answered yet), by action id."""
    accepts: dict[tuple[str, int], list[tuple[int, gateway_pb2.SessionResponse]]] = field(default_factory=dict)
    """Per followed seat: acceptances due right behind the event of their sequence (issue 16)."""

    def __post_init__(self) -> None:
        self.outbox = Outbox(self.gateway.config.outbox_size)
        self.limiter = RateLimiter(self.gateway.config.rate_per_s, self.gateway.config.rate_burst)

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
        same message (issue 16): one message per action. Nothing waits. A lone event, and
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
            if not self.limiter.allow():
                raise ResourceExhausted("rate limit: slow down")
            await self._dispatch(request, which, rid)
        except DomainError as err:
            self.push(gateway_pb2.SessionResponse(error=client_error(err, action_id), request_id=rid))
        except Exception as exc:
            error_id = uuid.uuid4().hex[:16]
            log.error("unexpected error in session", error_id=error_id, exc_info=exc)
            internal = gateway_pb2.ClientError(code="INTERNAL", message=f"internal error (error id {error_id})")
            internal.action_id = action_id
            self.push(gateway_pb2.SessionResponse(error=internal, request_id=rid))

    async def handle_malformed(self) -> None:
        """A message whose bytes did not decode: a typed error, the session goes on."""
        code = "RESOURCE_EXHAUSTED" if not self.limiter.allow() else "INVALID_ARGUMENT"
        message = "rate limit: slow down" if code == "RESOURCE_EXHAUSTED" else "the request did not decode"
        self.push(gateway_pb2.SessionResponse(error=gateway_pb2.ClientError(code=code, message=message)))

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
            self.watch_ticket(ticket)
            return
        elif which == "cancel_match":
            out.ticket.CopyFrom(await gw.cancel_match(pid, request.cancel_match.ticket_id))
        elif which == "resume":
            await self.resume(request.resume.table_id, request.resume.after_sequence)
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
            self.watch_ticket(created.ticket)
            return
        elif which == "join_private":
            ticket = await gw.join_private(pid, request.join_private, self.principal.display_name)
            out.ticket.CopyFrom(ticket)
            self.push(out)
            self.watch_ticket(ticket)
            return
        elif which == "start_private":
            out.private_started.table_id = await gw.start_private(pid, request.start_private.code)
        elif which == "query":
            out.query.CopyFrom(await gw.query(pid, request.query))
        elif which == "view":
            out.snapshot.CopyFrom(await gw.view(pid, request.view.table_id))
        else:
            raise InvalidArgument("empty or unknown request")
        self.push(out)

    # -- tickets ----------------------------------------------------------------------------

    def watch_ticket(self, ticket: matchmaking_pb2.Ticket) -> None:
        """Forward the ticket's updates; follow its table once matched."""
        if ticket.state == matchmaking_pb2.TICKET_STATE_MATCHED and ticket.table_id:
            self._follow_matched(ticket)
            return
        if ticket.ticket_id in self.watchers or ticket.state in TERMINAL_TICKET_STATES:
            return
        task = asyncio.ensure_future(self._watch(ticket.ticket_id))
        self.watchers[ticket.ticket_id] = task

    async def _watch(self, ticket_id: str) -> None:
        delay = 0.1
        while not self.closed:
            try:
                async for ticket in self.gateway.watch_ticket(self.player_id, ticket_id):
                    if self.closed:
                        return
                    self.push(gateway_pb2.SessionResponse(ticket=ticket))
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

    async def resume(self, table_id: str, after: int) -> None:
        """Follow the player's seat from `after`: exactly the missing events, in order."""
        gw = self.gateway
        if not table_id and not gw.player(self.player_id).table_id:
            ticket_id = gw.player(self.player_id).ticket_id
            if ticket_id and ticket_id not in self.watchers:  # not seated yet: the ticket leads to the table
                task = asyncio.ensure_future(self._watch(ticket_id))
                self.watchers[ticket_id] = task
                return
        table_id = gw.current_table(self.player_id, table_id)
        seat = await gw.seat_of(table_id, self.player_id)
        self._start_follow(table_id, seat, after)

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
