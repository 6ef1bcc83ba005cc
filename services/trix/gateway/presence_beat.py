"""The gateway's presence beat (`trix.natsio.online`): every TRIX_PRESENCE_BEAT_S, the players
this replica holds online (an interactive Session, a SocialEvents stream: those it published
PlayerConnected for) in one core NATS message, so that its death shows: the social service
marks offline, after a few missed periods, a player no gateway names.

Owns `PresenceBeat` (`Stoppable`: the beat's task, then the gateway's other running part).
"""

from __future__ import annotations

import asyncio

from trix.gateway.service import GatewayService
from trix.natsio import online
from trix.natsio.connection import NatsConnection
from trix.runtime.server import Stoppable
from trix.runtime.tasks import cancel_and_wait


def online_players(service: GatewayService) -> set[str]:
    """The players with a session that counts for presence on this replica: those whose
    PlayerConnected went and whose PlayerDisconnected did not (`GatewayService.present`)."""
    return set(service.present)


class PresenceBeat:
    def __init__(self, nats: NatsConnection, service: GatewayService, period_s: float, then: Stoppable) -> None:
        self.task = asyncio.ensure_future(online.beat(nats.client, lambda: online_players(service), period_s))
        self.then = then

    async def stop(self) -> None:
        await cancel_and_wait([self.task], 3.0)
        await self.then.stop()
