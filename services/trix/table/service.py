"""The table service's logic: the live tables this replica owns.

Owns `TableService`: checks each command (caller, seat, idempotency key, the client's
last-seen sequence, the rules through the engine), tries it on a copy of the table, appends
the log entry through `TableStore` (deduplicated by the action id, fenced by the log's
expected last sequence), only then swaps the new state in, publishes the events through
`EventSink` and answers with the new table sequence. The log entry is an action's one stored
message (ADR 0012): the owner serves a reader's gap (`read_events`) from its recent events
or by replaying the log. Recovery rebuilds a table from its snapshot plus the log tail.
Must not import grpc or nats: the adapters translate (`grpc_api`, `codec`, `adapters`,
`entrypoints`); it raises `trix.errors` domain errors.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
import time
from collections import deque
from collections.abc import Callable
from contextvars import ContextVar
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import structlog

from trix import engine, fairness
from trix.errors import (
    IllegalMove,
    InvalidArgument,
    NotFound,
    PermissionDenied,
    StaleTurn,
    Unavailable,
)
from trix.natsio.subjects import token
from trix.runtime.identity import (
    SCOPE_CREATE,
    SCOPE_HANDS,
    SCOPE_PUBLIC,
    SCOPE_SEAT,
    Caller,
    VerifiedTokens,
    verify_invitation,
)
from trix.table import expiry
from trix.table.config import TableConfig
from trix.table.ports import EventSink, LogConflict, StaleWriter, TableStore
from trix.table.table import ALL, PUBLIC_ONLY, Clock, Routed, Table
from trix.table.unpublished import Unpublished
from trix.table.validation import check_create, check_reclaim, hand_over_entry, not_your_turn
from trix.table.views import build_view
from trix.v1 import events_pb2, table_pb2

log = structlog.get_logger("trix.table")

RECENT_EVENTS = 512
"""Event copies of each table kept in its owner's memory for readers' gaps and resumes (a deal
is about 200 copies); older ones are rebuilt from the log (`read_events`)."""
RELOAD_EVERY_S = 1.0
"""A table is reloaded from its log on a caller's word (its last seen sequence ahead) at most this often."""
READ_LIMIT = 512
"""Events in one `read_events` answer at most (the reader asks again for the rest)."""


ANNOUNCED: ContextVar[list[str] | None] = ContextVar("trix_table_announced", default=None)
"""Set by a command's handler (`trix.table.codec.handle_command`) to a list of its own: the
action ids this command freshly accepted and announced in a feed batch's `cause` (a
gateway that follows the table ends its request on that cause, and the table sends it no
reply). A repeated action id, an error, or an entry whose feed batch did not go out adds
nothing, so those are always answered. Task-local, so concurrent commands never mix."""


@dataclass(frozen=True)
class ActionHeader:
    """The fields common to every seat action."""

    table_id: str
    seat: int
    action_id: str
    last_seen_sequence: int


def utc_now() -> datetime:
    return datetime.now(UTC)


class TableService:
    """The table's domain logic (see the module docstring)."""

    def __init__(
        self,
        config: TableConfig,
        store: TableStore,
        sink: EventSink,
        *,
        may_write: Callable[[str], bool],
        on_stale_writer: Callable[[str], None] = lambda table_id: None,
        clock: Clock = utc_now,
        new_seed: Callable[[], bytes] = fairness.new_server_seed,
    ) -> None:
        self.config = config
        self.store = store
        self.sink = sink
        self.may_write = may_write
        """Whether this replica serves the table's shard under a valid lease (the shard router);
        checked right before every append."""
        self.clock = clock
        self.new_seed = new_seed
        self.tables: dict[str, Table] = {}
        self._locks: dict[str, asyncio.Lock] = {}
        self.recent: dict[str, deque[tuple[int, int, bytes]]] = {}
        """Each table's latest event copies, in order (`read_events`), as (sequence, audience,
        the event's bytes): tuples of numbers and bytes are not tracked by Python's cyclic
        collector, so 1,000 tables' 512 copies are not half a million objects that every full
        collection scans (a 0.38 s pause of the table in a 1,000-table run)."""
        self.tokens = VerifiedTokens(config.keys)
        """The callers' tokens, each verified once until it expires (`trix.table.codec`)."""
        self.announced_only = 0
        """Seat actions answered by their feed batch's `cause` alone, with no reply."""
        self.recover_concurrency = 16
        self._reloaded: dict[str, float] = {}
        self.on_stale_writer = on_stale_writer
        """Told the table whose append was fenced off (the shard router drops its shard)."""
        self.unpublished = Unpublished(self.ensure_loaded, may_write)
        """Tables rebuilt before they serve again: their log may hold results not stored."""

    def _may_reload(self, table_id: str) -> bool:
        """At most one reload of a table per `RELOAD_EVERY_S` on a caller's word (a client
        claiming a sequence ahead of the table cannot make the owner replay its log at will)."""
        now = time.monotonic()
        if now - self._reloaded.get(table_id, -RELOAD_EVERY_S) < RELOAD_EVERY_S:
            return False
        self._reloaded[table_id] = now
        return True

    def _lock(self, table_id: str) -> asyncio.Lock:
        return self._locks.setdefault(table_id, asyncio.Lock())

    def _table(self, table_id: str) -> Table:
        table = self.tables.get(table_id)
        if table is None:
            raise NotFound(f"unknown table {table_id!r}")
        return table

    async def ensure_loaded(self, table_id: str) -> None:
        """A table of an owned shard missing from memory (created by a previous owner after this
        replica listed the shard's tables) is rebuilt from its log before it is used."""
        if table_id in self.tables:
            return
        if not self.may_write(table_id):
            # Not (or no longer) this replica's: a command that raced a shard's move (or a
            # fenced append, which forgets the table) is retried, never told NOT_FOUND.
            raise Unavailable("this replica does not own the table; retry with the same action id")
        async with self._lock(table_id):
            if table_id not in self.tables:
                await self._recover_one(table_id)

    # -- commit: log first, then state, then events -------------------------------------------

    async def _commit(
        self,
        table: Table,
        trial: Table,
        entry: dict[str, Any],
        routed: list[Routed],
        cause: events_pb2.ActionCause | None = None,
    ) -> int:
        data = json.dumps(entry, separators=(",", ":")).encode()
        msg_id = f"{table.table_id}.{entry['id']}"
        if not self.may_write(table.table_id):
            # Lease lost or lapsed: UNAVAILABLE, so the caller retries with the same action id.
            raise Unavailable("this replica no longer owns the table; retry with the same action id")
        try:
            trial.log_seq = await self.store.append(table.table_id, data, msg_id, table.log_seq)
        except StaleWriter as err:
            # A newer owner appended (this replica missed that its lease was taken): never
            # append after it; the table and its shard go, the caller retries with the same
            # action id and reaches the owner.
            log.warning("stale writer fenced off the table's log", table_id=table.table_id, error=str(err))
            self.forget(lambda t: t == table.table_id)
            self.on_stale_writer(table.table_id)
            raise Unavailable("this replica no longer owns the table; retry with the same action id") from None
        except LogConflict:
            # Another writer appended (a stale copy, or the same action id stored already):
            # rebuild from the log; a repeated action id answers its first result.
            log.warning("table log conflict, reloading", table_id=table.table_id)
            await self._reload(table.table_id, table)  # the entries after its own, not the whole log
            reloaded = self.tables.get(table.table_id)
            if reloaded is not None and entry["id"] in reloaded.results:
                return reloaded.results[entry["id"]]
            raise Unavailable("the table moved on; retry") from None
        self.tables[table.table_id] = trial
        self._remember(table.table_id, routed)
        try:
            if trial.finished:
                # Before GameEnded goes out: its players may queue again the moment they read it.
                await self._free_players(trial)
            announced = await self.sink.publish(table.table_id, routed, cause)
        except BaseException as exc:
            # In the log, its results perhaps not stored (issue 42): not served from memory
            # again before a rebuild from `table` stored them (`Unpublished`); the retry finds it.
            self.tables.pop(table.table_id, None)
            self.unpublished.keep(table.table_id, table, exc)
            if isinstance(exc, Exception):
                raise Unavailable("the table is storing its results; retry with the same action id") from None
            raise
        if announced and cause is not None and (fresh := ANNOUNCED.get()) is not None:
            fresh.append(cause.action_id)
        if trial.finished or trial.entries % self.config.snapshot_every == 0:  # the final one, or periodic
            await self.store.put_snapshot(trial.table_id, trial.to_snapshot())
        return trial.sequence

    def _remember(self, table_id: str, routed: list[Routed]) -> None:
        recent = self.recent.get(table_id)
        if recent is None:
            recent = self.recent[table_id] = deque(maxlen=RECENT_EVENTS)
        recent.extend((r.event.sequence, r.audience, r.event.SerializeToString()) for r in routed)

    def _recent_after(self, table_id: str, after: int) -> list[Routed]:
        """The kept copies of `table_id` above sequence `after`, as events again."""
        return [
            Routed(events_pb2.Event.FromString(data), audience)
            for sequence, audience, data in self.recent.get(table_id, ())
            if sequence > after
        ]

    async def _finish(self, table: Table) -> None:
        """Game over: final snapshot, players' current-table index marked ended."""
        await self.store.put_snapshot(table.table_id, table.to_snapshot())
        await self._free_players(table)

    async def _free_players(self, table: Table) -> None:
        """The players' current-table index says their game here is over: matchmaking seats them
        again at once, without waiting out its seat grace ("play again")."""
        for seat in table.seats:
            if seat.player_id and not seat.bot:
                await self.store.end_player_table(seat.player_id, table.table_id)

    # -- create -------------------------------------------------------------------------------

    async def create_table(
        self, caller: Caller, request: table_pb2.CreateTableRequest
    ) -> table_pb2.CreateTableResponse:
        if not caller.may(SCOPE_CREATE):
            raise PermissionDenied("only the platform creates tables")
        table_id = token(request.table_id, "table id")
        await self.ensure_loaded(table_id)
        async with self._lock(table_id):
            existing = self.tables.get(table_id)
            if existing is not None:  # idempotent on the table id
                first = existing.results.get("create", existing.sequence)
                return table_pb2.CreateTableResponse(table_id=table_id, commitment=existing.commitment, sequence=first)
            check_create(request)
            # Before the log, so recovery always finds it; the first seed stored is the table's:
            # a create that runs again (its first attempt's entry still in process, or stored
            # and its answer lost) makes the same entry, and the log replays.
            seed = await self.store.keep_secret(table_id, self.new_seed())
            commitment = fairness.commitment(seed)  # §11: only the commitment is published
            entry: dict[str, Any] = {
                "op": "create",
                "id": "create",
                "request": base64.b64encode(request.SerializeToString()).decode(),
                "commitment": commitment,
            }
            table = Table.from_create(entry, seed)
            trial = table.copy()
            routed = trial.apply_entry(entry, self.clock(), live=True)
            sequence = await self._commit(table, trial, entry, routed)
            for seat in request.seats:
                if seat.player_id and not seat.bot:
                    await self.store.set_player_table(seat.player_id, table_id)
            return table_pb2.CreateTableResponse(table_id=table_id, commitment=commitment, sequence=sequence)

    # -- seat actions -------------------------------------------------------------------------

    async def _seat_command(
        self,
        caller: Caller,
        header: ActionHeader,
        build: Callable[[Table], dict[str, Any]],
        *,
        needs_turn: bool = True,
    ) -> int:
        """The shared path of every seat action: check, try, log, publish, answer."""
        table_id = token(header.table_id, "table id")
        if not 0 <= header.seat <= 3:
            raise InvalidArgument(f"seat must be 0..3: {header.seat}")
        action_id = token(header.action_id, "action id")
        await self.ensure_loaded(table_id)
        async with self._lock(table_id):
            table = self._table(table_id)
            if not caller.is_player(table.player(header.seat)):
                raise PermissionDenied("this seat is not yours")
            if action_id in table.results:  # a repeated key returns the first result
                return table.results[action_id]
            if table.finished:
                raise IllegalMove("game is over")
            if header.last_seen_sequence > table.sequence and self._may_reload(table_id):
                # The caller saw more than this replica holds (it rebuilt the table from a log
                # that had not caught up yet): from the log again, then decide.
                await self._reload(table_id)
                table = self._table(table_id)
                if action_id in table.results:
                    return table.results[action_id]
            if header.last_seen_sequence > table.sequence:
                raise InvalidArgument("last_seen_sequence is ahead of the table")
            if needs_turn:
                if header.seat not in table.to_act():
                    raise IllegalMove(not_your_turn(table))
                # 0 = not checked (documented on trix.v1.Action.last_seen_sequence).
                if table.turn is not None and 0 < header.last_seen_sequence < table.turn.seq:
                    raise StaleTurn(f"stale sequence: the turn started at {table.turn.seq}")
            entry = build(table)
            entry["id"] = action_id
            trial = table.copy()
            try:
                routed = trial.apply_entry(entry, self.clock(), live=True)
            except engine.IllegalAction as err:
                raise IllegalMove(err.message) from None  # the engine's reason, state unchanged
            cause = events_pb2.ActionCause(seat=header.seat, action_id=action_id)
            return await self._commit(table, trial, entry, routed, cause)

    async def set_client_seed(self, caller: Caller, header: ActionHeader, seed: str) -> int:
        def build(table: Table) -> dict[str, Any]:
            if table.game is not None or table.seeds[header.seat] is not None:
                raise IllegalMove("seeds are given before the first deal, once (docs/rules.md §11)")
            try:
                fairness.validate_client_seed(seed)
            except fairness.FairnessError as err:
                raise InvalidArgument(str(err)) from None
            return {"op": "seed", "seat": header.seat, "seed": seed}

        return await self._seat_command(caller, header, build)

    async def act(self, caller: Caller, header: ActionHeader, action: int) -> int:
        """Choose a contract, answer doubling or play a card: one engine action."""

        def build(table: Table) -> dict[str, Any]:
            if table.game is None:
                raise IllegalMove("the first deal has not been dealt yet")
            return {"op": "act", "acts": [[header.seat, action, 0]]}

        return await self._seat_command(caller, header, build)

    async def leave(self, caller: Caller, header: ActionHeader, reason: int) -> int:
        await self.ensure_loaded(token(header.table_id, "table id"))
        table = self._table(header.table_id)
        if caller.is_service:  # the timers decide a leave (§10 grace, timeouts): act as the seat
            caller = _as_seat(caller, table, header.seat)

        def build(table: Table) -> dict[str, Any]:
            if header.seat in table.left:
                raise IllegalMove("seat already left")
            # A paid or competition table (`leave_ends_game`) may be left before its first deal too
            # (seeds awaited): docs/rules.md §10 "... from a paid table ends the game at once", and
            # §13 "A paid table that ends before its first deal is dealt ... gives every stake back".
            return {"op": "leave", "seat": header.seat, "reason": int(reason) or 1}

        return await self._seat_command(caller, header, build, needs_turn=False)

    async def reclaim(self, caller: Caller, header: ActionHeader) -> int:
        await self.ensure_loaded(token(header.table_id, "table id"))
        table = self._table(header.table_id)
        if caller.is_service:  # the timers reclaim for a player who reconnected (§10): act as the seat
            caller = _as_seat(caller, table, header.seat)

        def build(table: Table) -> dict[str, Any]:
            check_reclaim(table, header.seat)  # §10
            return {"op": "reclaim", "seat": header.seat, "keep_turn": 1}

        return await self._seat_command(caller, header, build, needs_turn=False)

    async def hand_over(self, caller: Caller, header: ActionHeader) -> int:
        """His competition seat to the bot, by him (docs/rules.md §10), until he takes it back (ReclaimSeat)."""
        return await self._seat_command(caller, header, lambda t: hand_over_entry(t, header.seat), needs_turn=False)

    async def auto_act(self, caller: Caller, table_id: str, seat: int, turn_seq: int) -> int:
        """AutoAct{table, seat, turn_seq} from the timers (docs/rules.md §9): the engine's bot move."""
        if not caller.may(SCOPE_SEAT):
            raise PermissionDenied("only the timers act for a seat")
        table_id = token(table_id, "table id")
        await self.ensure_loaded(table_id)
        async with self._lock(table_id):
            table = self._table(table_id)
            if turn_seq > table.sequence and not table.finished:
                # The timers heard of a turn this replica does not hold: its table is behind the
                # log (an owner cut off appended one more entry after this replica had
                # rebuilt the table, and published it once the cut healed). From the log again,
                # then decide; never refused for good on stale state (the turn would wait for ever).
                if not self._may_reload(table_id):
                    raise Unavailable("the table is behind its log; retry")
                await self._reload(table_id)
                table = self._table(table_id)
                if turn_seq > table.sequence:
                    raise Unavailable("the table is behind its log; retry")
            turn = table.turn
            if table.finished or turn is None or turn.seq != turn_seq or seat not in table.to_act():
                raise StaleTurn("that turn is no longer current")
            entry: dict[str, Any] = {"id": f"auto-{turn_seq}-{seat}"}
            if table.game is None:
                entry["op"] = "autoseed"  # §11: seats that gave no seed contribute ""
            else:
                entry.update(op="act", acts=[[seat, table.game.bot_action(seat), 1]])
            trial = table.copy()
            routed = trial.apply_entry(entry, self.clock(), live=True)
            return await self._commit(table, trial, entry, routed)

    # -- reads --------------------------------------------------------------------------------

    def authorize_view(self, caller: Caller, table_id: str, seat: int, invitation: str = "") -> Table:
        table = self._table(token(table_id, "table id"))
        if caller.is_service:  # hands are the table's and the operators' only
            if caller.may(SCOPE_HANDS) or (seat == -1 and caller.may(SCOPE_PUBLIC)):
                return table
            raise PermissionDenied(f"service {caller.name} may not read {'a seat' if seat != -1 else 'this table'}")
        if seat == -1:
            players = [table.player(s) for s in range(4)]
            if table.request.private_table and not any(caller.is_player(p) for p in players):
                # ADR 0018: a private table is watched by its players, or with an invitation
                # one of them asked the gateway for (bound to this table, expiring).
                if not invitation:
                    raise PermissionDenied(
                        "a private table is watched by its players only, or with an invitation from one of them"
                    )
                inviter = verify_invitation(self.config.keys.player, invitation, table_id, self.clock().timestamp())
                if inviter not in players:
                    raise PermissionDenied("the invitation's player holds no seat at this table")
            return table
        if not 0 <= seat <= 3:
            raise InvalidArgument(f"seat must be -1..3: {seat}")
        if not caller.is_player(table.player(seat)):
            raise PermissionDenied("this seat is not yours")
        return table

    def seat_view(self, caller: Caller, table_id: str, seat: int, invitation: str = "") -> table_pb2.SeatView:
        """What `seat` (or -1, spectators) may see now (docs/rules.md §14)."""
        table = self.authorize_view(caller, table_id, seat, invitation)
        view = build_view(table, None if seat == -1 else seat)
        view.server_time.FromDatetime(self.clock())  # the countdown's reference (turn.deadline)
        return view

    async def read_events(
        self, caller: Caller, table_id: str, seat: int, after: int, limit: int = 0, invitation: str = ""
    ) -> tuple[list[events_pb2.Event], int]:
        """What `seat` (-1: the public) may see after sequence `after`, oldest first, and the
        table's sequence (docs/rules.md §14: a seat's own copy where it has one, else the public
        copy; never another seat's). From memory when it reaches back that far, else
        replayed from the log (bit-exact, the entries keep their time); a finished table whose
        log was archived answers what memory holds, and the reader takes a fresh view."""
        table_id = token(table_id, "table id")
        await self.ensure_loaded(table_id)
        table = self.authorize_view(caller, table_id, seat, invitation)
        limit = min(limit or READ_LIMIT, READ_LIMIT)
        if after >= table.sequence:
            return [], table.sequence
        recent = self.recent.get(table_id)
        copies = self._recent_after(table_id, after)
        if not recent or recent[0][0] > after + 1:
            full = await self._rebuild(table_id, table.server_seed, use_snapshot=False)
            if full is not None and full[1]:
                copies = full[1]
        own: dict[int, events_pb2.Event] = {}
        if seat >= 0:
            own = {r.event.sequence: r.event for r in copies if r.audience == seat}
        out: list[events_pb2.Event] = []
        for r in copies:
            if r.audience not in (ALL, PUBLIC_ONLY) or r.event.sequence <= after:
                continue
            out.append(own.get(r.event.sequence, r.event))
            if len(out) >= limit:
                break
        return out, table.sequence

    # -- expiry of finished tables ---------------------------------------------------

    async def archive(self, table_id: str, game_ended_sequence: int) -> bool:
        """RecordArchived: scoring stored this finished game's record (`trix.table.expiry`)."""
        return await expiry.archive(self, table_id, game_ended_sequence)

    # -- recovery ----------------------------------------------------------------------------------

    async def recover(self, owned: Callable[[str], bool] | None = None) -> int:
        """Rebuild every table in the log (those `owned` selects) not in memory, republish missing events."""
        table_ids = [t for t in await self.store.log_tables() if owned is None or owned(t)]
        gate = asyncio.Semaphore(self.recover_concurrency)

        async def one(table_id: str) -> None:
            async with gate, self._lock(table_id):
                if table_id not in self.tables:  # else rebuilt meanwhile by its first command
                    with contextlib.suppress(Exception):  # retried (`unpublished`), or on its first command
                        await self._recover_one(table_id)

        await asyncio.gather(*(one(t) for t in table_ids))
        return len(table_ids)

    async def republish_last(self) -> int:
        """Publish each live table's last entry's events again (after a NATS reconnect: core
        NATS is at most once, and a batch sent into a connection that was dying is lost for
        every reader, the timers included, so a turn could wait for ever with nobody knowing
        it started). Readers drop the copies they have by sequence. Returns the tables. The
        tables go at once, each under its own lock (one waiting out a NATS election for an
        append does not hold the others back)."""

        async def one(table_id: str) -> bool:
            async with self._lock(table_id):
                table = self.tables.get(table_id)
                if table is None or table.finished:
                    return False
                last = self._recent_after(table_id, table.last_entry_from)
                if last:
                    await self.sink.publish(table_id, last, results=False)  # stored by its commit
                return bool(last)

        live = [t for t, table in list(self.tables.items()) if not table.finished]
        return sum(await asyncio.gather(*(one(t) for t in live)))

    def forget(self, dropped: Callable[[str], bool]) -> int:
        """Drop the in-memory tables `dropped` selects (their shard moved to another replica)."""
        gone = [t for t in self.tables if dropped(t)]
        for table_id in [*gone, *(t for t in self.unpublished.bases if dropped(t))]:
            self.unpublished.done(table_id)  # the next owner's rebuild publishes what is missing
            self.tables.pop(table_id, None)
            self.recent.pop(table_id, None)
            self._reloaded.pop(table_id, None)
            lock = self._locks.get(table_id)
            if lock is not None and not lock.locked():
                self._locks.pop(table_id, None)
        return len(gone)

    async def _reload(self, table_id: str, base: Table | None = None) -> None:
        """The table rebuilt from its log (a conflict, or the caller or the timers saw more than
        this replica holds); only after `base`, a prefix of its log, if given (not from a snapshot)."""
        self.tables.pop(table_id, None)
        await self._recover_one(table_id, base)

    async def _recover_one(self, table_id: str, base: Table | None = None) -> None:
        """The table rebuilt from `base` (else the table `unpublished` kept for it, else its
        snapshot) and its log, into memory only once the results TABLE_RESULTS lacks are stored
        (a crash or a failure may have come between an append and its publishing). The one
        place results are published again (`EventSink.publish_missing_results`); `Unpublished`
        only retries a failed rebuild."""
        if base is None:
            base = self.unpublished.bases.get(table_id)
        try:
            seed = await self.store.get_secret(table_id)
            if seed is None:
                async for _ in self.store.read_log(table_id, 0):
                    log.error("table secret missing, table skipped", table_id=table_id)
                    break
                self.unpublished.done(table_id)
                return  # no log either: a table not created yet
            rebuilt = await self._rebuild(table_id, seed, use_snapshot=True, base=base)
            if rebuilt is not None and rebuilt[1]:
                await self.sink.publish_missing_results(table_id, rebuilt[1])
                if rebuilt[0].finished:  # else the final snapshot was written already
                    await self._finish(rebuilt[0])
        except BaseException as exc:
            self.unpublished.keep(table_id, base, exc)
            raise
        self.unpublished.done(table_id)
        if rebuilt is None:
            return
        table, replayed = rebuilt
        self.tables[table_id] = table
        self.recent.pop(table_id, None)
        self._remember(table_id, replayed)
        if replayed:  # the last entry's events to the live readers again (they drop what they have)
            await self.sink.publish(
                table_id, [r for r in replayed if r.event.sequence > table.last_entry_from], results=False
            )
        log.info("table recovered", table_id=table_id, sequence=table.sequence, replayed=len(replayed))

    async def _rebuild(
        self, table_id: str, seed: bytes, *, use_snapshot: bool, base: Table | None = None
    ) -> tuple[Table, list[Routed]] | None:
        """The table from `base`, or its snapshot (if asked and present), plus the log tail, and the events replayed."""
        snap = await self.store.get_snapshot(table_id) if use_snapshot and base is None else None
        table = base.copy() if base is not None else Table.from_snapshot(snap, seed) if snap is not None else None
        replayed: list[Routed] = []
        now = self.clock()
        async for log_seq, data in self.store.read_log(table_id, table.log_seq if table else 0):
            entry = json.loads(data)
            if table is None:
                table = Table.from_create(entry, seed)
            replayed += table.apply_entry(entry, now, live=False)
            table.log_seq = log_seq
        return None if table is None else (table, replayed)


def _as_seat(caller: Caller, table: Table, seat: int) -> Caller:
    """The player of `seat`, for a service that may act for a seat (the timers)."""
    if not caller.may(SCOPE_SEAT):
        raise PermissionDenied(f"service {caller.name} may not act for a seat")
    return Caller("player", table.player(seat) or "-")
