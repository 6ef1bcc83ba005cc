"""The timers service: a deadline for every pending decision (docs/rules.md §9), disconnect
grace, timeouts in a row and leaving (§10) (ADR 0006).

Owns `TimersService`: the pure policy (`document`, `folding`, `schedule`) run against its
ports `DocStore` (compare-and-set documents) and `TableCommands`, documents kept in memory
and written only when their durable part changes. Each command applies exactly once: the
table refuses a stale AutoAct and a repeated Leave or ReclaimSeat; a Leave or ReclaimSeat is
claimed by compare-and-set first; AutoActs are shared by rendezvous hashing over the live
replicas. Must not import grpc or nats.
"""

from __future__ import annotations

import asyncio
import heapq
import uuid
from collections import Counter, deque
from collections.abc import Callable, Sequence
from typing import Any

import structlog

from trix.errors import NotFound
from trix.natsio.subjects import token
from trix.runtime.tasks import cancel_and_wait, start_kept
from trix.timers.clock import SystemClock
from trix.timers.config import TimersConfig
from trix.timers.document import (
    PENDING,
    TableDoc,
    copy_doc,
    durable_key,
    keep_newer_turn,
    player_key,
    quiet,
    table_key,
)
from trix.timers.folding import WATCHED_EVENTS, apply_event, apply_presence, unix_s
from trix.timers.ports import CasConflict, Clock, DocStore, Outcome, TableCommands
from trix.timers.schedule import AUTO, LEAVE, Job, all_jobs, claim, next_due, record, rendezvous
from trix.v1 import events_pb2

log = structlog.get_logger("trix.timers")

RETRY_UNAVAILABLE_S = 0.2
"""Pause before a job the table did not answer is sent again."""

STATS_KEPT = 100_000
"""Lateness and ingest-lag samples kept (the last ones): bounded in a long-running replica."""


class TimersService:
    """The timers's domain logic (see the module docstring)."""

    _sleeping_until = float("-inf")
    """When the runner wakes by itself (-inf while it works): a new due time wakes it early only
    if it comes before (a turn's deadline rarely does: no runner round per action)."""

    def __init__(
        self,
        config: TimersConfig,
        store: DocStore,
        table: TableCommands,
        *,
        clock: Clock | None = None,
        replica_id: str | None = None,
    ) -> None:
        self.config = config
        self.store = store
        self.table = table
        self.clock: Clock = clock or SystemClock()
        self.replica_id = replica_id or f"{config.runtime.instance}-{uuid.uuid4().hex[:8]}"
        self.stats: Counter[str] = Counter()
        self.lateness_s: deque[float] = deque(maxlen=STATS_KEPT)
        """How late each command was sent after its due time (for the bench; the last STATS_KEPT)."""
        self.ingest_lag_s: deque[float] = deque(maxlen=STATS_KEPT)
        """How long after the table started a turn the timers received it (for the bench; the last STATS_KEPT)."""
        self._docs: dict[str, TableDoc] = {}
        self._known: dict[str, tuple[dict[str, Any], int]] = {}
        """Table id -> the newest document and KV revision this replica has seen (its own
        writes and the watch): `_mutate` compare-and-sets against it without reading the
        store first; a conflict (another replica wrote) drops it and reads again."""
        self._due: dict[str, float] = {}
        self._heap: list[tuple[float, str]] = []
        self._members: set[str] = set()
        self._owners: dict[str, str] = {}
        """Table id -> its rendezvous owner among the live replicas (emptied when they change)."""
        self._firing: set[str] = set()
        self._tasks: set[asyncio.Task[None]] = set()
        self._wake = asyncio.Event()
        self._stopping = False
        self._runner: asyncio.Task[None] | None = None

    # -- documents -----------------------------------------------------------------------

    async def _mutate(self, table_id: str, change: Callable[[TableDoc], bool]) -> tuple[bool, TableDoc]:
        """Change a table's document; written (compare-and-set, retried on conflict) only
        when what must survive a restart changed (`durable_part`). Returns (changed, document).

        The document starts from this replica's copy in memory (its own writes, the watch,
        and the turns it folded) with the last known revision: no read before a write. A
        turn changes nothing durable (ADR 0012): deadlines live in memory, fed by
        the public batches every replica takes, rebuilt from the table owners after a
        restart or a reconnect (`entrypoints.TimersNats.catch_up`); AutoAct is idempotent
        per turn at the table, so a turn needs no claim to be applied once. Presence, timeouts
        in a row, leaving and reclaiming (docs/rules.md §10) are written, their claims exclusive."""
        key = table_key(table_id)
        known = self._known.get(table_id)
        memory = self._docs.get(table_id)
        data: dict[str, Any] | None
        while True:
            if known is not None:
                data, revision = known
                known = None
                # This replica's copy is the newest it knows: copied, not rebuilt from JSON.
                doc = TableDoc.from_json(data) if memory is None else copy_doc(memory)
            else:
                data, revision = await self.store.get(key)
                doc = TableDoc(table_id=table_id) if data is None else TableDoc.from_json(data)
            keep_newer_turn(doc, memory)
            before = None if data is None else durable_key(doc)
            if not change(doc):
                return False, doc
            if before is not None and durable_key(doc) == before:
                self.stats["turns_in_memory"] += 1
                self._index(doc)
                return True, doc
            written = doc.to_json()
            # A finished table's document is kept a while, for events that come late (they read
            # that it is finished and change nothing), then removed by the store itself: the
            # bucket does not grow by a document per game forever.
            ttl_s = self.config.finished_doc_ttl_s if doc.finished else 0.0
            try:
                new_revision = await self.store.put(key, written, revision, ttl_s)
            except CasConflict:
                self.stats["cas_conflicts"] += 1
                self._known.pop(table_id, None)
                memory = self._docs.get(table_id)
                continue
            self._remember(table_id, written, new_revision)
            # A turn folded in memory while the write was on its way is newer than this one.
            keep_newer_turn(doc, self._docs.get(table_id))
            self._index(doc)
            return True, doc

    def _remember(self, table_id: str, data: dict[str, Any], revision: int) -> bool:
        """Keep (data, revision) if newer than what is known; True if it was."""
        known = self._known.get(table_id)
        if known is not None and known[1] >= revision:
            return False
        self._known[table_id] = (data, revision)
        return True

    def known_sequence(self, table_id: str) -> int:
        """The latest table sequence this replica's document of a table reflects (0: none): a
        replica catching up reads the table's public events after it."""
        doc = self._docs.get(table_id)
        if doc is None:
            return 0
        seqs = [s.control_seq for s in doc.seats]
        if doc.turn is not None:
            seqs.append(doc.turn.seq)
        return max(seqs)

    def knows(self, table_id: str, revision: int) -> bool:
        """True if this revision of the table's document (or a newer one) is known and indexed."""
        known = self._known.get(table_id)
        return known is not None and revision > 0 and known[1] >= revision

    # -- inputs ------------------------------------------------------------------------------

    async def on_event(self, event: events_pb2.Event) -> None:
        """A public table event (durable consumer)."""
        await self.on_events([event])

    def fold_in_memory(self, events: Sequence[events_pb2.Event]) -> bool:
        """One table's batch of public events folded into its document in memory, when nothing
        of it can need the store: the table's document is known (in memory, with its
        revision), it is `quiet` and the batch's watched events are all TurnStarted. That is
        what `on_events` would do (a turn changes nothing durable, so it writes nothing), on
        the document itself instead of a copy, without a task or an await (the
        steady path, one call per action). False, with nothing changed, when the batch needs
        `on_events`."""
        if not events:
            return True
        table_id = events[0].table_id
        doc = self._docs.get(table_id)  # its id was checked (`token`) when the document was made
        if doc is None or table_id not in self._known or not quiet(doc):
            return False
        turns = []
        for event in events:
            which = event.WhichOneof("body")
            if which == "turn_started":
                if event.table_id != table_id:
                    return False
                turns.append(event)
            elif which in WATCHED_EVENTS:
                return False
        if not turns:
            return True
        now = self.clock.now()
        changed = False
        for event in turns:  # a quiet document stays quiet through a turn: same test for each
            if event.HasField("time"):
                self.ingest_lag_s.append(now - unix_s(event.time))
            changed = apply_event(doc, event, now) or changed
        if changed:
            self.stats["turns_in_memory"] += 1
            self._index(doc)
        return True

    async def on_events(self, events: list[events_pb2.Event]) -> None:
        """Public table events in stream order (one fetched batch of one table's subject):
        every event of a table folded into its document, then ONE compare-and-set write
        per table (not one per event). Redelivered or out-of-order events are
        harmless (`apply_event` guards every field by sequence)."""
        by_table: dict[str, list[events_pb2.Event]] = {}
        for event in events:
            which = event.WhichOneof("body")
            if which not in WATCHED_EVENTS:
                continue
            by_table.setdefault(token(event.table_id, "table id"), []).append(event)
        for table_id, batch in by_table.items():
            now = self.clock.now()
            for event in batch:
                if event.HasField("turn_started") and event.HasField("time"):
                    self.ingest_lag_s.append(now - unix_s(event.time))

            def fold(doc: TableDoc, batch: list[events_pb2.Event] = batch, now: float = now) -> bool:
                changed = [apply_event(doc, event, now) for event in batch]  # all of them, no short cut
                return any(changed)

            await self._mutate(table_id, fold)
            for event in batch:
                if event.HasField("table_created"):
                    for s in event.table_created.seats:
                        if s.player_id and not s.bot:
                            await self._index_player(s.player_id, table_id)
                elif event.HasField("seat_control_changed") and not event.seat_control_changed.bot:
                    # A player took his seat (a competition's, from auto-play: docs/rules.md §10):
                    # his presence reaches this table from now on, as a seated player's does.
                    await self._index_player(event.seat_control_changed.player_id, table_id)

    async def _index_player(self, player_id: str, table_id: str) -> None:
        """p.<player> -> current table, keeping the presence already known."""
        key = player_key(player_id)
        while True:
            data, revision = await self.store.get(key)
            doc = dict(data or {"connected": True, "seq": 0})
            if doc.get("table") == table_id:
                return
            doc["table"] = table_id
            try:
                await self.store.put(key, doc, revision)
            except CasConflict:
                continue
            if not doc["connected"]:  # disconnected before the table was known
                await self._disconnected_early(table_id, player_id, int(doc["seq"]))
            return

    async def _disconnected_early(self, table_id: str, player_id: str, presence_seq: int) -> None:
        now = self.clock.now()
        await self._mutate(table_id, lambda d: apply_presence(d, player_id, False, presence_seq, now))

    async def on_presence(self, event: events_pb2.Event, presence_seq: int) -> None:
        """PlayerConnected / PlayerDisconnected from the gateway; `presence_seq` orders them."""
        if event.HasField("player_connected"):
            player_id, connected = event.player_connected.player_id, True
        elif event.HasField("player_disconnected"):
            player_id, connected = event.player_disconnected.player_id, False
        else:
            return
        key = player_key(player_id)
        now = self.clock.now()
        while True:
            data, revision = await self.store.get(key)
            doc = dict(data or {"seq": 0})
            if presence_seq <= int(doc.get("seq", 0)):
                return
            doc.update(connected=connected, seq=presence_seq, since=now)
            try:
                await self.store.put(key, doc, revision)
            except CasConflict:
                continue
            break
        table_id = doc.get("table")
        if table_id:
            await self._mutate(str(table_id), lambda d: apply_presence(d, player_id, connected, presence_seq, now))

    def on_doc(self, table_id: str, data: dict[str, Any] | None, revision: int = 0) -> None:
        """A document changed in the store (the KV watch): reschedule the table (the turn this
        replica folded stays if it is newer than the written one)."""
        if data is None:
            self._forget(table_id)
            return
        if revision:
            if self.knows(table_id, revision):
                return  # this replica's own write, indexed when it was written
            self._remember(table_id, data, revision)
        doc = TableDoc.from_json(data)
        keep_newer_turn(doc, self._docs.get(table_id))
        self._index(doc)

    def _forget(self, table_id: str) -> None:
        self._docs.pop(table_id, None)
        self._due.pop(table_id, None)
        self._known.pop(table_id, None)
        self._owners.pop(table_id, None)

    def tables_in_memory(self) -> int:
        """Tables this replica holds a document of (the unfinished ones it has heard of)."""
        return len(self._docs)

    def on_members(self, members: set[str]) -> None:
        """The live replicas changed (heartbeats): recompute who fires what."""
        if members == self._members:
            return
        self._members = set(members)
        self._owners.clear()
        for doc in list(self._docs.values()):
            self._index(doc)

    def _index(self, doc: TableDoc) -> None:
        if doc.finished:
            # A finished table has no deadline left (docs/rules.md §9, §10): nothing of it stays
            # in memory, or a long-running replica would hold every table it ever timed. Its
            # stored document says it is finished; an event that comes late for it reads that
            # (`_mutate`) and changes nothing.
            self._forget(doc.table_id)
            return
        self._docs[doc.table_id] = doc
        due = next_due(doc, self.config.claim_timeout_s)
        if due is None:
            self._due.pop(doc.table_id, None)
            return
        if self.rendezvous_owner(doc.table_id) != self.replica_id:
            due += self.config.takeover_s
        if self._due.get(doc.table_id) != due:
            self._due[doc.table_id] = due
            heapq.heappush(self._heap, (due, doc.table_id))
            if due < self._sleeping_until:
                self._wake.set()

    def rendezvous_owner(self, table_id: str) -> str:
        owner = self._owners.get(table_id)
        if owner is None:
            owner = self._owners[table_id] = rendezvous(table_id, self._members | {self.replica_id})
        return owner

    # -- firing -------------------------------------------------------------------------------

    def start(self) -> None:
        if self._runner is None:
            self._stopping = False
            self._runner = asyncio.ensure_future(self._run())

    async def stop(self) -> None:
        self._stopping = True
        self._wake.set()
        if self._runner is not None:
            await cancel_and_wait([self._runner])
            self._runner = None
        await cancel_and_wait(list(self._tasks))

    async def _run(self) -> None:
        """Fire what is due, then sleep until the earliest due time still valid (or until
        `_index` wakes it for an earlier one), `tick_s` at most. Each table has one due time
        (`_due`); the heap keeps every due time pushed, and those a newer one replaced are
        dropped when they reach its top, due or not, so the runner never wakes for a turn
        that was answered (it ticked every 50 ms in `trix up`, and woke for every
        answered turn's old deadline). The `tick_s` bound (1 s) only limits how late a
        deadline fires after the wall clock steps forward (waits run on the monotonic clock)."""
        heap, due_of = self._heap, self._due
        while not self._stopping:
            now = self.clock.now()
            while heap and (heap[0][0] <= now or due_of.get(heap[0][1]) != heap[0][0]):
                due, table_id = heapq.heappop(heap)
                if due_of.get(table_id) != due or table_id in self._firing:
                    continue  # replaced by a newer due time; or firing: `_fire_guarded` pushes it again
                del due_of[table_id]
                self._firing.add(table_id)
                start_kept(self._tasks, self._fire_guarded(table_id))
            self._wake.clear()
            wake_at = min(heap[0][0], now + self.config.tick_s) if heap else now + self.config.tick_s
            self._sleeping_until = wake_at
            sleeper = asyncio.ensure_future(self.clock.sleep_until(wake_at))
            waker = asyncio.ensure_future(self._wake.wait())
            try:
                await asyncio.wait({sleeper, waker}, timeout=self.config.tick_s, return_when=asyncio.FIRST_COMPLETED)
            finally:
                self._sleeping_until = float("-inf")
                sleeper.cancel()
                waker.cancel()

    async def _fire_guarded(self, table_id: str) -> None:
        try:
            await self.fire(table_id)
        except Exception as exc:  # noqa: BLE001 - one table's failure must not stop the scheduler
            log.warning("firing failed, will retry", table_id=table_id, error=repr(exc))
            self.stats["fire_errors"] += 1
            self._due[table_id] = self.clock.now() + self.config.tick_s
            heapq.heappush(self._heap, (self._due[table_id], table_id))
        finally:
            self._firing.discard(table_id)
            due = self._due.get(table_id)
            if due is not None:  # rescheduled while firing: its heap entry was skipped
                heapq.heappush(self._heap, (due, table_id))
            self._wake.set()

    async def fire(self, table_id: str) -> int:
        """Claim and send every due job of a table; returns how many were sent."""
        doc = self._docs.get(table_id)
        if doc is None:
            data, revision = await self.store.get(table_key(table_id))
            if data is None:
                return 0
            self._remember(table_id, data, revision)
            doc = TableDoc.from_json(data)
        now = self.clock.now()
        sent = 0
        for job in all_jobs(doc, self.config.claim_timeout_s):
            if job.due > now:
                continue
            won, doc = await self._mutate(table_id, self._claimer(job, now))
            if not won:
                self.stats["claims_lost"] += 1
                continue
            self.lateness_s.append(self.clock.now() - job.due)
            outcome = await self._send(job)
            sent += 1
            self.stats[f"{job.kind}_{outcome.value}"] += 1
            log.info("timer fired", table_id=table_id, kind=job.kind, seat=job.seat, outcome=outcome.value)
            _, doc = await self._mutate(table_id, self._recorder(job, outcome))
            if outcome is Outcome.UNAVAILABLE:
                await asyncio.sleep(RETRY_UNAVAILABLE_S)  # real time: the owner is changing hands
        keep_newer_turn(doc, self._docs.get(table_id))  # a turn folded in while it slept
        self._index(doc)
        return sent

    def _claimer(self, job: Job, now: float) -> Callable[[TableDoc], bool]:
        return lambda d: claim(d, job, self.replica_id, now, self.config.claim_timeout_s)

    def _recorder(self, job: Job, outcome: Outcome) -> Callable[[TableDoc], bool]:
        return lambda d: record(d, job, outcome, self.clock.now())

    async def _send(self, job: Job) -> Outcome:
        if job.kind == AUTO:
            return await self.table.auto_act(job.table_id, job.seat, job.turn_seq)
        if job.kind == LEAVE:
            return await self.table.leave(job.table_id, job.seat, job.reason, job.action_id)
        return await self.table.reclaim(job.table_id, job.seat, job.action_id)

    # -- reads (gRPC) ------------------------------------------------------------------------------

    async def table_doc(self, table_id: str) -> TableDoc:
        """This replica's view of a table (its turn in memory), else the stored document."""
        doc = self._docs.get(table_id)
        if doc is not None:
            return TableDoc.from_json(doc.to_json())
        data, _ = await self.store.get(table_key(table_id))
        if data is None:
            raise NotFound(f"no timers for table {table_id!r}")
        return TableDoc.from_json(data)

    async def pending_deadlines(self, table_id: str) -> list[tuple[int, int, int, float]]:
        """(seat, decision, turn_seq, deadline) of the seats whose decision is pending, earliest first."""
        doc = await self.table_doc(table_id)
        turn = doc.turn
        if turn is None or doc.finished:
            return []
        out = [
            (int(s), turn.decision, turn.seq, turn.deadline) for s, slot in turn.slots.items() if slot.state == PENDING
        ]
        return sorted(out, key=lambda d: (d[3], d[0]))

    async def presence(self, player_id: str) -> tuple[bool, int, float | None]:
        """(connected, timeouts in a row, leave_at) of a player, as the timers see it (§10)."""
        data, _ = await self.store.get(player_key(player_id))
        if data is None:
            raise NotFound(f"unknown player {player_id!r}")
        connected = bool(data.get("connected", True))
        table_id = data.get("table")
        if not table_id:
            return connected, 0, None
        try:
            doc = await self.table_doc(str(table_id))
        except NotFound:
            return connected, 0, None
        for s in doc.seats:
            if s.player == player_id:
                leave_at = s.away.due if s.away is not None and s.away.state == PENDING else None
                return connected, s.timeouts_in_a_row(), leave_at
        return connected, 0, None
