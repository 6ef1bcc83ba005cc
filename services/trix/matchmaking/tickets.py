"""Reads of the matchmaking records and a ticket's compare-and-set.

Owns `TicketStore`: a ticket, match record or lobby read from the `Store` and decoded; a
ticket changed by read-modify-write with compare-and-set (`cas_ticket`), the owned
partition's view kept current after each write; a new ticket's id (its partition first).
And `NotAllowedNow`, the refusal of a request the current state forbids.
"""

from __future__ import annotations

import dataclasses
import hashlib
import uuid
from collections.abc import Callable

from trix.errors import IllegalMove, Unavailable
from trix.matchmaking.partitions import PartitionView
from trix.matchmaking.ports import Store
from trix.matchmaking.records import Lobby, MatchRecord, Ticket, match_key, ticket_key


class NotAllowedNow(IllegalMove):
    """A request the current state forbids (already seated, table full, already matched)."""


class TicketStore:
    """The records in the store (see the module docstring)."""

    def __init__(self, store: Store, view: PartitionView) -> None:
        self.store = store
        self.view = view

    async def get_ticket(self, ticket_id: str) -> tuple[Ticket, int] | None:
        got = await self.store.get(ticket_key(ticket_id))
        return None if got is None else (Ticket.decode(got[0]), got[1])

    async def get_match(self, match_id: str) -> tuple[MatchRecord, int] | None:
        got = await self.store.get(match_key(match_id))
        return None if got is None else (MatchRecord.decode(got[0]), got[1])

    async def get_lobby(self, key: str) -> tuple[Lobby, int] | None:
        got = await self.store.get(key)
        return None if got is None else (Lobby.decode(got[0]), got[1])

    async def cas_ticket(
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
                got = await self.get_ticket(ticket_id)
            if got is None:
                return None
            ticket, rev = got
            if not change(ticket):
                return ticket, rev
            new_rev = await self.store.update(ticket.key, ticket.encode(), rev)
            if new_rev is not None:
                self.view.note(ticket, new_rev)
                return ticket, new_rev
        raise Unavailable("ticket is changing too fast; retry")

    def new_ticket_id(self, partition: int, player_id: str, request_id: str) -> str:
        if request_id:
            digest = hashlib.sha256(f"{player_id}|{request_id}".encode()).hexdigest()[:30]
        else:
            digest = uuid.uuid4().hex[:30]
        return f"{partition:02d}{digest}"
