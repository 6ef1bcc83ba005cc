"""A matching round over one owned partition.

Owns `Matcher`: a round recovers stale claims, expires tickets (and HOLDING ones whose
creator died), marks widened rating windows, starts or closes lobbies whose wait is over,
runs the due retention purges, and matches each queue (`matching.form_groups`, committed
by `claims.Claims`). Its work is bounded (`ROUND_COMMITS` matches, `ROUND_CHORES` chores).
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import structlog

from trix.matchmaking.admission import Admission
from trix.matchmaking.claims import Claims
from trix.matchmaking.config import MatchmakingConfig
from trix.matchmaking.lobbies import Lobbies
from trix.matchmaking.matching import RatingWindow, assign_seats, form_groups
from trix.matchmaking.partitions import PartitionView
from trix.matchmaking.ports import Wallet
from trix.matchmaking.queue_status import QueueCounts
from trix.matchmaking.records import (
    CLAIMED,
    EXPIRED,
    HOLDING,
    OPEN,
    QUEUE,
    REMATCH,
    SEARCHING,
    STARTED,
    TERMINAL,
    Ticket,
)
from trix.matchmaking.retention import ROUND_CHORES, Retention
from trix.matchmaking.tickets import TicketStore

log = structlog.get_logger("trix.matchmaking")

ROUND_COMMITS = 64
"""Matches a partition's round commits at most (each is ~15 sequential store calls)."""
WIDENED_FACTOR = 1.5
"""A ticket is shown WIDENED once its rating window reached this multiple of the base (with
the defaults after 5 s): marking it costs a store write, so not on the first tick."""


@dataclass(eq=False)
class Matcher:
    """The rounds of the owned partitions (see the module docstring)."""

    config: MatchmakingConfig
    window: RatingWindow
    view: PartitionView
    retention: Retention
    tickets: TicketStore
    admission: Admission
    claims: Claims
    lobbies: Lobbies
    wallet: Wallet
    clock: Callable[[], float]
    rng: Any
    counts: QueueCounts
    """The queues' counts a waiting player is shown (issue 39): the round's last chores."""

    async def run(self, partition: int) -> int:
        """One round over an owned partition: recover stale claims, expire, widen, match,
        start lobbies whose wait is over. Returns the number of matches formed.

        A round's work is bounded (`ROUND_COMMITS` matches and `ROUND_CHORES` chores; the
        rest waits for the next tick), so a burst of thousands of tickets never puts
        thousands of store calls in flight at once ahead of the lease renewals."""
        now = self.clock()
        pool = self.view.pools.get(partition, {})
        queues: dict[str, list[tuple[Ticket, int]]] = {}
        chores: list[Callable[[], Awaitable[Any]]] = []
        widen_at = self.window.base * WIDENED_FACTOR
        for ticket, rev in list(pool.values()):
            if ticket.state == CLAIMED:
                if now - ticket.claimed_at > self.config.claim_timeout_s:
                    chores.append(functools.partial(self.claims.recover, ticket))
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
        for key, (lobby, _) in list(self.view.lobbies.get(partition, {}).items()):
            if lobby.state == STARTED or (
                lobby.state == OPEN
                and lobby.kind == REMATCH
                and not lobby.wish.paid
                and lobby.members
                and now - lobby.created_at >= self.config.bot_fill_after_s
            ):
                chores.append(functools.partial(self.lobbies.start, key))
            elif lobby.state == OPEN and now - lobby.created_at > self.config.lobby_ttl_s:
                chores.append(functools.partial(self.lobbies.close, key))
        chores.extend(self.retention.chores(partition, now))
        chores.extend(self.counts.chores(partition, {k: [t for t, _ in e] for k, e in queues.items()}, now))
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
                commits.append(asyncio.ensure_future(self.claims.commit(wish, seats, revisions)))
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

        await self.tickets.cas_ticket(ticket_id, widen)

    async def _expire(self, ticket: Ticket) -> None:
        if ticket.lobby:
            await self.lobbies.leave(ticket)
        await self.admission.finish_unmatched(ticket.ticket_id, EXPIRED)

    async def _expire_holding(self, ticket: Ticket) -> None:
        """A ticket whose creator died between storing it and holding the stake."""
        got = await self.tickets.get_ticket(ticket.ticket_id)
        if got is None or got[0].state != HOLDING:
            return
        if ticket.wish.paid:
            await self.wallet.release(ticket.player_id, ticket.ticket_id)  # idempotent, even if never held
        await self.admission.finish_unmatched(ticket.ticket_id, EXPIRED, release=False)
