"""The gateway service's logic: sign-in, authentication, the seat check of every action, the
translation of a client action into a table command, queries, and the players' sessions
(opened, replaced by a newer one, closed; their presence).

Owns `GatewayService`; one player's stream is a `session.Session`. What it reaches is behind
`ports`: NATS adapters live in `adapters`, gRPC ones in `upstream`. Must not import grpc or
nats; raises `trix.errors` domain errors only, whose messages are safe to show (never
exception text, never a hidden card: the gateway forwards only the own copies of the
caller's own seat and the public copies, docs/rules.md §14).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
import secrets
import time
import uuid
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field

import structlog

from trix.errors import (
    IllegalMove,
    InvalidArgument,
    NotFound,
    PermissionDenied,
    ResourceExhausted,
    StaleTurn,
    Unauthenticated,
    Unavailable,
)
from trix.gateway.config import GatewayConfig
from trix.gateway.limits import KeyedLimits
from trix.gateway.ports import (
    SPECTATOR,
    AccountsPort,
    MatchmakingPort,
    PresencePort,
    ScoringPort,
    TablePort,
    TokenVerifier,
)
from trix.gateway.session import Session
from trix.gateway.social_api import SocialGateway
from trix.gateway.tokens import HmacTokens, Principal, hash_device_secret
from trix.gateway.validation import (
    MAX_DEVICE_SECRET,
    MIN_DEVICE_SECRET,
    check_client_seed,
    check_id,
    clean_display_name,
)
from trix.runtime.identity import sign_invitation
from trix.runtime.tasks import start_kept
from trix.v1 import common_pb2, events_pb2, gateway_pb2, matchmaking_pb2, table_pb2

log = structlog.get_logger("trix.gateway")

ACTION_ID = re.compile(r"^[A-Za-z0-9_.:-]{1,64}$")
SIGN_IN_BUDGET_S = 9.0
"""The longest a sign-in waits for the accounts bucket (a call with no deadline, or a long one)."""
SIGN_IN_ANSWER_S = 0.75
"""Kept from the call's time left to answer in time (UNAVAILABLE before the client's deadline)."""


@dataclass
class SeatMap:
    """Who sits where at a table (public: docs/rules.md §14)."""

    players: list[str]
    finished: bool = False
    auto_play: list[bool] = field(default_factory=lambda: [False] * 4)
    """Seats still played by auto-play until their player takes them (`Seat.auto_play`), as last read."""


@dataclass
class PlayerState:
    """What the gateway remembers of a player between calls (per replica, a cache)."""

    table_id: str = ""
    ticket_id: str = ""
    sessions: int = 0


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
        """Plain calls other than actions (reads, matchmaking, queries), per player."""
        self.action_limits = KeyedLimits(config.rate_per_s, config.rate_burst)
        """SubmitAction, per player: a bucket of its own, so reads never cost a turn."""
        self.signin_limits = KeyedLimits(config.signin_per_min / 60, config.signin_burst)
        self.account_limits = KeyedLimits(config.accounts_per_hour / 3600, config.accounts_burst)
        self.seat_maps: dict[str, SeatMap] = {}
        self.players: dict[str, PlayerState] = {}
        self.live: dict[str, Session] = {}
        self._closing: set[asyncio.Task[None]] = set()
        """Replaced sessions being closed in the background (references keep them alive)."""
        self.social = SocialGateway(None, None)
        """Chat and friends (`trix.gateway.social_api`); wired to the social service by `bootstrap`."""
        self.present: dict[str, str] = {}
        """Player online here -> the session id his PlayerConnected carried (`came_online`);
        what the presence beat names (`trix.gateway.presence_beat`)."""

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

        The accounts read and create share one budget: the call's own time left
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

    def allow_call(self, player_id: str, *, action: bool = False) -> None:
        """The player's call budget (all his connections together), actions and other calls
        apart; RESOURCE_EXHAUSTED beyond, with the delay to wait."""
        limits = self.action_limits if action else self.call_limits
        if not limits.allow(player_id):
            raise ResourceExhausted("rate limit: slow down", retry_after_s=limits.wait_s(player_id))

    # -- seats ------------------------------------------------------------------------------

    async def seat_map(self, table_id: str, player_id: str, *, refresh: bool = False, invitation: str = "") -> SeatMap:
        cached = self.seat_maps.get(table_id)
        if cached is not None and not refresh:
            return cached
        ask = table_pb2.GetSeatViewRequest(table_id=table_id, seat=SPECTATOR, invitation=invitation)
        command = table_pb2.TableCommand(get_seat_view=ask)
        reply = await self._tables().command(table_id, command, player_id)
        view = reply.get_seat_view.view
        ordered = sorted(view.seats, key=lambda s: s.index)
        seats = SeatMap([s.player_id for s in ordered], view.finished, [s.auto_play and s.bot for s in ordered])
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

    async def open_seat(self, table_id: str, seat: int, player_id: str, *, take: bool = True) -> None:
        """The player opens his own seat still played by auto-play (a competition's whose player
        had not come, docs/rules.md §10): he takes it, from its next decision on (ReclaimSeat as
        him); or, not `take`, he leaves it to auto-play and gives his seed now (§11: empty), so
        the first deal need not wait for him. One action id per seat: every gateway's resume
        asks once. The table decides; a seat taken already (or a game over) is no error here."""
        seats = self.seat_maps.get(table_id)
        if seats is None or not 0 <= seat < len(seats.auto_play) or not seats.auto_play[seat]:
            return
        header = table_pb2.ActionHeader(
            table_id=table_id, seat=seat, action_id=f"seat-{seat}-{'taken' if take else 'auto-play'}"
        )
        command = table_pb2.TableCommand()
        if take:
            command.reclaim_seat.header.CopyFrom(header)
        else:
            command.set_client_seed.header.CopyFrom(header)  # an empty seed: §11 "contributes ''"
        with contextlib.suppress(IllegalMove):  # taken already (another gateway's resume), dealt, or over
            await self._tables().command(table_id, command, player_id)
        if take:
            seats.auto_play[seat] = False

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
        elif kind == "auto_play":  # his competition seat to the bot, or back (docs/rules.md §10)
            (command.hand_over_seat if action.auto_play else command.reclaim_seat).header.CopyFrom(header)
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
        others see at the table."""
        check_client_seed(request.client_seed)
        if request.partner_id:
            check_id(request.partner_id, "partner id")
        ticket = await self._mm().enqueue(player_id, request, clean_display_name(display_name))
        self._queued(player_id, ticket)
        return ticket

    def _queued(self, player_id: str, ticket: matchmaking_pb2.Ticket) -> None:
        """A new ticket: the player's current table is the ticket's (none until it is matched),
        no longer the finished game he played before, which a resume without a table id would
        otherwise follow again ("play again" showed the old game over, issue 39)."""
        player = self.player(player_id)
        player.ticket_id, player.table_id = ticket.ticket_id, ticket.table_id

    async def cancel_match(self, player_id: str, ticket_id: str) -> matchmaking_pb2.Ticket:
        ticket_id = ticket_id or self.player(player_id).ticket_id
        check_id(ticket_id, "ticket id")
        return await self._mm().cancel(player_id, ticket_id)

    async def create_private(
        self, player_id: str, request: gateway_pb2.CreatePrivateGameRequest, display_name: str = ""
    ) -> gateway_pb2.CreatePrivateGameResponse:
        check_client_seed(request.client_seed)
        reply = await self._mm().create_private(player_id, request, clean_display_name(display_name))
        self._queued(player_id, reply.ticket)
        return reply

    async def join_private(
        self, player_id: str, request: gateway_pb2.JoinPrivateGameRequest, display_name: str = ""
    ) -> matchmaking_pb2.Ticket:
        check_client_seed(request.client_seed)
        check_id(request.code, "code")
        ticket = await self._mm().join_private(player_id, request, clean_display_name(display_name))
        self._queued(player_id, ticket)
        return ticket

    async def start_private(self, player_id: str, code: str, partner: int = 0) -> str:
        check_id(code, "code")
        return await self._mm().start_private(player_id, code, partner)

    async def get_private(self, player_id: str, code: str) -> gateway_pb2.GetPrivateGameResponse:
        check_id(code, "code")
        return await self._mm().get_private(player_id, code)

    def watch_ticket(self, player_id: str, ticket_id: str) -> AsyncIterator[matchmaking_pb2.WatchTicketResponse]:
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
        elif which == "live_tables":
            pass  # public tables only (scoring never lists a private one): the same for everyone
        elif which == "leaderboard" and q.leaderboard.around_player_id:
            check_id(q.leaderboard.around_player_id, "player id")
        reply = await self._scoring().query(q, player_id)
        if which == "game_record" and reply.game_record.record_json:
            # docs/rules.md §14: hands and the seed are public only once the game has ended.
            record = json.loads(reply.game_record.record_json)
            if not (record.get("fairness") or {}).get("server_seed"):
                raise StaleTurn("the game is still running; its record is available when it ends")
        return reply

    # -- sessions ---------------------------------------------------------------------------

    def action_applied(self, table_id: str, cause: events_pb2.ActionCause, sequence: int) -> None:
        """A feed batch of `table_id` has come with the events, through `sequence`, of seat
        `cause.seat`'s action `cause.action_id`: the actor's session, if it waits for
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
            self.social.attach(session)
            await self.came_online(session, again=True)
        return session

    async def closed(self, session: Session) -> None:
        self.social.detach(session)
        pid = session.principal.player_id
        if session.interactive:
            state = self.player(pid)
            state.sessions = max(0, state.sessions - 1)
            if self.live.get(pid) is session:
                del self.live[pid]
        await self._went_offline(pid)

    # -- presence: one PlayerConnected / PlayerDisconnected pair per stay on this replica -----

    async def came_online(self, session: Session, *, again: bool = False) -> None:
        """`session` (attached to `social`: an interactive Session or a SocialEvents stream)
        counts for presence: PlayerConnected when it is its player's first here, naming its
        session id, the stay's. His PlayerDisconnected goes when his last one here closes
        (`closed`), naming the stay's id too, so the social service's sessions and the timers'
        disconnect grace (docs/rules.md §10) see one stay, however his sessions overlap.
        `again` (an interactive Session): PlayerConnected even within a stay, naming the
        stay's id; the timers take it as his return (his autos forgotten, a free table's
        seat taken back from the bot, §10), as before."""
        pid = session.player_id
        stay = self.present.setdefault(pid, session.session_id)
        if again or stay == session.session_id:
            await self.publish_presence(pid, stay, connected=True)

    async def _went_offline(self, player_id: str) -> None:
        if player_id in self.social.social_sessions:
            return  # another of his sessions here still counts
        session_id = self.present.pop(player_id, None)
        if session_id is not None:
            await self.publish_presence(player_id, session_id, connected=False)

    async def publish_presence(self, player_id: str, session_id: str, *, connected: bool) -> None:
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
