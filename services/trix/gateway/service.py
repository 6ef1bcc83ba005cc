"""The gateway service's logic: players' sessions: authentication, one stream per
connected player, resume, per-seat filtering, rate limits, presence.

Must not import grpc or nats: adapters (`grpc_api`, `subscribers`) translate to and
from this module, and it raises `trix.errors` domain errors. At this stage (issue 3)
it holds only its configuration; issue 9 builds the logic here.
"""

from __future__ import annotations

from trix.gateway.config import GatewayConfig


class GatewayService:
    """The gateway's domain logic (issue 9)."""

    def __init__(self, config: GatewayConfig) -> None:
        self.config = config
