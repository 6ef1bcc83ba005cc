"""A ticket's way into the queue and out of it unmatched.

Owns `Admission`: `admit` stores a ticket HOLDING (not matchable), takes the player's lock,
holds the stake of a paid ticket (docs/rules.md §13), then makes it SEARCHING; a crash
midway leaves a HOLDING ticket the partition owner expires. `finish_unmatched` ends a
SEARCHING or HOLDING ticket CANCELLED or EXPIRED and releases its stake and lock.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from trix.errors import AlreadyExists, DomainError, NotFound, Unavailable
from trix.matchmaking.locks import PlayerLocks
from trix.matchmaking.ports import NO_WALLET, Store, Wallet
from trix.matchmaking.records import CANCELLED, HOLDING, SEARCHING, Ticket
from trix.matchmaking.tickets import TicketStore


@dataclass(eq=False)
class Admission:
    """Tickets admitted and finished unmatched (see the module docstring)."""

    store: Store
    tickets: TicketStore
    locks: PlayerLocks
    wallet: Wallet
    clock: Callable[[], float]

    async def admit(self, ticket: Ticket, *, rematch_of: str = "") -> Ticket:
        """Store the ticket (HOLDING: not matchable), take the player's lock, hold the stake
        (paid), then make it SEARCHING. A crash midway leaves a HOLDING ticket the partition
        owner expires."""
        if ticket.wish.paid and not self.wallet.configured:
            raise Unavailable(NO_WALLET)  # refused before any write
        existing = await self.tickets.get_ticket(ticket.ticket_id)
        created: tuple[Ticket, int] | None = None
        if existing is None:
            await self.locks.check_not_seated(ticket.player_id, rematch_of)
            ticket.state = HOLDING
            rev = await self.store.create(ticket.key, ticket.encode())
            if rev is not None:
                created = (ticket, rev)
            else:
                existing = await self.tickets.get_ticket(ticket.ticket_id)
                if existing is None:
                    raise Unavailable("ticket vanished while being created; retry")
        if existing is not None:  # an idempotent repeat of the same request
            if existing[0].player_id != ticket.player_id:
                raise AlreadyExists("request id already used")
            if existing[0].state != HOLDING:
                return existing[0]
            ticket = existing[0]  # the first attempt stopped midway (its replica died): resume it
        try:
            await self.locks.take(ticket.player_id, ticket.ticket_id, rematch_of)
            if ticket.wish.paid:
                await self.wallet.hold(ticket.player_id, ticket.ticket_id, ticket.wish.stake)
        except DomainError as err:
            if isinstance(err, Unavailable):
                # Not a refusal (a bucket or scoring electing a leader; the stake may
                # even be held, its answer lost). Nor is a NATS error or the call's cancellation
                # (not caught here). The ticket stays HOLDING: a retry with the same request id
                # resumes it above, and one never retried expires with its stake released
                # (`_expire_holding`), as after a crash midway.
                raise
            await self.finish_unmatched(ticket.ticket_id, CANCELLED, release=False)
            raise

        def searching(t: Ticket) -> bool:
            if t.state != HOLDING:
                return False
            t.state = SEARCHING
            return True

        done = await self.tickets.cas_ticket(ticket.ticket_id, searching, known=created)
        if done is None or done[0].state != SEARCHING:
            if ticket.wish.paid:  # cancelled while the stake was being held
                await self.wallet.release(ticket.player_id, ticket.ticket_id)
            return done[0] if done is not None else ticket
        return done[0]

    async def finish_unmatched(self, ticket_id: str, final: str, *, release: bool = True) -> Ticket:
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

        got = await self.tickets.cas_ticket(ticket_id, finish)
        if got is None:
            raise NotFound(f"no ticket {ticket_id!r}")
        ticket = got[0]
        if moved:
            if release and ticket.wish.paid:
                await self.wallet.release(ticket.player_id, ticket.ticket_id)
            await self.locks.release(ticket.player_id, ticket.ticket_id)
        elif release and ticket.wish.paid and ticket.state == final:
            # A repeat (the first attempt's release may have failed): release again, idempotent.
            await self.wallet.release(ticket.player_id, ticket.ticket_id)
        return ticket
