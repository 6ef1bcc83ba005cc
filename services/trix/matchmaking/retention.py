"""Retention: a matchmaking partition's finished records are purged, never kept forever.

Owns `Retention`. A finished ticket (and the player's lock naming it) is purged
`retention_s` after it was cancelled or expired; a matched ticket, its match record and a
finished lobby `matched_retention_s` after they finished (rematch reads the match record).
The partition owner does it, purging each key only up to the revision it saw, so a replica
that is behind or a concurrent writer can never remove a newer value. A round takes the due
purges off a heap per partition (`chores`), at most `ROUND_CHORES`.
"""

from __future__ import annotations

import functools
import heapq
from collections.abc import Awaitable, Callable

import structlog

from trix.matchmaking.config import MatchmakingConfig
from trix.matchmaking.ports import Store, Wallet
from trix.matchmaking.records import ABORTED, DONE, MATCHED, MatchRecord, Ticket, match_key, player_key

log = structlog.get_logger("trix.matchmaking")

ROUND_CHORES = 128
"""Chores (expiry, widening, claim recovery, lobby starts, retirement) a round runs at most."""
RETIRE_RETRY_S = 30.0
"""A purge whose stake release failed (the wallet is down) is tried again this much later."""


class Retention:
    """The finished records of the owned partitions, each purged when its retention ends."""

    def __init__(self, config: MatchmakingConfig, store: Store, wallet: Wallet, clock: Callable[[], float]) -> None:
        self.config = config
        self.store = store
        self.wallet = wallet
        self.clock = clock
        # Finished tickets and lobbies of owned partitions waiting for their retention to end:
        # key -> (due time, revision, player id, match id, stake to release); a lobby has none of them.
        self.retiring: dict[int, dict[str, tuple[float, int, str, str, bool]]] = {}
        self.heaps: dict[int, list[tuple[float, str]]] = {}
        """Per partition, (due time, key) of every `retiring` entry set (`retire_at`): a round
        takes the due ones off the top instead of scanning every record kept for its retention
        (hours for a matched ticket: thousands of records, twenty rounds a second). Entries
        since replaced or retired are dropped when they reach the top."""
        self.retired = 0

    def due(self, ticket: Ticket) -> float:
        if ticket.state == MATCHED:
            return (ticket.matched_at or ticket.created_at) + self.config.matched_retention_s
        return (ticket.finished_at or ticket.created_at) + self.config.retention_s

    def retire_at(self, partition: int, key: str, entry: tuple[float, int, str, str, bool]) -> None:
        """Keep `key` for retirement at `entry[0]` (its first field, the due time)."""
        self.retiring.setdefault(partition, {})[key] = entry
        heapq.heappush(self.heaps.setdefault(partition, []), (entry[0], key))

    def chores(self, partition: int, now: float) -> list[Callable[[], Awaitable[None]]]:
        """The round's purges: up to ROUND_CHORES keys due by `now`, earliest first. A key
        taken stays on the heap (pushed back) until its purge removes it from `retiring`, so a
        purge that failed is tried again next round, as one not yet due is left alone."""
        retiring = self.retiring.get(partition, {})
        heap = self.heaps.get(partition, [])
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
        return [functools.partial(self.retire, partition, key) for key in due]

    async def retire(self, partition: int, key: str) -> None:
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
                    self.retire_at(partition, key, (self.clock() + RETIRE_RETRY_S, *entry[1:]))
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

    def release(self, partition: int) -> None:
        """Forget a partition given up (its next owner schedules its records again)."""
        self.retiring.pop(partition, None)
        self.heaps.pop(partition, None)
