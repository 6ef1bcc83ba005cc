"""The timers service's logic: a deadline for every pending decision (RULES.md §9), disconnect grace and leaving (§10).

Must not import grpc or nats: adapters (`grpc_api`, `subscribers`) translate to and
from this module, and it raises `trix.errors` domain errors. At this stage (issue 3)
it holds only its configuration; issue 7 builds the logic here.
"""

from __future__ import annotations

from trix.timers.config import TimersConfig


class TimersService:
    """The timers's domain logic (issue 7)."""

    def __init__(self, config: TimersConfig) -> None:
        self.config = config
