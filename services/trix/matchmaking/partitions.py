"""The partitions this matchmaking replica owns, as its matcher sees them.

Owns `PartitionView`: per owned partition its live tickets and lobbies with their
revisions, fed by the partition's KV watch (`observe`) and by this replica's own writes
(`note`), and a wake-up event per running partition. Finished records seen go to
`retention.Retention`.
"""

from __future__ import annotations

import asyncio

from trix.matchmaking.config import MatchmakingConfig
from trix.matchmaking.records import CLOSED, FORMED, MATCHED, TERMINAL, Lobby, Ticket
from trix.matchmaking.retention import Retention


class PartitionView:
    """The owned partitions' tickets and lobbies (see the module docstring)."""

    def __init__(self, config: MatchmakingConfig, retention: Retention) -> None:
        self.config = config
        self.retention = retention
        # The view of owned partitions: ticket id -> (ticket, revision); lobby key -> (lobby, revision).
        self.pools: dict[int, dict[str, tuple[Ticket, int]]] = {}
        self.wakers: dict[int, asyncio.Event] = {}
        """A running partition's wake-up: set when its tickets or lobbies change (`observe`)."""
        self.lobbies: dict[int, dict[str, tuple[Lobby, int]]] = {}

    def note(self, ticket: Ticket, revision: int) -> None:
        """Keep an owned partition's view current after our own write."""
        pool = self.pools.get(ticket.partition)
        if pool is not None:
            have = pool.get(ticket.ticket_id)
            if have is None or have[1] < revision:
                if ticket.state in TERMINAL:
                    pool.pop(ticket.ticket_id, None)
                else:
                    pool[ticket.ticket_id] = (ticket, revision)

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
            retiring = self.retention.retiring.setdefault(partition, {})
            if value is None:
                pool.pop(ticket_id, None)
                retiring.pop(key, None)
                return
            ticket = Ticket.decode(value)
            if ticket.state in TERMINAL:
                pool.pop(ticket_id, None)
                match_id = ticket.match_id if ticket.state == MATCHED else ""
                release = ticket.wish.paid and ticket.state != MATCHED
                self.retention.retire_at(
                    partition, key, (self.retention.due(ticket), revision, ticket.player_id, match_id, release)
                )
            else:
                pool[ticket_id] = (ticket, revision)
                retiring.pop(key, None)
        elif kind == "lb":
            lobbies = self.lobbies.setdefault(partition, {})
            have_l = lobbies.get(key)
            if have_l is not None and have_l[1] >= revision:
                return
            retiring_l = self.retention.retiring.setdefault(partition, {})
            if value is None:
                lobbies.pop(key, None)
                retiring_l.pop(key, None)
                return
            lobby = Lobby.decode(value)
            if lobby.state in (CLOSED, FORMED):
                lobbies.pop(key, None)
                finished = lobby.finished_at or lobby.created_at
                self.retention.retire_at(
                    partition, key, (finished + self.config.matched_retention_s, revision, "", "", False)
                )
            else:
                lobbies[key] = (lobby, revision)

    def release(self, partition: int) -> None:
        """Forget a partition given up."""
        self.pools.pop(partition, None)
        self.lobbies.pop(partition, None)
        self.retention.release(partition)
