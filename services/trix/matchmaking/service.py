"""The matchmaking service's logic: tickets, queues per variant/options/stake, private
tables by code, partner pairs, bot fill, rating window.

Must not import grpc or nats: adapters (`grpc_api`, `subscribers`) translate to and
from this module, and it raises `trix.errors` domain errors. At this stage (issue 3)
it holds only its configuration; issue 6 builds the logic here.
"""

from __future__ import annotations

from trix.matchmaking.config import MatchmakingConfig


class MatchmakingService:
    """The matchmaking's domain logic (issue 6)."""

    def __init__(self, config: MatchmakingConfig) -> None:
        self.config = config
