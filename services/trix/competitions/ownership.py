"""Which competitions this replica moves on (docs/adr/0026): the table's shard leases
(`trix.natsio.leases`, ADR 0007 and 0021) over the competitions' `COMPETITION_SHARDS` shards.

Owns `CompetitionShards`, the competitions replica's `ShardHost`: a won shard's competitions
are rebuilt from their events before this replica moves them on (a takeover after the owner
died: its lease expired); a shard handed over or lost is left at once; and `owns`, the
service's test of ownership (the shard held and its lease valid). A stale owner that does not
know yet that it lost a shard is refused by the competition's fence (the expected last
sequence of its append). No nats imports.
"""

from __future__ import annotations

import structlog

from trix.competitions.service import CompetitionsService
from trix.natsio.leases import LeaseManager
from trix.natsio.subjects import competition_shard

log = structlog.get_logger("trix.competitions")


class CompetitionShards:
    """`ShardHost` of a competitions replica; `manager` is set once built (it is given this host)."""

    def __init__(self, service: CompetitionsService) -> None:
        self.service = service
        self.manager: LeaseManager | None = None
        self.served: set[int] = set()
        """The shards won and rebuilt, until handed over or lost."""

    def owns(self, competition_id: str) -> bool:
        shard = competition_shard(competition_id)
        return shard in self.served and self.manager is not None and self.manager.valid(shard)

    async def acquired(self, shards: list[int]) -> None:
        won = set(shards)
        async with self.service.lock:
            await self.service.catch_up()
            mine = [cid for cid in self.service.competitions if competition_shard(cid) in won]
            await self.service.rebuild(mine)
            self.served |= won
        log.info("competition shards won", shards=sorted(won), competitions=len(mine))

    async def releasing(self, shard: int) -> None:
        async with self.service.lock:  # the tick in flight finishes first
            self.served.discard(shard)

    async def lost(self, shard: int) -> None:
        self.served.discard(shard)
