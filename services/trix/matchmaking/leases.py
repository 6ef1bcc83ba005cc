"""Which queue partitions a matchmaking replica matches: one lease per replica
(ADR 0005).

Owns `Membership`. A replica's one lease is its heartbeat `member.<id>` in the `match_leases`
bucket (the bucket's TTL, `MEMBER_TTL_S`), put every `HEARTBEAT_S` with the sender's clock.
Every replica watches the `member.*` keys (one watch: each heartbeat, and the delete of a
replica that leaves) and counts as live the members heard from within the TTL, itself
always; the partitions are dealt over the live members in a fixed order (`share`), so every
replica computes the same split from the same members and nothing is written per
partition.

Correctness never rests on this split (the claim protocol of `trix.matchmaking.claims` is
safe with two replicas matching one partition): while replicas disagree on who is alive (a
heartbeat just lapsed or a replica just arrived), a partition may be matched by two replicas
for a moment or, for at most the TTL, by none.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable

import nats.errors
import structlog
from nats.js.kv import KV_DEL, KV_PURGE, KeyValue

from trix.natsio import names
from trix.runtime.tasks import cancel_and_wait

log = structlog.get_logger("trix.matchmaking.leases")

LEASES_BUCKET = names.MATCH_LEASES_BUCKET
MEMBER_PREFIX = "member"
MEMBER_TTL_S = 3.0
"""The `match_leases` bucket's TTL (trix.natsio.provisioning): a replica not heard from for this
long is counted out."""
HEARTBEAT_S = MEMBER_TTL_S / 3
"""A replica survives two late or failed heartbeats."""
CALL_TIMEOUT_S = 2.0


def share(members: list[str], member: str, partitions: int) -> set[int]:
    """The partitions `member` matches among `members` (sorted, distinct): every n-th one from
    its place, so the split is even and the same wherever it is computed."""
    n, place = len(members), members.index(member)
    return {p for p in range(partitions) if p % n == place}


class Membership:
    """This replica's heartbeat, and the live replicas as the heartbeats tell them."""

    def __init__(
        self,
        kv: KeyValue,
        member: str,
        *,
        heartbeat_s: float = HEARTBEAT_S,
        ttl_s: float = MEMBER_TTL_S,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.kv = kv
        self.member = member
        self.heartbeat_s = heartbeat_s
        self.ttl_s = ttl_s
        self.clock = clock
        self.heard: dict[str, float] = {}
        """Member -> when its last heartbeat was sent (on `clock`, estimated from its own clock)."""
        self.changed = asyncio.Event()
        """Set when a member arrives or leaves (a heartbeat lapsing is noticed by `live`)."""
        self.beats = 0
        """Heartbeats written."""
        self.late = 0
        """Heartbeats that came more than the TTL after the previous one (the others may have
        counted this replica out meanwhile)."""
        self.max_gap_s = 0.0
        """Longest time between two written heartbeats."""
        self._tasks: list[asyncio.Task[None]] = []
        self._watcher: KeyValue.KeyWatcher | None = None

    @property
    def key(self) -> str:
        return f"{MEMBER_PREFIX}.{self.member}"

    def live(self) -> list[str]:
        """The members heard from within the TTL, and this one, sorted."""
        cutoff = self.clock() - self.ttl_s
        return sorted({m for m, at in self.heard.items() if at >= cutoff} | {self.member})

    def partitions(self, count: int) -> set[int]:
        """The partitions of `count` this replica matches now."""
        return share(self.live(), self.member, count)

    async def start(self) -> None:
        await self._beat()
        self._watcher = await self.kv.watch(f"{MEMBER_PREFIX}.*")
        self._tasks = [asyncio.create_task(self._heartbeats()), asyncio.create_task(self._watch())]

    async def stop(self) -> None:
        """Stop, and delete the heartbeat: the others take this replica's share at once."""
        await cancel_and_wait(self._tasks)
        if self._watcher is not None:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self._watcher.stop(), CALL_TIMEOUT_S)  # type: ignore[no-untyped-call]
        with contextlib.suppress(Exception):
            await asyncio.wait_for(self.kv.delete(self.key), CALL_TIMEOUT_S)

    async def _beat(self) -> None:
        await asyncio.wait_for(self.kv.put(self.key, repr(time.time()).encode()), CALL_TIMEOUT_S)
        self.beats += 1

    async def _heartbeats(self) -> None:
        loop = asyncio.get_running_loop()
        last = loop.time()
        while True:
            started = loop.time()
            await asyncio.sleep(max(0.05, self.heartbeat_s - (started - last)))
            try:
                await self._beat()
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # noqa: BLE001 - NATS hiccups: the next beat retries
                log.warning("heartbeat failed", error=repr(exc))
                continue
            now = loop.time()
            gap = now - last
            self.max_gap_s = max(self.max_gap_s, gap)
            if gap > self.ttl_s:
                self.late += 1
                log.warning("heartbeat late", gap_s=round(gap, 2))
            last = now

    async def _watch(self) -> None:
        assert self._watcher is not None
        while True:
            try:
                entry = await self._watcher.updates(timeout=3600)  # type: ignore[no-untyped-call]
            except nats.errors.TimeoutError:
                continue
            if entry is None or not entry.key.startswith(MEMBER_PREFIX + "."):
                continue  # the end of the initial values
            self._heard(entry.key[len(MEMBER_PREFIX) + 1 :], entry.value, entry.operation in (KV_DEL, KV_PURGE))

    def _heard(self, member: str, value: bytes | None, deleted: bool) -> None:
        if member == self.member:
            return
        before = self.live()
        if deleted:
            self.heard.pop(member, None)
        else:
            age = 0.0
            with contextlib.suppress(ValueError):
                age = min(max(0.0, time.time() - float((value or b"").decode())), self.ttl_s)
            self.heard[member] = self.clock() - age
        if self.live() != before:
            self.changed.set()
