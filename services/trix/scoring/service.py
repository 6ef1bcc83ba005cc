"""The scoring service's logic: standings, history and records, ratings and
leaderboards, wallets and paid-table settlement (RULES.md §13).

Must not import grpc or nats: adapters (`grpc_api`, `subscribers`) translate to and
from this module, and it raises `trix.errors` domain errors. At this stage (issue 3)
it holds only its configuration; issue 8 builds the logic here.
"""

from __future__ import annotations

from trix.scoring.config import ScoringConfig


class ScoringService:
    """The scoring's domain logic (issue 8)."""

    def __init__(self, config: ScoringConfig) -> None:
        self.config = config
