"""The matchmaking service's logic: enqueue, cancel, private tables by code, rematch, the
rounds of a partition (expiry, widening, matching, retention) and the claim protocol that
lets several replicas share the queues.

Owns `MatchmakingService`, the operations the adapters call, composed of one collaborator
per job: `tickets` (reads and a ticket's compare-and-set), `locks` (one live ticket per
player), `admission` (a ticket's way into the queue and out of it unmatched), `claims` (the
commit/abort protocol of a match, ADR 0005), `lobbies` (private tables and rematches),
`partitions` (the owned partitions' tickets and lobbies), `retention` (finished records
purged) and `rounds` (a partition's matching round). Their pure pieces: `wishes` (what a
player asks for, resolved and checked), `records` (what is stored, and its keys),
`matching` (which tickets share a table and where they sit); their collaborators are
`ports`. None imports grpc or nats (adapters `grpc_api`, `adapters`, `entrypoints`,
`wallet` translate) and errors are `trix.errors` domain errors. With a clock and a random
generator injected too, every decision is reproducible in a test.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from typing import Any

import structlog

from trix.errors import InvalidArgument, NotFound, PermissionDenied, Unavailable
from trix.matchmaking.admission import Admission
from trix.matchmaking.claims import Claims
from trix.matchmaking.config import MatchmakingConfig
from trix.matchmaking.lobbies import Lobbies
from trix.matchmaking.locks import PlayerLocks
from trix.matchmaking.matching import RatingWindow
from trix.matchmaking.partitions import PartitionView
from trix.matchmaking.ports import (
    MatchPublisher,
    NoRatings,
    NoSeatIndex,
    NoWallet,
    RatingSource,
    SeatIndex,
    Store,
    Wallet,
)
from trix.matchmaking.queue_status import QueueCounts, QueueView, QueueWatch
from trix.matchmaking.records import (
    CANCELLED,
    CLAIMED,
    EXPIRED,
    MATCHED,
    QUEUE,
    TERMINAL,
    Lobby,
    Ticket,
    partition_of,
    public_state,
    ticket_key,
)
from trix.matchmaking.retention import Retention
from trix.matchmaking.rounds import Matcher
from trix.matchmaking.tickets import NotAllowedNow, TicketStore
from trix.matchmaking.wishes import (
    PARTNERSHIP_VARIANTS,
    Wish,
    check_client_seed,
    check_display_name,
    check_player_id,
)

log = structlog.get_logger("trix.matchmaking")

ADMISSION_LIMIT = 256
"""Enqueues a replica works on at once (the others wait their turn)."""


class MatchmakingService:
    """The matchmaking's domain logic (see the module docstring)."""

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
        self.retention = Retention(config, store, self.wallet, self.clock)
        self.view = PartitionView(config, self.retention)
        self.tickets = TicketStore(store, self.view)
        self.locks = PlayerLocks(config, store, self.tickets, self.seat_index, self.clock)
        self.admission = Admission(store, self.tickets, self.locks, self.wallet, self.clock)
        self.claims = Claims(store, publisher, self.tickets, self.view, self.clock)
        self.lobbies = Lobbies(config, store, self.tickets, self.admission, self.claims, self.clock)
        self.counts = QueueCounts(store)
        self.queue_watch = QueueWatch(store, self.clock, config.bot_fill_after_s)
        self.matcher = Matcher(
            config,
            self.window,
            self.view,
            self.retention,
            self.tickets,
            self.admission,
            self.claims,
            self.lobbies,
            self.wallet,
            self.clock,
            self.rng,
            self.counts,
        )
        # Enqueues in flight at once: more wait here, costing the event loop nothing, so a
        # burst cannot queue thousands of store calls ahead of the lease renewals.
        self._admitting = asyncio.Semaphore(ADMISSION_LIMIT)

    # -- what the replica's counters and the partition owner read ---------------------------

    @property
    def pools(self) -> dict[int, dict[str, tuple[Ticket, int]]]:
        """The owned partitions' live tickets (`PartitionView.pools`)."""
        return self.view.pools

    @property
    def retiring(self) -> dict[int, dict[str, tuple[float, int, str, str, bool]]]:
        """The owned partitions' finished records waiting for their purge (`Retention.retiring`)."""
        return self.retention.retiring

    @property
    def matches_formed(self) -> int:
        return self.claims.matches_formed

    @property
    def claim_conflicts(self) -> int:
        return self.claims.claim_conflicts

    @property
    def retired(self) -> int:
        return self.retention.retired

    # -- tickets ------------------------------------------------------------------------------

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
        ticket_id = self.tickets.new_ticket_id(partition, player_id, request_id)
        async with self._admitting:
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
        return await self.admission.admit(ticket)

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

    async def cancel(self, player_id: str, ticket_id: str) -> Ticket:
        """Cancel a searching ticket; a held stake is released. Matched tickets stay matched."""
        check_player_id(player_id)
        got = await self.tickets.get_ticket(ticket_id)
        if got is None:
            raise NotFound(f"no ticket {ticket_id!r}")
        if got[0].player_id != player_id:
            raise PermissionDenied("the ticket belongs to another player")
        if got[0].lobby and not await self.lobbies.leave(got[0]):
            # The table already started: the ticket ends matched.
            deadline = self.clock() + 2 * self.config.claim_timeout_s
            while self.clock() < deadline:
                now_t = await self.tickets.get_ticket(ticket_id)
                if now_t is not None and now_t[0].state == MATCHED:
                    raise NotAllowedNow(f"ticket already matched to table {now_t[0].table_id}")
                await asyncio.sleep(0.05)
            raise NotAllowedNow("the table has already started")
        deadline = self.clock() + 2 * self.config.claim_timeout_s
        while True:
            ticket = await self.admission.finish_unmatched(ticket_id, CANCELLED)
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

    async def ticket(self, player_id: str, ticket_id: str) -> Ticket:
        got = await self.tickets.get_ticket(ticket_id)
        if got is None:
            raise NotFound(f"no ticket {ticket_id!r}")
        if got[0].player_id != player_id:
            raise PermissionDenied("the ticket belongs to another player")
        return got[0]

    async def watch(self, player_id: str, ticket_id: str, *, queue: bool = False) -> AsyncIterator[Ticket | QueueView]:
        """The ticket now and at each change, until it is matched, cancelled or expired; with
        `queue`, a searching quick-match ticket's queue too (`QueueWatch.merged`, issue 39)."""
        ticket = await self.ticket(player_id, ticket_id)
        changes = self._changes(ticket_id)
        if not queue:
            async for t in changes:
                yield t
            return
        async for item in self.queue_watch.merged(ticket, changes):
            yield item

    async def _changes(self, ticket_id: str) -> AsyncIterator[Ticket]:
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

    # -- private tables and rematch -----------------------------------------------------------

    async def create_private(
        self, host: str, wish: Wish, client_seed: str = "", preset: str = "", display_name: str = ""
    ) -> Ticket:
        """A private table with a fresh invite code; the host's ticket comes back with it."""
        return await self.lobbies.create_private(host, wish, client_seed, preset, display_name)

    async def join_private(self, player_id: str, code: str, client_seed: str = "", display_name: str = "") -> Ticket:
        return await self.lobbies.join_private(player_id, code, client_seed, display_name)

    async def start_private(self, host: str, code: str, partner: int = 0) -> str:
        """Start a private table now; bots take the empty seats (free tables only)."""
        return await self.lobbies.start_private(host, code, partner)

    async def get_private(self, player_id: str, code: str) -> Lobby:
        """Who has joined a private table (`Lobbies.get_private`)."""
        return await self.lobbies.get_private(player_id, code)

    async def rematch(self, player_id: str, table_id: str, display_name: str = "") -> Ticket:
        """Accept a rematch of a finished table (`Lobbies.rematch`)."""
        return await self.lobbies.rematch(player_id, table_id, display_name)

    # -- matching: run by the owner of a partition ------------------------------------------

    def observe(self, partition: int, key: str, value: bytes | None, revision: int) -> None:
        """A change seen by the partition's watcher (`PartitionView.observe`)."""
        self.view.observe(partition, key, value, revision)

    def release_partition(self, partition: int) -> None:
        self.view.release(partition)
        self.counts.release(partition)

    async def run_partition(self, partition: int) -> int:
        """One round over an owned partition (`Matcher.run`); the number of matches formed."""
        return await self.matcher.run(partition)
