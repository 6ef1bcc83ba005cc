"""The social service's wiring: its NATS adapters, the service on them with its friendships
and presence loaded, and its feeds started (presence, the tables' stored results, the
gateways' chat lines).
`__main__.build` runs `start` in the runtime's lifespan; tests pass their own `NewSocial`
(a clock)."""

from __future__ import annotations

from collections.abc import Callable

from trix.natsio.connection import NatsConnection
from trix.social.adapters import (
    CoreOutbox,
    KvPresence,
    KvRelations,
    ResultsTableFacts,
    StreamChatLog,
    StreamCompetitions,
    StreamReports,
)
from trix.social.chat_requests import ChatRequests
from trix.social.config import SocialConfig
from trix.social.entrypoints import Feeds
from trix.social.graph import SocialGraph
from trix.social.service import SocialService
from trix.social.tables import TableBook

Clock = Callable[[], float]


async def start(nats: NatsConnection, config: SocialConfig, clock: Clock) -> Feeds:
    outbox = CoreOutbox(nats)
    graph = SocialGraph(KvRelations(nats), KvPresence(nats), outbox, TableBook(), link_base=config.link_base)
    service = SocialService(
        graph,
        StreamChatLog(nats),
        StreamReports(nats),
        outbox,
        ResultsTableFacts(nats),
        StreamCompetitions(nats),
        clock=clock,
    )
    await service.recover()
    feeds = Feeds(nats, service, config.presence_beat_s, ChatRequests(nats, service, config.keys))
    await feeds.start()
    return feeds
