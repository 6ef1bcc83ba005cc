"""The scoring's inbound NATS entrypoint: the consumer of the tables' results.

Owns `EventConsumer`, a durable pull consumer on the tables' results
(`trix.table.results.*` in TABLE_RESULTS) that translates the events scoring needs
(TableCreated, SeatControlChanged, DealScored, GameEnded) from their protos into plain
dicts (`event_to_domain`) and hands them to `ScoringService.apply_table_event`, which
applies each (table, sequence) once; the loop is `natsio.consumer.PullConsumer` (a batch's
last event acked once all of it applied; a failure paused and applied again).

After a GameEnded is in the journal (the game's record stored durably), and before the
event is acked, it publishes RecordArchived (`adapters.ArchiveNotices`): the table service
then purges that table's private log (ADR 0003). A crash in between leaves the event
unacked; its redelivery finds it applied and publishes again (the table service's purge is
idempotent), so the signal is never lost.
"""

from __future__ import annotations

from typing import Any, cast

import structlog
from nats.aio.msg import Msg
from nats.js.api import AckPolicy, ConsumerConfig, DeliverPolicy
from nats.js.errors import NotFoundError

from trix.errors import DomainError
from trix.natsio import names, subjects
from trix.natsio.connection import NatsConnection
from trix.natsio.consumer import PullConsumer, decode_event
from trix.scoring.adapters import ArchiveNotices
from trix.scoring.service import ScoringService
from trix.v1 import common_pb2, events_pb2

log = structlog.get_logger("trix.scoring.nats")

EVENTS_STREAM = names.TABLE_RESULTS_STREAM
FETCH_BATCH = 256
ACK_WAIT_S = 30.0
FETCH_LINGER_S = 0.05
"""After a fetch that did not fill its batch: standings lag play by at most this much more."""


def _variant(value: int) -> str:
    known = value in common_pb2.Variant.values()
    name = common_pb2.Variant.Name(cast(common_pb2.Variant.ValueType, value)) if known else ""
    return name.removeprefix("VARIANT_") if name != "VARIANT_UNSPECIFIED" else ""


def _contract(value: int) -> str:
    known = value in common_pb2.Contract.values()
    name = common_pb2.Contract.Name(cast(common_pb2.Contract.ValueType, value)) if known else ""
    return name.removeprefix("CONTRACT_") if name != "CONTRACT_UNSPECIFIED" else ""


def _four(values: Any) -> list[int]:
    out = [int(v) for v in values][:4]
    return out + [0] * (4 - len(out))


def event_to_domain(event: events_pb2.Event) -> dict[str, Any] | None:
    """The dict `ScoringService` applies for an event, or None for events scoring ignores."""
    body = event.WhichOneof("body")
    if body == "table_created":
        created = event.table_created
        seats = sorted(created.seats, key=lambda s: s.index)
        players = ["", "", "", ""]
        bots = [False, False, False, False]
        names = ["", "", "", ""]
        for seat in seats:
            if 0 <= seat.index <= 3:
                players[seat.index] = seat.player_id
                bots[seat.index] = seat.bot
                names[seat.index] = seat.display_name
        return {
            "type": "table_created",
            "variant": _variant(created.variant),
            "players": players,
            "bots": bots,
            "names": names,
            "stake": int(created.stake.coins) if created.HasField("stake") else 0,
            "rake_percent": int(created.options.rake_percent) if created.options.HasField("rake_percent") else 0,
            "ticket_ids": list(created.ticket_ids),
            "commitment": created.commitment,
            "private_table": created.private_table,
        }
    if body == "seat_control_changed":
        changed = event.seat_control_changed
        return {"type": "seat_control", "seat": changed.seat, "bot": changed.bot, "player_id": changed.player_id}
    if body == "deal_scored":
        scored = event.deal_scored
        return {
            "type": "deal_scored",
            "deal_index": scored.deal_index,
            "contract": _contract(scored.contract),
            "points": _four(scored.points.values),
            "totals": _four(scored.totals.values),
        }
    if body == "game_ended":
        ended = event.game_ended
        return {
            "type": "game_ended",
            "record_json": ended.record_json,
            "totals": _four(ended.totals.values),
            "ranking": [int(p) for p in ended.ranking],
            "left_seat": ended.left_seat,
        }
    return None


def _results_subject(table_id: str) -> str:
    try:
        return subjects.table_results(table_id)
    except DomainError:
        return ""


class EventConsumer:
    """The durable consumer feeding table events to the service (a `PullConsumer`)."""

    def __init__(self, nats_conn: NatsConnection, service: ScoringService, durable: str) -> None:
        self.js = nats_conn.jetstream
        self.nc = nats_conn.client
        self.service = service
        self.durable = durable
        self.archive = ArchiveNotices(self.js)
        self.pull: PullConsumer | None = None

    @property
    def consumed(self) -> int:
        return self.pull.consumed if self.pull is not None else 0

    async def start(self) -> None:
        config = ConsumerConfig(
            durable_name=self.durable,
            deliver_policy=DeliverPolicy.BY_START_SEQUENCE,
            opt_start_seq=await self._start_sequence(),
            ack_policy=AckPolicy.ALL,
            ack_wait=ACK_WAIT_S,
            max_ack_pending=4 * FETCH_BATCH,
        )
        self.pull = PullConsumer(
            "scoring", self.nc, self.handle, batch=FETCH_BATCH, fetch_timeout_s=1.0, linger_s=FETCH_LINGER_S, ack="last"
        )
        await self.pull.start(self.js, subjects.all_table_results(), stream=EVENTS_STREAM, config=config)

    async def stop(self) -> None:
        """Finish (and ack) the batch in hand and unsubscribe, before the connection drains."""
        if self.pull is not None:
            await self.pull.stop()

    async def handle(self, msg: Msg) -> None:
        event = await decode_event(msg)
        if event is None:
            return
        domain = event_to_domain(event)
        if domain is not None and msg.subject != _results_subject(event.table_id):
            # Only the table publishes results, each on its own table's subject (ADR 0014):
            # an event naming another table is not settled from.
            log.error("event on another table's subject dropped", subject=msg.subject, table_id=event.table_id[:128])
            await msg.term()
            return
        if domain is not None and event.table_id and event.sequence:
            time_ms = event.time.seconds * 1000 + event.time.nanos // 1_000_000
            try:
                await self.service.apply_table_event(event.table_id, event.sequence, time_ms, domain)
            except DomainError as err:
                # A malformed event (e.g. a bad id) can never apply: drop it, loudly.
                log.error("event rejected", table_id=event.table_id, sequence=event.sequence, error=str(err))
                await msg.term()
                return
            if domain["type"] == "game_ended" and event.table_id in self.service.state.records:
                await self.archive.record_archived(event.table_id, event.sequence)
        # Not acked here: the batch's last message is acked once every one before it applied
        # (ack "last", AckPolicy.ALL): one ack per fetch instead of one per event.

    async def _start_sequence(self) -> int:
        """Where to resume: just after the consumer's ack floor.

        Events fetched but not acked when the last process died would otherwise come
        back only after the ack wait, behind later events of the same table. Recreating
        the consumer at its ack floor redelivers them first, in stream order; those
        already applied are skipped by (table, sequence). One scoring process consumes
        at a time (the durable is recreated at start).
        """
        try:
            info = await self.js.consumer_info(EVENTS_STREAM, self.durable)
        except NotFoundError:
            return 1
        await self.js.delete_consumer(EVENTS_STREAM, self.durable)
        return int(info.ack_floor.stream_seq) + 1 if info.ack_floor else 1
