"""The table service's inbound NATS side: what comes to a replica.

- `ShardRouter`, the `ShardHost` that subscribes `trix.table.cmd.<shard>.*` when a shard's
  lease is won (before that nobody answers: the caller sees no responders and retries with
  the same action id), says so on `trix.table.served` (callers waiting on those shards send
  again at once), then rebuilds the shard's tables from snapshot + log (a command's own table
  first, on its first command); when the lease is handed over it drains the
  subscription and finishes the commands in flight first; `answer_command` answers one;
- the handlers of the durable pull consumers the replicas share: MatchFormed
  (`MatchCreator`: the create goes to the owner as a command) and RecordArchived
  (`Archiver`: scoring stored a finished game's record, the owner purges the table's log,
  snapshot and seed, ADR 0003);
- `live_tables`, the answer to `trix.table.live` (a timers replica catching up).
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Awaitable, Callable

import nats.errors
import structlog
from nats.aio.msg import Msg
from nats.aio.subscription import Subscription

from trix.errors import InvalidArgument, Unavailable
from trix.natsio import names, served, subjects
from trix.natsio.coalesce import subscribe_direct
from trix.natsio.connection import NatsConnection
from trix.natsio.leases import LeaseManager
from trix.runtime.identity import TOKEN_HEADER
from trix.runtime.tasks import start_kept
from trix.table.codec import INTERNAL_KIND, handle_command
from trix.table.service import TableService
from trix.v1 import events_pb2, table_pb2

log = structlog.get_logger("trix.table.nats")

MATCH_CONSUMER = names.TABLE_MATCH_CONSUMER
"""Durable pull consumer of MatchFormed, shared by the replicas (ADR 0020: it was the
push consumer `table-match-formed-q` of a queue group)."""
ARCHIVE_STREAM = names.SCORING_ARCHIVED_STREAM
ARCHIVE_CONSUMER = names.TABLE_ARCHIVE_CONSUMER
"""Durable pull consumer of RecordArchived, shared by the replicas (it was the push
consumer `table-records-archived-q` of a queue group)."""
CONSUMER_BATCH = 16
"""Messages one replica fetches at once from a shared consumer (the others fetch the rest)."""
CONSUMER_FETCH_S = 0.5
"""A fetch waits this long for messages: also how long a stopping consumer may wait for the
fetch in flight (what it brings is applied and acked, not left to the ack wait)."""
ARCHIVE_RETRY_S = 0.5


def shard_of_subject(subject: str) -> int:
    """`trix.table.cmd.<shard>.<table>` -> shard."""
    return int(subject.split(".")[3])


class ShardRouter:
    """`ShardHost`: serve the commands of the shards this replica holds (see the module docstring).

    It builds the two parts that ask it things, handing each itself: the service (whether
    this replica serves a table's shard, before each append; the lease epoch its store
    writes with each entry) and the lease manager (which shards were won or lost)."""

    def __init__(
        self,
        nats: NatsConnection,
        new_service: Callable[[ShardRouter], TableService],
        new_manager: Callable[[ShardRouter], LeaseManager],
    ) -> None:
        self.nats = nats
        self.subs: dict[int, Subscription] = {}
        self.draining: set[int] = set()
        self.inflight: dict[int, set[asyncio.Task[None]]] = {}
        self.served = 0
        self.service = new_service(self)
        self.manager = new_manager(self)

    def serving(self, shard: int) -> bool:
        """Subscribed (or draining) and the lease still valid: may answer the shard's commands."""
        if shard not in self.subs and shard not in self.draining:
            return False
        return self.manager.valid(shard)

    def owns_table(self, table_id: str) -> bool:
        return self.serving(subjects.table_shard(table_id))

    def stale_writer(self, table_id: str) -> None:
        """The table's append was fenced off (a newer owner wrote its log): the shard is lost."""
        self.manager.fenced(subjects.table_shard(table_id))

    def writer(self, table_id: str) -> str:
        held = self.manager.held.get(subjects.table_shard(table_id))
        return f"{self.manager.me}/{held.epoch if held else 0}"

    async def acquired(self, shards: list[int]) -> None:
        """Serve the won shards at once, say so (`served.announce`), then rebuild their tables.
        A command for a table not rebuilt yet rebuilds it first (`TableService.ensure_loaded`,
        under the table's lock), so nothing waits for the list of the log's tables, a stream
        info that NATS answered only after 3.8 s while a group elected after a node's heal
        (issue 42: the games of a table host cut then waited for it)."""
        t0 = time.perf_counter()
        subscribed: list[int] = []
        for shard in shards:
            if shard in self.subs or shard not in self.manager.held:
                continue
            self.subs[shard] = await subscribe_direct(
                self.nats.client, subjects.table_commands_of_shard(shard), self._on_command
            )
            subscribed.append(shard)
        await served.announce(self.nats.client, subscribed)  # their callers send again now
        wanted = set(shards)
        count = await self.service.recover(lambda t: subjects.table_shard(t) in wanted)
        log.info("shards serving", shards=shards, tables=count, rebuild_s=round(time.perf_counter() - t0, 3))

    async def releasing(self, shard: int) -> None:
        sub = self.subs.pop(shard, None)
        if sub is None:
            return
        self.draining.add(shard)
        try:
            await asyncio.wait_for(sub.drain(), 2.0)  # type: ignore[no-untyped-call]  # no new commands; queued ones are dispatched
        except Exception as exc:  # noqa: BLE001 - the subscription is gone either way
            log.warning("shard drain failed", shard=shard, error=repr(exc))
        tasks = self.inflight.get(shard, set())
        if tasks:
            await asyncio.wait(tasks, timeout=2.0)  # finish the commands in flight
        self.draining.discard(shard)

    async def lost(self, shard: int) -> None:
        self.draining.discard(shard)
        sub = self.subs.pop(shard, None)
        if sub is not None:
            try:
                await sub.unsubscribe()
            except Exception as exc:  # noqa: BLE001 - connection closed: nothing to undo
                log.warning("shard unsubscribe failed", shard=shard, error=repr(exc))
        dropped = self.service.forget(lambda t: subjects.table_shard(t) == shard)
        log.info("shard dropped", shard=shard, tables=dropped)

    def _on_command(self, msg: Msg) -> None:
        """Direct (`subscribe_direct`): each command on a task of its own, at once."""
        shard = shard_of_subject(msg.subject)
        if not self.serving(shard):
            return  # not ours (any more): no answer, the owner's comes, or the caller retries
        start_kept(self.inflight.setdefault(shard, set()), self._answer(msg))

    async def _answer(self, msg: Msg) -> None:
        await answer_command(self.service, msg)
        self.served += 1


async def answer_command(service: TableService, msg: Msg) -> bytes | None:
    """One command message on a table's command subject, answered as its owner answers it
    (`trix.table.codec.handle_command`, quiet for a sender with `ACCEPTED_BY_CAUSE_HEADER`);
    the reply sent to `msg.reply`, or None when the action's feed batch was its answer."""
    headers = msg.headers or {}
    quiet = headers.get(subjects.ACCEPTED_BY_CAUSE_HEADER) == "1"
    reply = await handle_command(service, msg.data, headers.get(TOKEN_HEADER), quiet=quiet)
    if reply is not None and msg.reply:
        try:
            await msg.respond(reply)
        except Exception as exc:  # noqa: BLE001 - the caller retries
            log.warning("reply failed", error=repr(exc))
    return reply


class MatchCreator:
    """MatchFormed -> CreateTable, sent to the table's owner like any command."""

    def __init__(self, nats: NatsConnection, service: TableService, deadline_s: float = 60.0) -> None:
        self.nats = nats
        self.service = service
        self.deadline_s = deadline_s
        self.signer = service.config.keys.signer("table", ttl_s=60)
        """The table's own tokens (its key, its name: SCOPE_CREATE), on the match's word."""

    async def on_match(self, event: events_pb2.Event) -> None:
        if not event.HasField("match_formed"):
            return
        m = event.match_formed
        request = table_pb2.CreateTableRequest(
            table_id=m.match_id,
            variant=m.variant,
            options=m.options,
            seats=m.seats,
            private_table=m.private_table,
            ticket_ids=m.ticket_ids,
            await_client_seeds=m.await_client_seeds,
            leave_ends_game=m.leave_ends_game,
        )
        if m.HasField("stake"):
            request.stake.CopyFrom(m.stake)
        command = table_pb2.TableCommand(create_table=request).SerializeToString()
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.deadline_s
        while True:
            token = self.signer.token()
            try:
                msg = await self.nats.client.request(
                    subjects.table_command(m.match_id), command, timeout=5.0, headers={TOKEN_HEADER: token}
                )
            except (TimeoutError, nats.errors.NoRespondersError, nats.errors.TimeoutError):
                if loop.time() > deadline:
                    raise  # not acknowledged: redelivered later
                await asyncio.sleep(0.2)
                continue
            reply = table_pb2.TableCommandReply.FromString(msg.data)
            if not reply.HasField("error"):
                return
            if reply.error.kind in ("Unavailable", INTERNAL_KIND) and loop.time() < deadline:
                await asyncio.sleep(0.2)
                continue
            log.error("match refused", match_id=m.match_id, error=reply.error.message)  # not retried forever
            return


class Archiver:
    """RecordArchived (scoring stored a finished game's record) -> purge the table.

    A durable pull consumer the replicas share on SCORING_ARCHIVED: the message is acked
    once the table's owner has purged (or refused) it; a replica that does not own the
    table, or any failure, naks it for redelivery (to any replica), so a restart of either
    side loses no signal.
    """

    def __init__(self, service: TableService) -> None:
        self.service = service
        self.purged = 0

    async def on_msg(self, msg: Msg) -> None:
        try:
            body = events_pb2.RecordArchived.FromString(msg.data)
        except Exception:  # noqa: BLE001 - a poison message must not block the consumer
            log.error("undecodable RecordArchived dropped", subject=msg.subject)
            await msg.term()
            return
        try:
            if await self.service.archive(body.table_id, body.game_ended_sequence):
                self.purged += 1
        except Unavailable:
            await msg.nak(delay=ARCHIVE_RETRY_S)  # not the owner (now): redelivered
            return
        except InvalidArgument as err:
            log.error("bad RecordArchived dropped", error=str(err))
            await msg.term()
            return
        except Exception as exc:  # noqa: BLE001 - NATS trouble: try again later
            log.warning("table purge failed, retrying", table_id=body.table_id, error=repr(exc))
            await msg.nak(delay=ARCHIVE_RETRY_S)
            return
        await msg.ack()


def live_tables(service: TableService, router: ShardRouter) -> Callable[[Msg], Awaitable[None]]:
    """The handler of `trix.table.live` (`on_live`) for this replica's service and router."""

    async def on_live(msg: Msg) -> None:
        """`trix.table.live`: this replica's unfinished tables (a timers replica catching up)."""
        live = table_pb2.LiveTablesResponse()
        for table_id, table in list(service.tables.items()):
            if not table.finished and router.owns_table(table_id):
                live.tables.add(table_id=table_id, sequence=table.sequence)
        if msg.reply:
            with contextlib.suppress(Exception):
                await msg.respond(live.SerializeToString())

    return on_live
