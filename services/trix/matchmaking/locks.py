"""One live ticket per player: the player's lock in the tickets bucket.

Owns `PlayerLocks`: `pl.<player>` names the player's current ticket, taken by
compare-and-set when a ticket is admitted (refused while another ticket of the player is
queued or was matched within `seat_grace_s` to a table whose game the table service's index
does not say is over, or while the table service seats the player) and purged when the ticket
ends unmatched or is retired.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from trix.errors import AlreadyExists, Unavailable
from trix.matchmaking.config import MatchmakingConfig
from trix.matchmaking.ports import SeatIndex, Store
from trix.matchmaking.records import CLAIMED, HOLDING, MATCHED, SEARCHING, player_key
from trix.matchmaking.tickets import NotAllowedNow, TicketStore


@dataclass(eq=False)
class PlayerLocks:
    """The players' locks (see the module docstring)."""

    config: MatchmakingConfig
    store: Store
    tickets: TicketStore
    seat_index: SeatIndex
    clock: Callable[[], float]

    async def check_not_seated(self, player_id: str, rematch_of: str) -> None:
        table = await self.seat_index.current_table(player_id)
        if table and table != rematch_of:
            raise NotAllowedNow(f"player {player_id} is already seated at table {table}")

    async def take(self, player_id: str, ticket_id: str, rematch_of: str) -> None:
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
            held = await self.tickets.get_ticket(held_id)
            if held is not None:
                t = held[0]
                if t.state in (SEARCHING, HOLDING, CLAIMED) and t.ticket_id != ticket_id:
                    raise AlreadyExists(f"player {player_id} is already queued (ticket {t.ticket_id})")
                if (
                    t.state == MATCHED
                    and t.table_id != rematch_of
                    and self.clock() - t.matched_at < self.config.seat_grace_s
                    and not await self.seat_index.has_ended(player_id, t.table_id)
                ):
                    # Matched: seated from then on (the table may not have indexed it yet)
                    # until the table's index says that game is over ("play again").
                    raise NotAllowedNow(f"player {player_id} is already seated at table {t.table_id}")
            if await self.store.update(key, ticket_id.encode(), rev) is not None:
                return
        raise Unavailable("player lock is contended; retry")

    async def release(self, player_id: str, ticket_id: str) -> None:
        key = player_key(player_id)
        got = await self.store.get(key)
        if got is not None and got[0].decode() == ticket_id:
            await self.store.purge(key, got[1])  # no tombstone left behind (nobody watches locks)
