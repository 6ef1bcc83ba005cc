"""The matchmaking service's logic: enqueue, cancel, private tables by code, rematch, the
rounds of a partition (expiry, widening, matching, retention) and the claim protocol that
lets several replicas share the queues.

Its pieces, one job each (none imports grpc or nats; adapters `grpc_api`, `subscribers`,
`wallet` translate, and it raises `trix.errors` domain errors): `wishes` (what a player
asks for, resolved and checked), `records` (tickets, lobbies, match records and their
keys in the `match_tickets` bucket), `ports` (the injected collaborators: a compare-and-set
`Store`, a `MatchPublisher`, a `Wallet`, a `SeatIndex`, a `RatingSource`), `matching` (the
pure matching, which tickets share a table and where they sit). With a clock and a random
generator injected too, every decision is reproducible in a test.

Retention: a finished ticket (and the player's lock naming it) is purged `retention_s` after it
was cancelled or expired, a matched ticket, its match record and a finished lobby
`matched_retention_s` after they finished (rematch reads the match record). The partition
owner does it, purging each key only up to the revision it saw, so a replica that is behind
or a concurrent writer can never remove a newer value.

Claim protocol (no ticket matched twice, none lost when a replica dies; ADR 0005):
create `mt` PENDING -> compare-and-set each ticket SEARCHING -> CLAIMED(match) -> CAS `mt`
PENDING -> COMMITTED -> publish MatchFormed (message id = match id) -> tickets MATCHED ->
`mt` DONE. Whoever finds a stale claim CASes `mt` PENDING -> ABORTED and puts the tickets
back; the CAS on `mt` decides between a slow claimer and a recoverer, so exactly one of
"commit" and "abort" happens.
"""

from __future__ import annotations

import asyncio
import dataclasses
import functools
import hashlib
import heapq
import math
import secrets
import uuid
import zlib
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Sequence
from typing import Any, TypeVar

import structlog

from trix.errors import (
    AlreadyExists,
    DomainError,
    IllegalMove,
    InvalidArgument,
    NotFound,
    PermissionDenied,
    Unavailable,
)
from trix.matchmaking.config import MatchmakingConfig
from trix.matchmaking.matching import RatingWindow, assign_seats, form_groups
from trix.matchmaking.ports import (
    NO_WALLET,
    MatchPublisher,
    NoRatings,
    NoSeatIndex,
    NoWallet,
    RatingSource,
    SeatIndex,
    Store,
    Wallet,
)
from trix.matchmaking.records import (
    ABORTED,
    CANCELLED,
    CLAIMED,
    CLOSED,
    COMMITTED,
    DONE,
    EXPIRED,
    FORMED,
    HOLDING,
    MATCHED,
    OPEN,
    PENDING,
    PRIVATE,
    QUEUE,
    REMATCH,
    SEARCHING,
    STARTED,
    TERMINAL,
    Lobby,
    LobbyMember,
    MatchRecord,
    SeatRecord,
    Ticket,
    match_key,
    player_key,
    public_state,
    ticket_key,
)
from trix.matchmaking.wishes import (
    PARTNERSHIP_VARIANTS,
    Wish,
    check_client_seed,
    check_display_name,
    check_player_id,
)

log = structlog.get_logger("trix.matchmaking")


class NotAllowedNow(IllegalMove):
    """A request the current state forbids (already seated, table full, already matched)."""


# -- the service -----------------------------------------------------------------------

T = TypeVar("T")

ADMISSION_LIMIT = 256
"""Enqueues a replica works on at once (the others wait their turn)."""
ROUND_COMMITS = 64
"""Matches a partition's round commits at most (each is ~15 sequential store calls)."""
ROUND_CHORES = 128
"""Chores (expiry, widening, claim recovery, lobby starts, retirement) a round runs at most."""
RETIRE_RETRY_S = 30.0
"""A purge whose stake release failed (the wallet is down) is tried again this much later."""
WIDENED_FACTOR = 1.5
"""A ticket is shown WIDENED once its rating window reached this multiple of the base (with
the defaults after 5 s): marking it costs a store write, so not on the first tick."""


def partition_of(text: str, partitions: int) -> int:
    return zlib.crc32(text.encode()) % partitions


class MatchmakingService:
    """The matchmaking's domain logic."""

    def __init__(
        self,
        config: MatchmakingConfig,
        store: Store,
        publisher: MatchPublisher,
        *,
        wallet: Wallet | None = None,
        seat_index: SeatIndex | None = None,
        ratings: RatingSource | None = None,
        clock: Callable[[], float] | None = None,
        rng: Any = None,
    ) -> None:
        import random
        import time

        self.config = config
        self.store = store
        self.publisher = publisher
        self.wallet: Wallet = wallet or NoWallet()
        self.seat_index: SeatIndex = seat_index or NoSeatIndex()
        self.ratings: RatingSource = ratings or NoRatings()
        self.clock: Callable[[], float] = clock or time.time
        self.rng = rng if rng is not None else random.Random()
        self.window = RatingWindow(
            config.rating_window_base, config.rating_window_growth_per_s, config.rating_window_max
        )
        # The view of owned partitions: ticket id -> (ticket, revision); lobby key -> (lobby, revision).
        self.pools: dict[int, dict[str, tuple[Ticket, int]]] = {}
        self.wakers: dict[int, asyncio.Event] = {}
        """A running partition's wake-up: set when its tickets or lobbies change (`observe`)."""
        self.lobbies: dict[int, dict[str, tuple[Lobby, int]]] = {}
        # Finished tickets and lobbies of owned partitions waiting for their retention to end:
        # key -> (due time, revision, player id, match id, stake to release); a lobby has none of them.
        self.retiring: dict[int, dict[str, tuple[float, int, str, str, bool]]] = {}
        self._retire_heaps: dict[int, list[tuple[float, str]]] = {}
        """Per partition, (due time, key) of every `retiring` entry set (`_retire_at`): a round
        takes the due ones off the top instead of scanning every record kept for its retention
        (hours for a matched ticket: thousands of records, twenty rounds a second). Entries
        since replaced or retired are dropped when they reach the top."""
        self.matches_formed = 0
        self.claim_conflicts = 0
        self.retired = 0
        # Enqueues in flight at once: more wait here, costing the event loop nothing, so a
        # burst cannot queue thousands of store calls ahead of the lease renewals.
        self._admission = asyncio.Semaphore(ADMISSION_LIMIT)

    # -- store helpers ------------------------------------------------------------

    async def _get_ticket(self, ticket_id: str) -> tuple[Ticket, int] | None:
        got = await self.store.get(ticket_key(ticket_id))
        return None if got is None else (Ticket.decode(got[0]), got[1])

    async def _get_match(self, match_id: str) -> tuple[MatchRecord, int] | None:
        got = await self.store.get(match_key(match_id))
        return None if got is None else (MatchRecord.decode(got[0]), got[1])

    async def _get_lobby(self, key: str) -> tuple[Lobby, int] | None:
        got = await self.store.get(key)
        return None if got is None else (Lobby.decode(got[0]), got[1])

    def _note(self, ticket: Ticket, revision: int) -> None:
        """Keep an owned partition's view current after our own write."""
        pool = self.pools.get(ticket.partition)
        if pool is not None:
            have = pool.get(ticket.ticket_id)
            if have is None or have[1] < revision:
                if ticket.state in TERMINAL:
                    pool.pop(ticket.ticket_id, None)
                else:
                    pool[ticket.ticket_id] = (ticket, revision)

    async def _cas_ticket(
        self,
        ticket_id: str,
        change: Callable[[Ticket], bool],
        *,
        attempts: int = 20,
        known: tuple[Ticket, int] | None = None,
    ) -> tuple[Ticket, int] | None:
        """Read-modify-write a ticket: `change` mutates and returns True, or returns False to stop.
        `known`: the ticket and revision just written by us, tried first without a read."""
        for attempt in range(attempts):
            if attempt == 0 and known is not None:
                got: tuple[Ticket, int] | None = (dataclasses.replace(known[0]), known[1])
            else:
                got = await self._get_ticket(ticket_id)
            if got is None:
                return None
            ticket, rev = got
            if not change(ticket):
                return ticket, rev
            new_rev = await self.store.update(ticket.key, ticket.encode(), rev)
            if new_rev is not None:
                self._note(ticket, new_rev)
                return ticket, new_rev
        raise Unavailable("ticket is changing too fast; retry")

    # -- identity of ids ------------------------------------------------------------

    def _new_ticket_id(self, partition: int, player_id: str, request_id: str) -> str:
        if request_id:
            digest = hashlib.sha256(f"{player_id}|{request_id}".encode()).hexdigest()[:30]
        else:
            digest = uuid.uuid4().hex[:30]
        return f"{partition:02d}{digest}"

    # -- enqueue ---------------------------------------------------------------------

    async def enqueue(
        self,
        player_id: str,
        wish: Wish,
        *,
        partner_id: str = "",
        client_seed: str = "",
        request_id: str = "",
        preset: str = "",
        display_name: str = "",
    ) -> Ticket:
        """Queue a player; paid tickets hold the stake first (docs/rules.md §13)."""
        check_player_id(player_id)
        check_client_seed(client_seed)
        check_display_name(display_name)
        if partner_id:
            check_player_id(partner_id, "partner id")
            if wish.variant not in PARTNERSHIP_VARIANTS:
                raise InvalidArgument("a partner can be named only in partnership variants")
            if partner_id == player_id:
                raise InvalidArgument("a player cannot be his own partner")
        if len(request_id) > 128:
            raise InvalidArgument("request id must be at most 128 characters")
        partition = partition_of(wish.queue_key(), self.config.partitions)
        ticket_id = self._new_ticket_id(partition, player_id, request_id)
        async with self._admission:
            return await self._enqueue(ticket_id, player_id, wish, partner_id, client_seed, preset, display_name)

    async def _enqueue(
        self,
        ticket_id: str,
        player_id: str,
        wish: Wish,
        partner_id: str,
        client_seed: str,
        preset: str,
        display_name: str = "",
    ) -> Ticket:
        rating = await self._rating(player_id, wish.variant)
        ticket = Ticket(
            ticket_id=ticket_id,
            player_id=player_id,
            wish=wish,
            kind=QUEUE,
            partner_id=partner_id,
            client_seed=client_seed,
            rating=self.config.default_rating if rating is None else rating,
            created_at=self.clock(),
            preset=preset,
            display_name=display_name,
        )
        return await self._admit(ticket)

    async def _rating(self, player_id: str, variant: int) -> float | None:
        """The player's rating from the rating source (scoring); None (the default rating) if
        it is unknown, slow or failing: matching never waits on scoring."""
        try:
            return await asyncio.wait_for(self.ratings.rating(player_id, variant), self.config.rating_timeout_s)
        except TimeoutError:
            log.warning("rating lookup timed out; default rating used", player_id=player_id)
        except Exception as exc:  # noqa: BLE001 - any failure of the source: the default rating
            log.warning("rating lookup failed; default rating used", error=repr(exc))
        return None

    async def _admit(self, ticket: Ticket, *, rematch_of: str = "") -> Ticket:
        """Store the ticket (HOLDING: not matchable), take the player's lock, hold the stake
        (paid), then make it SEARCHING. A crash midway leaves a HOLDING ticket the partition
        owner expires."""
        if ticket.wish.paid and not self.wallet.configured:
            raise Unavailable(NO_WALLET)  # refused before any write
        existing = await self._get_ticket(ticket.ticket_id)
        created: tuple[Ticket, int] | None = None
        if existing is None:
            await self._check_not_seated(ticket.player_id, rematch_of)
            ticket.state = HOLDING
            rev = await self.store.create(ticket.key, ticket.encode())
            if rev is not None:
                created = (ticket, rev)
            else:
                existing = await self._get_ticket(ticket.ticket_id)
                if existing is None:
                    raise Unavailable("ticket vanished while being created; retry")
        if existing is not None:  # an idempotent repeat of the same request
            if existing[0].player_id != ticket.player_id:
                raise AlreadyExists("request id already used")
            if existing[0].state != HOLDING:
                return existing[0]
            ticket = existing[0]  # the first attempt stopped midway (its replica died): resume it
        try:
            await self._take_player_lock(ticket.player_id, ticket.ticket_id, rematch_of)
            if ticket.wish.paid:
                await self.wallet.hold(ticket.player_id, ticket.ticket_id, ticket.wish.stake)
        except DomainError as err:
            if isinstance(err, Unavailable):
                # Not a refusal (issue 19: a bucket or scoring electing a leader; the stake may
                # even be held, its answer lost). Nor is a NATS error or the call's cancellation
                # (not caught here). The ticket stays HOLDING: a retry with the same request id
                # resumes it above, and one never retried expires with its stake released
                # (`_expire_holding`), as after a crash midway.
                raise
            await self._finish_unmatched(ticket.ticket_id, CANCELLED, release=False)
            raise

        def searching(t: Ticket) -> bool:
            if t.state != HOLDING:
                return False
            t.state = SEARCHING
            return True

        done = await self._cas_ticket(ticket.ticket_id, searching, known=created)
        if done is None or done[0].state != SEARCHING:
            if ticket.wish.paid:  # cancelled while the stake was being held
                await self.wallet.release(ticket.player_id, ticket.ticket_id)
            return done[0] if done is not None else ticket
        return done[0]

    async def _check_not_seated(self, player_id: str, rematch_of: str) -> None:
        table = await self.seat_index.current_table(player_id)
        if table and table != rematch_of:
            raise NotAllowedNow(f"player {player_id} is already seated at table {table}")

    async def _take_player_lock(self, player_id: str, ticket_id: str, rematch_of: str) -> None:
        key = player_key(player_id)
        for _ in range(20):
            if await self.store.create(key, ticket_id.encode()) is not None:
                return
            got = await self.store.get(key)
            if got is None:
                continue
            held_id, rev = got[0].decode(), got[1]
            if held_id == ticket_id:
                return
            held = await self._get_ticket(held_id)
            if held is not None:
                t = held[0]
                if t.state in (SEARCHING, HOLDING, CLAIMED) and t.ticket_id != ticket_id:
                    raise AlreadyExists(f"player {player_id} is already queued (ticket {t.ticket_id})")
                if (
                    t.state == MATCHED
                    and t.table_id != rematch_of
                    and self.clock() - t.matched_at < self.config.seat_grace_s
                ):
                    raise NotAllowedNow(f"player {player_id} is already seated at table {t.table_id}")
            if await self.store.update(key, ticket_id.encode(), rev) is not None:
                return
        raise Unavailable("player lock is contended; retry")

    async def _release_player_lock(self, player_id: str, ticket_id: str) -> None:
        key = player_key(player_id)
        got = await self.store.get(key)
        if got is not None and got[0].decode() == ticket_id:
            await self.store.purge(key, got[1])  # no tombstone left behind (nobody watches locks)

    # -- cancel, expire ----------------------------------------------------------------

    async def cancel(self, player_id: str, ticket_id: str) -> Ticket:
        """Cancel a searching ticket; a held stake is released. Matched tickets stay matched."""
        check_player_id(player_id)
        got = await self._get_ticket(ticket_id)
        if got is None:
            raise NotFound(f"no ticket {ticket_id!r}")
        if got[0].player_id != player_id:
            raise PermissionDenied("the ticket belongs to another player")
        if got[0].lobby and not await self._leave_lobby(got[0]):
            # The table already started: the ticket ends matched.
            deadline = self.clock() + 2 * self.config.claim_timeout_s
            while self.clock() < deadline:
                now_t = await self._get_ticket(ticket_id)
                if now_t is not None and now_t[0].state == MATCHED:
                    raise NotAllowedNow(f"ticket already matched to table {now_t[0].table_id}")
                await asyncio.sleep(0.05)
            raise NotAllowedNow("the table has already started")
        deadline = self.clock() + 2 * self.config.claim_timeout_s
        while True:
            ticket = await self._finish_unmatched(ticket_id, CANCELLED)
            if ticket.state == CLAIMED:
                # Inside a match being committed: it ends matched or back in the queue.
                if self.clock() > deadline:
                    raise Unavailable("the ticket is being matched; retry")
                await asyncio.sleep(0.05)
                continue
            if ticket.state == MATCHED:
                raise NotAllowedNow(f"ticket already matched to table {ticket.table_id}")
            if ticket.state == EXPIRED:
                raise NotAllowedNow("ticket already expired")
            return ticket

    async def _finish_unmatched(self, ticket_id: str, final: str, *, release: bool = True) -> Ticket:
        """SEARCHING/HOLDING -> CANCELLED or EXPIRED, then release the stake and the lock."""
        moved = False

        def finish(t: Ticket) -> bool:
            nonlocal moved
            if t.state not in (SEARCHING, HOLDING):
                return False
            t.state = final
            t.finished_at = self.clock()
            moved = True
            return True

        got = await self._cas_ticket(ticket_id, finish)
        if got is None:
            raise NotFound(f"no ticket {ticket_id!r}")
        ticket = got[0]
        if moved:
            if release and ticket.wish.paid:
                await self.wallet.release(ticket.player_id, ticket.ticket_id)
            await self._release_player_lock(ticket.player_id, ticket.ticket_id)
        elif release and ticket.wish.paid and ticket.state == final:
            # A repeat (the first attempt's release may have failed): release again, idempotent.
            await self.wallet.release(ticket.player_id, ticket.ticket_id)
        return ticket

    async def ticket(self, player_id: str, ticket_id: str) -> Ticket:
        got = await self._get_ticket(ticket_id)
        if got is None:
            raise NotFound(f"no ticket {ticket_id!r}")
        if got[0].player_id != player_id:
            raise PermissionDenied("the ticket belongs to another player")
        return got[0]

    async def watch(self, player_id: str, ticket_id: str) -> AsyncIterator[Ticket]:
        """The ticket now and at each change, until it is matched, cancelled or expired."""
        await self.ticket(player_id, ticket_id)
        last: tuple[str, bool] | None = None
        async for item in self.store.watch(ticket_key(ticket_id)):
            if item is None:
                continue
            t = Ticket.decode(item[0])
            view = (public_state(t), t.widened)
            if view != last:
                last = view
                yield t
            if t.state in TERMINAL:
                return

    # -- private tables -------------------------------------------------------------------

    def _lobby_key(self, lobby_id: str) -> str:
        return f"lb.{partition_of(lobby_id, self.config.partitions):02d}.{lobby_id}"

    async def create_private(
        self, host: str, wish: Wish, client_seed: str = "", preset: str = "", display_name: str = ""
    ) -> Ticket:
        """A private table with a fresh invite code; the host's ticket comes back with it."""
        check_player_id(host)
        check_client_seed(client_seed)
        check_display_name(display_name)
        alphabet = "ABCDEFGHJKLMNPQRSTUVWXYZ23456789"
        for _ in range(10):
            code = "".join(secrets.choice(alphabet) for _ in range(6))
            key = self._lobby_key(code)
            lobby = Lobby(code, PRIVATE, host, wish, [], self.clock())
            if await self.store.create(key, lobby.encode()) is not None:
                break
        else:
            raise Unavailable("could not allocate an invite code; retry")
        try:
            return await self._join_lobby(key, host, client_seed, preset, display_name)
        except BaseException:
            got = await self._get_lobby(key)
            if got is not None:
                await self.store.delete(key, got[1])
            raise

    async def join_private(self, player_id: str, code: str, client_seed: str = "", display_name: str = "") -> Ticket:
        check_player_id(player_id)
        check_client_seed(client_seed)
        check_display_name(display_name)
        if not code.isalnum() or len(code) > 16:
            raise NotFound("no private table with this invite code")
        return await self._join_lobby(self._lobby_key(code.upper()), player_id, client_seed, "", display_name)

    async def _join_lobby(
        self, key: str, player_id: str, client_seed: str, preset: str, display_name: str = ""
    ) -> Ticket:
        got = await self._get_lobby(key)
        if got is None:
            raise NotFound("no private table with this invite code")
        lobby = got[0]
        self._check_lobby_open(lobby, player_id)
        rematch_of = lobby.lobby_id[2:] if lobby.kind == REMATCH else ""
        if lobby.kind == REMATCH:
            client_seed = lobby.fixed_seeds.get(player_id, "")
        partition = int(key.split(".")[1])
        ticket = Ticket(
            ticket_id=self._new_ticket_id(partition, player_id, ""),
            player_id=player_id,
            wish=lobby.wish,
            kind=lobby.kind,
            client_seed=client_seed,
            created_at=self.clock(),
            lobby=key,
            preset=preset,
            display_name=display_name,
        )
        ticket = await self._admit(ticket, rematch_of=rematch_of)
        for _ in range(50):
            got = await self._get_lobby(key)
            if got is None:
                await self._finish_unmatched(ticket.ticket_id, CANCELLED)
                raise NotFound("no private table with this invite code")
            lobby, rev = got
            try:
                self._check_lobby_open(lobby, player_id)
            except BaseException:
                await self._finish_unmatched(ticket.ticket_id, CANCELLED)
                raise
            lobby.members.append(LobbyMember(player_id, ticket.ticket_id, client_seed, display_name))
            if await self.store.update(key, lobby.encode(), rev) is not None:
                break
        else:
            await self._finish_unmatched(ticket.ticket_id, CANCELLED)
            raise Unavailable("the private table is busy; retry")
        everyone = len(lobby.members) == 4 or (
            lobby.kind == REMATCH and {m.player_id for m in lobby.members} == set(lobby.fixed_seats)
        )
        if everyone:
            await self._start_lobby(key)
        got_t = await self._get_ticket(ticket.ticket_id)
        return got_t[0] if got_t is not None else ticket

    def _check_lobby_open(self, lobby: Lobby, player_id: str) -> None:
        if lobby.state != OPEN:
            raise NotAllowedNow("the table has already started or was closed")
        if any(m.player_id == player_id for m in lobby.members):
            raise AlreadyExists(f"player {player_id} is already at this table")
        if lobby.kind == REMATCH and player_id not in lobby.fixed_seats:
            raise PermissionDenied("only the players of the finished table can accept its rematch")
        if len(lobby.members) >= 4:
            raise NotAllowedNow("the private table is full")

    async def _leave_lobby(self, ticket: Ticket) -> bool:
        """A lobby ticket being cancelled leaves its lobby (the host closes a private table).
        False if the lobby has started: the ticket is (being) matched."""
        for _ in range(50):
            got = await self._get_lobby(ticket.lobby)
            if got is None:
                return True
            lobby, rev = got
            if lobby.state in (STARTED, FORMED):
                return False
            if lobby.state != OPEN:
                return True
            if lobby.kind == PRIVATE and lobby.host == ticket.player_id:
                others = [m for m in lobby.members if m.player_id != ticket.player_id]
                lobby.state = CLOSED
                lobby.finished_at = self.clock()
                lobby.members = [m for m in lobby.members if m.player_id == ticket.player_id]
                if await self.store.update(ticket.lobby, lobby.encode(), rev) is not None:
                    for m in others:
                        await self._finish_unmatched(m.ticket_id, CANCELLED)
                    return True
                continue
            lobby.members = [m for m in lobby.members if m.ticket_id != ticket.ticket_id]
            if await self.store.update(ticket.lobby, lobby.encode(), rev) is not None:
                return True
        raise Unavailable("the private table is busy; retry")

    async def start_private(self, host: str, code: str) -> str:
        """Start a private table now; bots take the empty seats (free tables only)."""
        check_player_id(host)
        key = self._lobby_key(code.upper()) if code.isalnum() and len(code) <= 16 else ""
        got = await self._get_lobby(key) if key else None
        if got is None or got[0].kind != PRIVATE:
            raise NotFound("no private table with this invite code")
        lobby = got[0]
        if lobby.host != host:
            raise PermissionDenied("only the host can start the private table")
        if lobby.state in (STARTED, FORMED):
            return lobby.match_id
        if lobby.state != OPEN:
            raise NotAllowedNow("the private table was closed")
        if lobby.wish.paid and len(lobby.members) < 4:
            raise NotAllowedNow("a paid table starts only with four players: bots never sit at paid tables")
        match_id = await self._start_lobby(key)
        if not match_id:
            raise NotAllowedNow("the private table could not start")
        return match_id

    async def _start_lobby(self, key: str) -> str:
        """OPEN -> STARTED with the seats chosen (the commit point), then form the match."""
        for _ in range(50):
            got = await self._get_lobby(key)
            if got is None:
                return ""
            lobby, rev = got
            if lobby.state == FORMED:
                return lobby.match_id
            if lobby.state == STARTED:
                await self._form_lobby_match(lobby, key, rev)
                return lobby.match_id
            if lobby.state != OPEN or not lobby.members:
                return ""
            lobby.state = STARTED
            lobby.match_id = new_match_id()
            new_rev = await self.store.update(key, lobby.encode(), rev)
            if new_rev is not None:
                await self._form_lobby_match(lobby, key, new_rev)
                return lobby.match_id
        raise Unavailable("the private table is busy; retry")

    async def _form_lobby_match(self, lobby: Lobby, key: str, lobby_rev: int) -> None:
        seats = [SeatRecord(bot=True) for _ in range(4)]
        if lobby.kind == REMATCH:
            for m in lobby.members:
                seats[lobby.fixed_seats[m.player_id]] = SeatRecord(
                    m.player_id, m.ticket_id, m.client_seed, display_name=m.display_name
                )
        else:
            # Seats drawn from the match id, so every replica finishing this lobby seats alike.
            import random

            order = list(range(4))
            random.Random(lobby.match_id).shuffle(order)
            for seat, m in zip(order, lobby.members, strict=False):
                seats[seat] = SeatRecord(m.player_id, m.ticket_id, m.client_seed, display_name=m.display_name)
        record = MatchRecord(lobby.match_id, lobby.wish, seats, COMMITTED, self.clock(), private=lobby.kind == PRIVATE)
        rev = await self.store.create(match_key(record.match_id), record.encode())
        if rev is None:
            got = await self._get_match(record.match_id)
            if got is None:
                return
            record, rev = got
        await self._complete(record, rev)
        lobby.state = FORMED
        lobby.finished_at = self.clock()
        await self.store.update(key, lobby.encode(), lobby_rev)

    # -- rematch ---------------------------------------------------------------------------

    async def rematch(self, player_id: str, table_id: str, display_name: str = "") -> Ticket:
        """Accept a rematch of a finished table: the same seats, a new table once all accept
        (free tables: after the bot-fill wait, those who accepted and bots)."""
        check_player_id(player_id)
        check_display_name(display_name)
        if not table_id.isalnum() or len(table_id) > 64:
            raise NotFound(f"no match formed table {table_id!r}")
        got = await self._get_match(table_id)
        if got is None:
            raise NotFound(f"no match formed table {table_id!r}")
        old = got[0]
        seats = {s.player_id: i for i, s in enumerate(old.seats) if not s.bot}
        if player_id not in seats:
            raise PermissionDenied("only the players of the finished table can accept its rematch")
        key = self._lobby_key(f"r-{table_id}")
        lobby = Lobby(
            f"r-{table_id}",
            REMATCH,
            player_id,
            old.wish,
            [],
            self.clock(),
            fixed_seats=seats,
            fixed_seeds={s.player_id: s.client_seed for s in old.seats if not s.bot},
        )
        await self.store.create(key, lobby.encode())
        return await self._join_lobby(key, player_id, "", "", display_name)

    # -- matching: run by the owner of a partition ------------------------------------------

    def observe(self, partition: int, key: str, value: bytes | None, revision: int) -> None:
        """A change seen by the partition's watcher."""
        wake = self.wakers.get(partition)
        if wake is not None:
            wake.set()
        kind = key[:2]
        if kind == "tk":
            pool = self.pools.setdefault(partition, {})
            ticket_id = key.rsplit(".", 1)[1]
            have = pool.get(ticket_id)
            if have is not None and have[1] >= revision:
                return
            retiring = self.retiring.setdefault(partition, {})
            if value is None:
                pool.pop(ticket_id, None)
                retiring.pop(key, None)
                return
            ticket = Ticket.decode(value)
            if ticket.state in TERMINAL:
                pool.pop(ticket_id, None)
                match_id = ticket.match_id if ticket.state == MATCHED else ""
                release = ticket.wish.paid and ticket.state != MATCHED
                self._retire_at(
                    partition, key, (self._retention_due(ticket), revision, ticket.player_id, match_id, release)
                )
            else:
                pool[ticket_id] = (ticket, revision)
                retiring.pop(key, None)
        elif kind == "lb":
            lobbies = self.lobbies.setdefault(partition, {})
            have_l = lobbies.get(key)
            if have_l is not None and have_l[1] >= revision:
                return
            retiring_l = self.retiring.setdefault(partition, {})
            if value is None:
                lobbies.pop(key, None)
                retiring_l.pop(key, None)
                return
            lobby = Lobby.decode(value)
            if lobby.state in (CLOSED, FORMED):
                lobbies.pop(key, None)
                finished = lobby.finished_at or lobby.created_at
                self._retire_at(partition, key, (finished + self.config.matched_retention_s, revision, "", "", False))
            else:
                lobbies[key] = (lobby, revision)

    def release_partition(self, partition: int) -> None:
        self.pools.pop(partition, None)
        self.lobbies.pop(partition, None)
        self.retiring.pop(partition, None)
        self._retire_heaps.pop(partition, None)

    # -- retention: finished records are purged, never kept forever ------------------------

    def _retention_due(self, ticket: Ticket) -> float:
        if ticket.state == MATCHED:
            return (ticket.matched_at or ticket.created_at) + self.config.matched_retention_s
        return (ticket.finished_at or ticket.created_at) + self.config.retention_s

    def _retire_at(self, partition: int, key: str, entry: tuple[float, int, str, str, bool]) -> None:
        """Keep `key` for retirement at `entry[0]` (its first field, the due time)."""
        self.retiring.setdefault(partition, {})[key] = entry
        heapq.heappush(self._retire_heaps.setdefault(partition, []), (entry[0], key))

    def _retire_chores(self, partition: int, now: float) -> list[Callable[[], Awaitable[None]]]:
        """The round's purges: up to ROUND_CHORES keys due by `now`, earliest first. A key
        taken stays on the heap (pushed back) until its purge removes it from `retiring`, so a
        purge that failed is tried again next round, as one not yet due is left alone."""
        retiring = self.retiring.get(partition, {})
        heap = self._retire_heaps.get(partition, [])
        due: list[str] = []
        taken: set[str] = set()
        while heap and heap[0][0] <= now and len(due) < ROUND_CHORES:
            at, key = heapq.heappop(heap)
            entry = retiring.get(key)
            if entry is None or entry[0] != at or key in taken:
                continue  # retired, or replaced by a newer entry (pushed with its own due time)
            taken.add(key)
            due.append(key)
        for key in due:
            heapq.heappush(heap, (retiring[key][0], key))
        return [functools.partial(self._retire, partition, key) for key in due]

    async def _retire(self, partition: int, key: str) -> None:
        """Purge a finished ticket (with its player lock and, matched, its match record; an
        unmatched paid one releases its stake first) or a finished lobby, each only up to the
        revision seen (a newer value is kept)."""
        entry = self.retiring.get(partition, {}).get(key)
        if entry is None:
            return
        _, revision, player_id, match_id, release = entry
        if release:
            # Idempotent: makes sure no stake of an unmatched ticket outlives it, also when the
            # release at cancel/expiry failed or a hold landed after its call had timed out.
            try:
                await self.wallet.release(player_id, key.rsplit(".", 1)[1])
            except Exception as exc:  # noqa: BLE001 - the wallet is down: try again later, keep the key
                pending = self.retiring.get(partition)
                if pending is not None and pending.get(key) == entry:
                    self._retire_at(partition, key, (self.clock() + RETIRE_RETRY_S, *entry[1:]))
                log.warning("stake release before purge failed; retried later", key=key, error=repr(exc))
                return
        if match_id:
            got = await self.store.get(match_key(match_id))
            if got is not None and MatchRecord.decode(got[0]).state in (DONE, ABORTED):
                await self.store.purge(match_key(match_id), got[1])
        if player_id:
            lock = await self.store.get(player_key(player_id))
            if lock is not None and lock[0].decode() == key.rsplit(".", 1)[1]:
                await self.store.purge(player_key(player_id), lock[1])
        await self.store.purge(key, revision)  # last: a crash before it leaves the ticket to retry
        pending = self.retiring.get(partition)
        if pending is not None and pending.get(key) == entry:
            del pending[key]
        self.retired += 1

    async def run_partition(self, partition: int) -> int:
        """One round over an owned partition: recover stale claims, expire, widen, match,
        start lobbies whose wait is over. Returns the number of matches formed.

        A round's work is bounded (`ROUND_COMMITS` matches and `ROUND_CHORES` chores; the
        rest waits for the next tick), so a burst of thousands of tickets never puts
        thousands of store calls in flight at once ahead of the lease renewals."""
        now = self.clock()
        pool = self.pools.get(partition, {})
        queues: dict[str, list[tuple[Ticket, int]]] = {}
        chores: list[Callable[[], Awaitable[Any]]] = []
        widen_at = self.window.base * WIDENED_FACTOR
        for ticket, rev in list(pool.values()):
            if ticket.state == CLAIMED:
                if now - ticket.claimed_at > self.config.claim_timeout_s:
                    chores.append(functools.partial(self._recover_claim, ticket))
                continue
            if ticket.state == HOLDING:
                if now - ticket.created_at > self.config.claim_timeout_s * 10:
                    chores.append(functools.partial(self._expire_holding, ticket))
                continue
            if ticket.state in TERMINAL or ticket.kind != QUEUE:
                continue  # lobby tickets end with their lobby
            if now - ticket.created_at > self.config.ticket_ttl_s:
                chores.append(functools.partial(self._expire, ticket))
                continue
            width = self.window.at(now - ticket.created_at)
            if not ticket.widened and width > self.window.base and width >= widen_at:
                chores.append(functools.partial(self._mark_widened, ticket.ticket_id))
            queues.setdefault(ticket.wish.queue_key(), []).append((ticket, rev))
        for key, (lobby, _) in list(self.lobbies.get(partition, {}).items()):
            if lobby.state == STARTED or (
                lobby.state == OPEN
                and lobby.kind == REMATCH
                and not lobby.wish.paid
                and lobby.members
                and now - lobby.created_at >= self.config.bot_fill_after_s
            ):
                chores.append(functools.partial(self._start_lobby, key))
            elif lobby.state == OPEN and now - lobby.created_at > self.config.lobby_ttl_s:
                chores.append(functools.partial(self._close_lobby, key))
        chores.extend(self._retire_chores(partition, now))
        commits: list[asyncio.Future[bool]] = []
        for entries in queues.values():
            room = ROUND_COMMITS - len(commits)
            if room <= 0:
                break
            revisions = {t.ticket_id: r for t, r in entries}
            wish = entries[0][0].wish
            groups = form_groups(
                [t for t, _ in entries],
                now,
                self.window,
                self.config.bot_fill_after_s,
                bots_allowed=not wish.paid,
                limit=room,
            )
            for group in groups:
                seats = assign_seats(group, self.rng)
                commits.append(asyncio.ensure_future(self._commit(wish, seats, revisions)))
        started = [asyncio.ensure_future(chore()) for chore in chores[:ROUND_CHORES]]
        results = await asyncio.gather(*commits, *started, return_exceptions=True)
        formed = 0
        for result in results[: len(commits)]:
            if result is True:
                formed += 1
            elif isinstance(result, BaseException):
                log.warning("match commit failed", error=repr(result))
        for result in results[len(commits) :]:
            if isinstance(result, BaseException):
                log.warning("matchmaking chore failed", error=repr(result))
        return formed

    async def _mark_widened(self, ticket_id: str) -> None:
        def widen(t: Ticket) -> bool:
            if t.state != SEARCHING or t.widened:
                return False
            t.widened = True
            return True

        await self._cas_ticket(ticket_id, widen)

    async def _expire(self, ticket: Ticket) -> None:
        if ticket.lobby:
            await self._leave_lobby(ticket)
        await self._finish_unmatched(ticket.ticket_id, EXPIRED)

    async def _expire_holding(self, ticket: Ticket) -> None:
        """A ticket whose creator died between storing it and holding the stake."""
        got = await self._get_ticket(ticket.ticket_id)
        if got is None or got[0].state != HOLDING:
            return
        if ticket.wish.paid:
            await self.wallet.release(ticket.player_id, ticket.ticket_id)  # idempotent, even if never held
        await self._finish_unmatched(ticket.ticket_id, EXPIRED, release=False)

    async def _close_lobby(self, key: str) -> None:
        got = await self._get_lobby(key)
        if got is None or got[0].state != OPEN:
            return
        lobby, rev = got
        lobby.state = CLOSED
        lobby.finished_at = self.clock()
        if await self.store.update(key, lobby.encode(), rev) is not None:
            for m in lobby.members:
                await self._finish_unmatched(m.ticket_id, EXPIRED)

    async def _commit(self, wish: Wish, seats: Sequence[Ticket | None], revisions: dict[str, int]) -> bool:
        """The claim protocol for one queue group; False if a ticket changed under us."""
        record = MatchRecord(
            new_match_id(),
            wish,
            [
                SeatRecord(bot=True)
                if t is None
                else SeatRecord(t.player_id, t.ticket_id, t.client_seed, display_name=t.display_name)
                for t in seats
            ],
            PENDING,
            self.clock(),
        )
        mkey = match_key(record.match_id)
        mrev = await self.store.create(mkey, record.encode())
        if mrev is None:
            return False
        now = self.clock()
        wanted = [
            dataclasses.replace(t, state=CLAIMED, match_id=record.match_id, claimed_at=now)
            for t in seats
            if t is not None
        ]
        # The claims go out together (each is a compare-and-set on its own ticket; the `mt`
        # record, not the order of the claims, decides the match).
        results = await asyncio.gather(
            *(self.store.update(t.key, t.encode(), revisions[t.ticket_id]) for t in wanted), return_exceptions=True
        )
        claimed: dict[str, tuple[Ticket, int]] = {}
        failed: list[Ticket] = []
        for t, rev in zip(wanted, results, strict=True):
            if isinstance(rev, int):
                self._note(t, rev)
                claimed[t.ticket_id] = (t, rev)
            else:
                failed.append(t)
        if failed:
            self.claim_conflicts += 1
            await self._abort(record, mrev, list(claimed))
            for t in failed:  # refresh the view of a ticket that changed under us
                fresh = await self._get_ticket(t.ticket_id)
                pool = self.pools.get(t.partition)
                if pool is not None:
                    if fresh is None or fresh[0].state in TERMINAL:
                        pool.pop(t.ticket_id, None)
                    else:
                        pool[t.ticket_id] = fresh
            for rev in results:
                if isinstance(rev, BaseException):
                    raise rev
            return False
        record.state = COMMITTED
        new_mrev = await self.store.update(mkey, record.encode(), mrev)
        if new_mrev is None:  # a recoverer aborted the match first
            await self._revert(record.match_id, list(claimed))
            return False
        await self._complete(record, new_mrev, claimed)
        return True

    async def _abort(self, record: MatchRecord, mrev: int, claimed: list[str]) -> None:
        record.state = ABORTED
        if await self.store.update(match_key(record.match_id), record.encode(), mrev) is None:
            got = await self._get_match(record.match_id)
            if got is not None and got[0].state in (COMMITTED, DONE):
                await self._complete(*got)
                return
        await self._revert(record.match_id, claimed)

    async def _revert(self, match_id: str, ticket_ids: Iterable[str]) -> None:
        def back(t: Ticket) -> bool:
            if t.state != CLAIMED or t.match_id != match_id:
                return False
            t.state = SEARCHING
            t.match_id = ""
            t.claimed_at = 0.0
            return True

        for ticket_id in ticket_ids:
            await self._cas_ticket(ticket_id, back)

    async def _recover_claim(self, ticket: Ticket) -> None:
        """A claim older than the timeout: finish its match or abort it (the CAS on `mt` decides)."""
        got = await self._get_match(ticket.match_id)
        if got is None:
            await self._revert(ticket.match_id, [ticket.ticket_id])
            return
        record, mrev = got
        if record.state == PENDING:
            log.info("recovering a stale claim", match_id=record.match_id)
            await self._abort(record, mrev, record.ticket_ids())
        elif record.state == ABORTED:
            await self._revert(record.match_id, record.ticket_ids())
        else:
            await self._complete(record, mrev)

    async def _complete(
        self, record: MatchRecord, mrev: int, claimed: dict[str, tuple[Ticket, int]] | None = None
    ) -> None:
        """Forward from COMMITTED: publish MatchFormed (idempotent), tickets MATCHED, `mt` DONE.
        `claimed`: the tickets as our claims wrote them (no read needed when still current)."""
        if record.state == DONE:
            return
        await self.publisher.match_formed(record)
        now = self.clock()
        known = claimed or {}
        writes: list[Awaitable[tuple[Ticket, int] | None]] = []
        for seat, s in enumerate(record.seats):
            if not s.ticket_id:
                continue

            def matched(t: Ticket, seat: int = seat) -> bool:
                if t.state in TERMINAL:
                    if t.state != MATCHED:
                        log.error("a finished ticket is in a committed match", ticket_id=t.ticket_id)
                    return False
                t.state = MATCHED
                t.match_id = record.match_id
                t.table_id = record.table_id
                t.seat = seat
                t.matched_at = now
                return True

            writes.append(self._cas_ticket(s.ticket_id, matched, known=known.get(s.ticket_id)))
        await asyncio.gather(*writes)
        record.state = DONE
        if await self.store.update(match_key(record.match_id), record.encode(), mrev) is not None:
            self.matches_formed += 1
            log.info(
                "match formed",
                match_id=record.match_id,
                players=[s.player_id for s in record.seats],
                bots=sum(s.bot for s in record.seats),
            )


def new_match_id() -> str:
    """A match id, which is also the id of the table the table service creates."""
    return "m" + uuid.uuid4().hex


def ceil_div(a: int, b: int) -> int:
    return math.ceil(a / b)
