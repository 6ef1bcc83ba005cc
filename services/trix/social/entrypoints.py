"""What drives the social service besides its gRPC API (`Feeds`):

- the gateway's PRESENCE stream by the durable consumer `social-presence` (each session's
  connect and disconnect: a friend's online status);
- every table's public events on core NATS (`trix.table.evt.*.public`, the copies a
  spectator receives, docs/rules.md §14): who sits where, bots, a deal in progress, the
  table's `partner_chat`, the game's end. Only the few events the chat needs are queued; the
  rest of a batch is dropped where it arrives. Never a seat's feed, never a hand.
"""

from __future__ import annotations

import asyncio
import contextlib

import structlog
from nats.aio.msg import Msg
from nats.aio.subscription import Subscription
from nats.js.api import AckPolicy, ConsumerConfig, DeliverPolicy

from trix.natsio import names, subjects
from trix.natsio.coalesce import subscribe_direct
from trix.natsio.connection import NatsConnection
from trix.natsio.consumer import PullConsumer
from trix.runtime.tasks import cancel_and_wait
from trix.social.service import SocialService
from trix.v1 import events_pb2

log = structlog.get_logger("trix.social")

FORGET_EVERY_S = 60.0
"""How often the flood limits of writers who went quiet are dropped (`ChatModeration.forget_idle`)."""
TABLE_FACTS = frozenset(
    {"table_created", "deal_started", "deal_scored", "game_ended", "seat_left", "seat_control_changed"}
)
"""The public events the chat rules and presence need (`trix.social.tables`)."""


class Feeds:
    def __init__(self, nats: NatsConnection, service: SocialService) -> None:
        self.nats = nats
        self.service = service
        self.presence: PullConsumer | None = None
        self.events_sub: Subscription | None = None
        self.queue: asyncio.Queue[events_pb2.Event] = asyncio.Queue()
        self.tasks: list[asyncio.Task[None]] = []
        self.events_seen = 0

    async def start(self) -> None:
        self.tasks = [asyncio.ensure_future(self._apply_table_events()), asyncio.ensure_future(self._forget())]
        self.events_sub = await subscribe_direct(self.nats.client, subjects.all_public_events(), self._on_batch)
        self.presence = PullConsumer(
            names.SOCIAL_PRESENCE_CONSUMER,
            self.nats.client,
            self._on_presence,
            batch=256,
            fetch_timeout_s=0.5,
            lane=lambda msg: msg.subject,
        )
        config = ConsumerConfig(
            durable_name=names.SOCIAL_PRESENCE_CONSUMER,
            ack_policy=AckPolicy.EXPLICIT,
            deliver_policy=DeliverPolicy.ALL,  # a first start learns who is online (a day kept)
            ack_wait=30,
        )
        await self.presence.start(
            self.nats.jetstream, subjects.all_presence(), stream=names.PRESENCE_STREAM, config=config
        )

    def _on_batch(self, msg: Msg) -> None:
        try:
            batch = events_pb2.TableEventBatch.FromString(msg.data).events
        except Exception:  # noqa: BLE001 - a poison message must not stop the subscription
            log.error("undecodable event batch dropped", subject=msg.subject)
            return
        for event in batch:
            if event.WhichOneof("body") in TABLE_FACTS:
                self.queue.put_nowait(event)

    async def _apply_table_events(self) -> None:
        while True:
            event = await self.queue.get()
            try:
                await self.service.on_table_event(event)
            except Exception as exc:  # noqa: BLE001 - one event's failure must not stop the rest
                log.warning("table event not applied", error=repr(exc), table=event.table_id)
            self.events_seen += 1

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
        elif body == "player_disconnected":
            gone = event.player_disconnected
            await self.service.graph.connected(gone.player_id, gone.session_id, False)

    async def stop(self) -> None:
        if self.events_sub is not None:
            with contextlib.suppress(Exception):
                await self.events_sub.unsubscribe()
            self.events_sub = None
        if self.presence is not None:
            await self.presence.stop()
            self.presence = None
        await cancel_and_wait(self.tasks, 3.0)
        self.tasks = []
