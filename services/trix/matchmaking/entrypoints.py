"""The matchmaking's inbound NATS entrypoint: the partitions this replica matches.

Owns `PartitionOwner`: each replica heartbeats in the `match_leases` bucket, its one lease
(`trix.matchmaking.leases`), matches its share of the queue partitions among the live
replicas (a dead replica's pass to the others within the TTL), watches each of its
partitions' tickets and lobbies and runs the matcher on them. Correctness never rests on
the split (the claim protocol, `claims`, is safe with two owners); it only keeps replicas
from contending.
"""

from __future__ import annotations

import asyncio
import contextlib
import uuid

import nats.errors
import structlog
from nats.js.kv import KV_DEL, KV_PURGE, KeyValue

from trix.matchmaking.adapters import TICKETS_BUCKET, KeyWatchHub
from trix.matchmaking.leases import LEASES_BUCKET, Membership
from trix.matchmaking.service import MatchmakingService
from trix.natsio import subjects
from trix.natsio.connection import NatsConnection
from trix.runtime.tasks import cancel_and_wait

log = structlog.get_logger("trix.matchmaking.nats")


class PartitionOwner:
    """Matches this replica's share of the queue partitions: which ones, `Membership` (one
    lease per replica, `trix.matchmaking.leases`) says; a change of the live replicas (one
    arrives, leaves, or its heartbeat lapses) starts and stops partitions here. A partition
    given up stops after its current round instead of being cancelled in the middle of claims."""

    BALANCE_S = 1.0
    """How often the split is looked at without a change heard (a heartbeat lapsing)."""
    CALL_TIMEOUT_S = 2.0
    STOP_WAIT_S = 5.0
    IDLE_TICK_S = 1.0
    """Longest wait between two rounds of a partition with nothing queued (see `_run`)."""

    def __init__(
        self, nats: NatsConnection, service: MatchmakingService, instance: str, hub: KeyWatchHub | None = None
    ) -> None:
        self.nats = nats
        self.service = service
        self.member = f"{subjects.token(instance.replace('.', '_'), 'instance')}-{uuid.uuid4().hex[:8]}"
        self.partitions = service.config.partitions
        self.owned: set[int] = set()
        self.tasks: dict[int, asyncio.Task[None]] = {}
        self.stopping: dict[int, asyncio.Event] = {}
        self.lost = 0
        """Partitions given up because another replica's share took them."""
        self.membership: Membership | None = None
        self._balance_task: asyncio.Task[None] | None = None
        self._tickets: KeyValue | None = None
        self.hub = hub
        """The process's ticket watch hub (started by `start`), stopped with the owner."""

    @property
    def renewals(self) -> int:
        """Heartbeats written (the replica's one lease renewed)."""
        return self.membership.beats if self.membership is not None else 0

    @property
    def late(self) -> int:
        """Heartbeats later than the TTL (the others may have counted this replica out)."""
        return self.membership.late if self.membership is not None else 0

    @property
    def max_renew_gap_s(self) -> float:
        """Longest time between two heartbeats."""
        return self.membership.max_gap_s if self.membership is not None else 0.0

    async def start(self) -> None:
        js = self.nats.jetstream
        self._tickets = await js.key_value(TICKETS_BUCKET)
        self.membership = Membership(await js.key_value(LEASES_BUCKET), self.member)
        await self.membership.start()
        self._balance_task = asyncio.create_task(self._balance_loop())

    async def stop(self) -> None:
        await cancel_and_wait([t for t in (self._balance_task,) if t is not None])
        for p in list(self.tasks):
            await self._drop(p)
        if self.membership is not None:
            await self.membership.stop()  # its heartbeat deleted: the others take the share now
        if self.hub is not None:
            await self.hub.stop()

    async def _balance_loop(self) -> None:
        assert self.membership is not None
        changed = self.membership.changed
        while True:
            try:
                await self._balance_once()
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # noqa: BLE001 - a failed stop: the next look retries
                log.warning("partition balance error", error=repr(exc))
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(changed.wait(), self.BALANCE_S)
            changed.clear()

    async def _balance_once(self) -> None:
        assert self.membership is not None
        mine = self.membership.partitions(self.partitions)
        for p in sorted(self.owned - mine):
            self.lost += 1
            log.info("partition handed over", partition=p, member=self.member)
            await self._drop(p)
        for p in sorted(mine - self.owned):
            if p in self.tasks:
                continue  # still stopping: the next look starts it
            self.owned.add(p)
            self.stopping[p] = asyncio.Event()
            self.tasks[p] = asyncio.create_task(self._run(p, self.stopping[p]))
            log.info("partition taken", partition=p, member=self.member)

    async def _drop(self, p: int) -> None:
        """Stop matching partition p (after the current round)."""
        self.owned.discard(p)
        stop = self.stopping.pop(p, None)
        task = self.tasks.get(p)
        if stop is not None:
            stop.set()
            wake = self.service.view.wakers.get(p)
            if wake is not None:
                wake.set()  # ends an idle partition's wait
        if task is not None:
            try:
                await asyncio.wait_for(asyncio.shield(task), self.STOP_WAIT_S)
            except Exception:  # noqa: BLE001 - TimeoutError, or the round failed: stop it now
                await cancel_and_wait([task], self.STOP_WAIT_S)  # never hang a shutdown
            if self.tasks.get(p) is task:
                del self.tasks[p]
        if p not in self.owned:
            self.service.release_partition(p)

    async def _run(self, p: int, stop: asyncio.Event) -> None:
        """Watch the partition's tickets and lobbies; match on every tick until told to stop."""
        assert self._tickets is not None
        self.service.view.pools.setdefault(p, {})
        self.service.view.lobbies.setdefault(p, {})
        watcher = await self._tickets.watch(f"*.{p:02d}.*")
        feed = asyncio.create_task(self._feed(p, watcher))
        wake = self.service.view.wakers.setdefault(p, asyncio.Event())
        try:
            while not stop.is_set():
                wake.clear()
                try:
                    await self.service.run_partition(p)
                except asyncio.CancelledError:
                    raise
                except Exception as exc:  # noqa: BLE001 - the next tick retries
                    log.warning("matching round failed", partition=p, error=repr(exc))
                # An idle partition (no queued ticket, no open lobby) only has retention chores,
                # due in minutes: it sleeps until a change of its keys wakes it (`observe`), at
                # most IDLE_TICK_S. Sixteen partitions ticking every 50 ms for nothing cost
                # matchmaking ~10 % of a core during a load test's whole window.
                # A busy one keeps its tick (changes do not shorten it: a burst of tickets is
                # matched in rounds, not in a round per ticket).
                idle = not self.service.view.pools.get(p) and not self.service.view.lobbies.get(p)
                with contextlib.suppress(asyncio.TimeoutError):
                    if idle:
                        await asyncio.wait_for(wake.wait(), self.IDLE_TICK_S)
                    else:
                        await asyncio.wait_for(stop.wait(), self.service.config.tick_s)
        finally:
            if self.service.view.wakers.get(p) is wake:
                del self.service.view.wakers[p]
            await cancel_and_wait([feed], self.STOP_WAIT_S)
            with contextlib.suppress(Exception):
                await asyncio.wait_for(watcher.stop(), self.CALL_TIMEOUT_S)  # type: ignore[no-untyped-call]

    async def _feed(self, p: int, watcher: KeyValue.KeyWatcher) -> None:
        while True:
            try:
                entry = await watcher.updates(timeout=3600)  # type: ignore[no-untyped-call]
            except nats.errors.TimeoutError:
                continue
            if entry is None:
                continue
            deleted = entry.operation in (KV_DEL, KV_PURGE)
            self.service.observe(p, entry.key, None if deleted else entry.value, entry.revision or 0)
