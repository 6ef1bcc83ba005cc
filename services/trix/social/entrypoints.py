"""What drives the social service besides its gRPC API (`Feeds`): the gateways' chat lines
over NATS (`trix.social.chat_requests`), and two durable consumers:

- `social-presence` on the gateway's PRESENCE stream: each session's connect and disconnect
  (a friend's online status);
- `social-results` on TABLE_RESULTS (`trix.table.results.*`): each table's stored results,
  TableCreated, SeatControlChanged, DealScored and GameEnded (who sits where, bots, the
  table's `partner_chat`, its privacy, the game's end; `trix.social.tables`). A few messages
  a game, none an action: the move path's core batches are never delivered here (the social
  user may not subscribe to them). Durable, so a restarted process is given what it missed;
  a table it did not see created is read back once (`SocialService.on_table_result`).
  Results are public events (docs/rules.md §14): never a seat's feed, never a hand.

And the gateways' beats (`trix.social.online.GatewaysOnline`): a dead gateway's players go offline.
"""

from __future__ import annotations

import asyncio

import structlog
from nats.aio.msg import Msg
from nats.js.api import AckPolicy, ConsumerConfig, DeliverPolicy

from trix.natsio import names, subjects
from trix.natsio.connection import NatsConnection
from trix.natsio.consumer import MsgHandler, PullConsumer, decode_event
from trix.runtime.tasks import cancel_and_wait
from trix.social.chat_requests import ChatRequests
from trix.social.online import GatewaysOnline
from trix.social.service import SocialService
from trix.v1 import events_pb2

log = structlog.get_logger("trix.social")

FORGET_EVERY_S = 60.0
"""How often the flood limits of writers who went quiet are dropped (`ChatModeration.forget_idle`)."""
ACK_WAIT_S = 30
RESULTS_LINGER_S = 0.25
"""After a fetch of results that did not fill its batch: the next waits this long, so a busy
platform's results come a few fetches a second, not one fetch each (a table's facts lag by
at most this; a chat line on a table not known yet reads it back)."""


def _by_subject(msg: Msg) -> str:
    """One lane per player (presence) or per table (results): each applied in order."""
    return msg.subject


class Feeds:
    def __init__(
        self,
        nats: NatsConnection,
        service: SocialService,
        presence_beat_s: float,
        chat: ChatRequests | None = None,
    ) -> None:
        self.nats = nats
        self.service = service
        self.online = GatewaysOnline(nats, service.graph, presence_beat_s)
        self.chat = chat
        """The gateways' chat lines over NATS (`trix.social.chat_requests`), answered once started."""
        self.presence: PullConsumer | None = None
        self.results: PullConsumer | None = None
        self.tasks: list[asyncio.Task[None]] = []

    async def start(self) -> None:
        self.tasks = [asyncio.ensure_future(self._forget())]
        await self.online.start()
        self.presence = await self._consume(
            names.SOCIAL_PRESENCE_CONSUMER,
            self._on_presence,
            subjects.all_presence(),
            names.PRESENCE_STREAM,
            DeliverPolicy.ALL,  # a first start learns who is online (a day kept)
            linger_s=0.0,
        )
        self.results = await self._consume(
            names.SOCIAL_RESULTS_CONSUMER,
            self._on_result,
            subjects.all_table_results(),
            names.TABLE_RESULTS_STREAM,
            DeliverPolicy.NEW,  # a first start learns a running table at its next result, or its chat
            linger_s=RESULTS_LINGER_S,
        )
        if self.chat is not None:
            await self.chat.start()

    async def _consume(
        self,
        durable: str,
        apply: MsgHandler,
        subject: str,
        stream: str,
        deliver: DeliverPolicy,
        *,
        linger_s: float,
    ) -> PullConsumer:
        consumer = PullConsumer(
            durable, self.nats.client, apply, batch=256, fetch_timeout_s=0.5, linger_s=linger_s, lane=_by_subject
        )
        config = ConsumerConfig(
            durable_name=durable, ack_policy=AckPolicy.EXPLICIT, deliver_policy=deliver, ack_wait=ACK_WAIT_S
        )
        await consumer.start(self.nats.jetstream, subject, stream=stream, config=config)
        return consumer

    async def _on_result(self, msg: Msg) -> None:
        event = await decode_event(msg)  # an undecodable one is terminated, never retried
        if event is not None:
            await self.service.on_table_result(event)

    async def _forget(self) -> None:
        while True:
            await asyncio.sleep(FORGET_EVERY_S)
            self.service.moderation.forget_idle()

    async def _on_presence(self, msg: Msg) -> None:
        event = events_pb2.Event.FromString(msg.data)
        body = event.WhichOneof("body")
        if body == "player_connected":
            await self.service.graph.connected(
                event.player_connected.player_id, event.player_connected.session_id, True
            )
            self.online.named_now((event.player_connected.player_id,))
        elif body == "player_disconnected":
            gone = event.player_disconnected
            self.online.disconnected(gone.player_id, gone.session_id)
            await self.service.graph.connected(gone.player_id, gone.session_id, False)

    async def stop(self) -> None:
        if self.chat is not None:
            await self.chat.stop()
        for consumer in (self.presence, self.results):
            if consumer is not None:
                await consumer.stop()
        self.presence = self.results = None
        await self.online.stop()
        await cancel_and_wait(self.tasks, 3.0)
        self.tasks = []
