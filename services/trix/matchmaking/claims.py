"""The claim protocol: no ticket matched twice, none lost when a replica dies (ADR 0005).

Owns `Claims`: create `mt` PENDING -> compare-and-set each ticket SEARCHING -> CLAIMED(match)
-> CAS `mt` PENDING -> COMMITTED -> publish MatchFormed (message id = match id) -> tickets
MATCHED -> `mt` DONE (`commit`, `complete`). Whoever finds a stale claim CASes `mt` PENDING
-> ABORTED and puts the tickets back (`recover`, `abort`, `revert`); the CAS on `mt` decides
between a slow claimer and a recoverer, so exactly one of "commit" and "abort" happens.
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Awaitable, Callable, Iterable, Sequence

import structlog

from trix.matchmaking.partitions import PartitionView
from trix.matchmaking.ports import MatchPublisher, Store
from trix.matchmaking.records import (
    ABORTED,
    CLAIMED,
    COMMITTED,
    DONE,
    MATCHED,
    PENDING,
    SEARCHING,
    TERMINAL,
    MatchRecord,
    SeatRecord,
    Ticket,
    match_key,
    new_match_id,
)
from trix.matchmaking.tickets import TicketStore
from trix.matchmaking.wishes import Wish

log = structlog.get_logger("trix.matchmaking")


@dataclasses.dataclass(eq=False)
class Claims:
    """Matches committed, completed, aborted and recovered (see the module docstring)."""

    store: Store
    publisher: MatchPublisher
    tickets: TicketStore
    view: PartitionView
    clock: Callable[[], float]
    matches_formed: int = dataclasses.field(default=0, init=False)
    claim_conflicts: int = dataclasses.field(default=0, init=False)

    async def commit(self, wish: Wish, seats: Sequence[Ticket | None], revisions: dict[str, int]) -> bool:
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
                self.view.note(t, rev)
                claimed[t.ticket_id] = (t, rev)
            else:
                failed.append(t)
        if failed:
            self.claim_conflicts += 1
            await self.abort(record, mrev, list(claimed))
            for t in failed:  # refresh the view of a ticket that changed under us
                fresh = await self.tickets.get_ticket(t.ticket_id)
                pool = self.view.pools.get(t.partition)
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
            await self.revert(record.match_id, list(claimed))
            return False
        await self.complete(record, new_mrev, claimed)
        return True

    async def abort(self, record: MatchRecord, mrev: int, claimed: list[str]) -> None:
        record.state = ABORTED
        if await self.store.update(match_key(record.match_id), record.encode(), mrev) is None:
            got = await self.tickets.get_match(record.match_id)
            if got is not None and got[0].state in (COMMITTED, DONE):
                await self.complete(*got)
                return
        await self.revert(record.match_id, claimed)

    async def revert(self, match_id: str, ticket_ids: Iterable[str]) -> None:
        def back(t: Ticket) -> bool:
            if t.state != CLAIMED or t.match_id != match_id:
                return False
            t.state = SEARCHING
            t.match_id = ""
            t.claimed_at = 0.0
            return True

        for ticket_id in ticket_ids:
            await self.tickets.cas_ticket(ticket_id, back)

    async def recover(self, ticket: Ticket) -> None:
        """A claim older than the timeout: finish its match or abort it (the CAS on `mt` decides)."""
        got = await self.tickets.get_match(ticket.match_id)
        if got is None:
            await self.revert(ticket.match_id, [ticket.ticket_id])
            return
        record, mrev = got
        if record.state == PENDING:
            log.info("recovering a stale claim", match_id=record.match_id)
            await self.abort(record, mrev, record.ticket_ids())
        elif record.state == ABORTED:
            await self.revert(record.match_id, record.ticket_ids())
        else:
            await self.complete(record, mrev)

    async def complete(
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

            writes.append(self.tickets.cas_ticket(s.ticket_id, matched, known=known.get(s.ticket_id)))
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
