"""What a player waiting in a quick-match queue is told (issue 39): the players found so far
and when bots fill in, instead of nothing for the 20 s before a table.

Owns the queue's count as stored (`QueueCount` at `qs.<hash of the queue key>` in the
`match_tickets` bucket, JSON like the other records), `QueueCounts` (the partition owner's
writes of it, a round's chores, never on a match's own path) and `QueueWatch` (one
ticket's updates merged with its queue's, what WatchTicket streams). Costs: a queue that
fills within `STATUS_AFTER_S` writes nothing and its players are sent nothing; a waiting
queue writes at most once per `STATUS_EVERY_S`, and its key is purged once it empties.
Informational only: no decision reads it (matching reads the partition's tickets).
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass

from trix.matchmaking.ports import Store
from trix.matchmaking.records import QUEUE, TERMINAL, Ticket
from trix.runtime.tasks import cancel_and_wait

STATUS_AFTER_S = 0.5
"""A queue's count is written, and a ticket's status first sent, once it waited this long."""
STATUS_EVERY_S = 0.5
"""A queue's count is written at most this often."""
STATUS_PREFIX = "qs"
"""Queue counts are `qs.<hash>`: two tokens, so a partition's `*.<pp>.*` watch never sees them."""


def queue_status_key(queue_key: str) -> str:
    """The key of a queue's count (`Wish.queue_key` hashed: a KV key takes no `|` or `,`)."""
    return f"{STATUS_PREFIX}.{hashlib.sha256(queue_key.encode()).hexdigest()[:24]}"


@dataclass(frozen=True)
class QueueCount:
    """A queue as its partition owner saw it at `at`: `players` searching, the oldest since `oldest`."""

    players: int
    oldest: float
    at: float

    def encode(self) -> bytes:
        return json.dumps({"players": self.players, "oldest": self.oldest, "at": self.at}).encode()

    @classmethod
    def decode(cls, data: bytes) -> QueueCount | None:
        try:
            raw = json.loads(data)
            return cls(int(raw["players"]), float(raw["oldest"]), float(raw["at"]))
        except (ValueError, KeyError, TypeError):
            return None


@dataclass(frozen=True)
class QueueView:
    """What a searching ticket's player is told: `players` found (him included) and when bots
    fill in (`bots_at`, None for a paid table), at server time `now`."""

    ticket_id: str
    players: int
    bots_at: float | None
    now: float

    def same(self, other: QueueView | None) -> bool:
        return other is not None and (self.players, self.bots_at) == (other.players, other.bots_at)


class QueueCounts:
    """The partition owner's writes of its queues' counts (chores of `rounds.Matcher.run`)."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self.written: dict[int, dict[str, tuple[int, float, float, int]]] = {}
        """Per owned partition: queue key -> (players, oldest, written at, revision) last written."""

    def chores(
        self, partition: int, queues: dict[str, list[Ticket]], now: float
    ) -> list[Callable[[], Awaitable[None]]]:
        """The writes a round owes: a changed count of a queue waiting `STATUS_AFTER_S`, and the
        purge of a queue no longer searching."""
        written = self.written.setdefault(partition, {})
        out: list[Callable[[], Awaitable[None]]] = []
        for key, tickets in queues.items():
            oldest = min(t.created_at for t in tickets)
            if now - oldest < STATUS_AFTER_S:
                continue
            was = written.get(key)
            if was is not None and ((was[0], was[1]) == (len(tickets), oldest) or now - was[2] < STATUS_EVERY_S):
                continue
            out.append(self._writer(partition, key, QueueCount(len(tickets), oldest, now)))
        for key in [k for k in written if k not in queues]:
            out.append(self._purger(partition, key))
        return out

    def _writer(self, partition: int, key: str, count: QueueCount) -> Callable[[], Awaitable[None]]:
        async def write() -> None:
            skey = queue_status_key(key)
            have = await self.store.get(skey)
            revision = await (
                self.store.create(skey, count.encode())
                if have is None
                else self.store.update(skey, count.encode(), have[1])
            )
            if revision is not None:  # None: another writer won; the next round writes again
                self.written.setdefault(partition, {})[key] = (count.players, count.oldest, count.at, revision)

        return write

    def _purger(self, partition: int, key: str) -> Callable[[], Awaitable[None]]:
        async def purge() -> None:
            was = self.written.get(partition, {}).get(key)
            if was is not None:
                await self.store.purge(queue_status_key(key), was[3])
                self.written.get(partition, {}).pop(key, None)

        return purge

    def release(self, partition: int) -> None:
        self.written.pop(partition, None)


class QueueWatch:
    """A ticket's updates merged with its queue's (`MatchmakingService.watch` with the queue)."""

    def __init__(self, store: Store, clock: Callable[[], float], bot_fill_after_s: float) -> None:
        self.store = store
        self.clock = clock
        self.bot_fill_after_s = bot_fill_after_s

    def view(self, ticket: Ticket, count: QueueCount | None) -> QueueView:
        """The ticket's view of its queue: a count older than the ticket (a queue emptied and
        left behind by an owner that died) does not count it, so the ticket's player alone."""
        if count is not None and count.at < ticket.created_at:
            count = None
        players = max(1, count.players) if count is not None else 1
        oldest = min(ticket.created_at, count.oldest) if count is not None else ticket.created_at
        bots_at = None if ticket.wish.paid else oldest + self.bot_fill_after_s
        return QueueView(ticket.ticket_id, players, bots_at, self.clock())

    async def merged(
        self, ticket: Ticket, changes: AsyncIterator[Ticket], sleep: Callable[[float], Awaitable[None]] = asyncio.sleep
    ) -> AsyncIterator[Ticket | QueueView]:
        """`changes` (the ticket's, until terminal) and, for a searching quick-match ticket, its
        queue's views from `STATUS_AFTER_S` after it came, each when it changed."""
        out: asyncio.Queue[Ticket | QueueView | BaseException | None] = asyncio.Queue()

        async def tickets() -> None:
            try:
                async for t in changes:
                    await out.put(t)
            except Exception as exc:  # noqa: BLE001 - handed to the reader, which raises it
                await out.put(exc)
            await out.put(None)

        async def queue() -> None:
            await sleep(max(0.0, ticket.created_at + STATUS_AFTER_S - self.clock()))
            last: QueueView | None = None
            async for item in self.store.watch(queue_status_key(ticket.wish.queue_key())):
                view = self.view(ticket, QueueCount.decode(item[0]) if item is not None else None)
                if not view.same(last):
                    last = view
                    await out.put(view)

        tasks = [asyncio.ensure_future(tickets())]
        if ticket.kind == QUEUE and ticket.state not in TERMINAL:
            tasks.append(asyncio.ensure_future(queue()))
        searching = True
        try:
            while True:
                item = await out.get()
                if item is None:
                    return
                if isinstance(item, BaseException):
                    raise item
                if isinstance(item, Ticket):
                    searching = item.state not in TERMINAL
                    yield item
                elif searching:
                    yield item
        finally:
            with contextlib.suppress(Exception):
                await cancel_and_wait(tasks)
