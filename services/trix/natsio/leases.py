"""Shard leases: which replica owns which shard (ADR 0007, ADR 0021): the table's command
shards, the competitions' (ADR 0026).

Owns `LeaseManager`, the loops around `balancing.plan`: one heartbeat per replica (a key of
the replicas' bucket, e.g. `table_replicas`, with a TTL, renewed every `renew_s`), a shard's
owner in the leases bucket (`table_leases`) written by compare-and-set only when it changes
hands, rebalancing on every change seen, and a graceful `handover()`. Its ports
(`trix.natsio.lease_ports`): `LeaseStore` (the buckets, `trix.natsio.lease_kv`) and `ShardHost`
(what owning a shard means to the service). A held shard is *valid* for `valid_s` (shorter
than the TTL) after the heartbeat that kept it, so an owner stops writing before another may
start; the log's expected-last-sequence check covers the rest. No nats or grpc imports. The
defaults (shards, TTL) are the table's; another service passes its own.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Coroutine
from dataclasses import dataclass, field
from typing import Any

import structlog

from trix.natsio.balancing import plan, preference, quotas
from trix.natsio.lease_ports import LeaseStore, ShardHost
from trix.natsio.provisioning import TABLE_LEASE_TTL_S
from trix.natsio.subjects import TABLE_SHARDS
from trix.runtime.tasks import cancel_and_wait, start_kept

log = structlog.get_logger("trix.leases")

RENEW_S = TABLE_LEASE_TTL_S / 4
"""Heartbeat period: a quarter of the TTL (0.2 s), so three heartbeats fall within `VALID_S` of
the last one; one KV write per period per replica (it was one per held shard: 64 shards, ~96
writes/s). A failed heartbeat is retried after `RETRY_S`."""
RETRY_S = 0.2
"""Pause before the next renewal round when one in this round failed (NATS hiccup)."""
VALID_S = 0.65
"""How long after a renewal was sent the owner still writes: below TABLE_LEASE_TTL_S, since
another replica takes the shard only after it has *seen* no renewal for the TTL (it saw the
renewal after it was sent). Renewals come every `RENEW_S`, so it survives two late or failed
ones; a round may start `VALID_S - RENEW_S` (0.45 s) late before the leases lapse (0.825 s
with the 1.5 s TTL before, ADR 0021)."""
STALL_S = 0.25
"""The balancing loop woke this much later than it asked (its event loop held elsewhere): the
others' heartbeats that came meanwhile may wait unread in the socket when it runs, so the stall
is not counted as their silence (`LeaseManager.forgive`): a stalled taker does not count a live
owner dead. Shorter lateness (a busy loop, which reads its socket every turn) is not forgiven,
or a loop always a little late would notice a dead owner ever later."""
MEMBER_TTL_S = 5.0
"""A replica whose heartbeat has not been seen for this long no longer counts in the quotas.
Longer than the lease TTL on purpose: under a saturated CPU heartbeats arrive late and in
bursts, and a replica flapping in and out of the quotas makes the others shuffle shards. A
dead owner leaves the quotas sooner: as soon as one of its leases is seen expired with no
heartbeat of it since (see `LeaseManager.live`)."""
BALANCE_S = 0.2
"""Balancing period when no watcher event wakes the loop (an expiry is not an event)."""
OUTAGE_VALID_S = 20.0
"""How long a shard valid when the lease buckets stopped answering stays valid (`LeaseManager.valid`):
longer than a NATS election (4-9 s, twice if the first fails)."""
SERVE_WINDOW_S = 12.0
"""How long a replica whose rebuild of newly won shards failed tries it again while holding
(and renewing) their leases, before giving them up (`LeaseManager.serve_window_s`): longer than
a NATS election of TABLE_LOG (4-9 s), the usual cause. Given up at once, the shards waited for a
later balance round and a new lease (play resumed only after 21 s)."""
SERVE_PAUSE_S = 0.5
"""First pause before a failed rebuild is tried again (doubling, at most 2 s)."""
ECHO_S = 2.0
"""A watcher that has not delivered this replica's own write (its heartbeat, or a lease it won)
this long after the write succeeded is deaf (its ordered consumer lost with a NATS node, or
stalled across a partition: the client library notices only after two missed 5 s idle
heartbeats): both watchers are started again (`LeaseManager.rewatch`)."""


@dataclass
class Seen:
    """The last version of a lease seen by the watcher."""

    owner: str | None
    revision: int
    at: float


@dataclass
class Held:
    revision: int
    valid_until: float
    epoch: int = 0
    """The revision at which the lease was won (renewals keep it): grows with every new owner."""
    releasing: bool = False


@dataclass
class LeaseManager:
    """Holds, renews, balances and hands over this replica's shard leases."""

    me: str
    store: LeaseStore
    host: ShardHost
    shards: int = TABLE_SHARDS
    ttl_s: float = TABLE_LEASE_TTL_S
    renew_s: float = RENEW_S
    valid_s: float = VALID_S
    clock: Callable[[], float] = time.monotonic
    serve_window_s: float = SERVE_WINDOW_S
    held: dict[int, Held] = field(default_factory=dict)
    seen: dict[int, Seen] = field(default_factory=dict)
    members: dict[str, float] = field(default_factory=dict)
    heard: dict[str, float] = field(default_factory=dict)
    """Replica -> when its heartbeat was last seen (kept after it left: its shards' keys may
    still name it)."""
    started: float = 0.0
    dead: dict[str, float] = field(default_factory=dict)
    """Replica -> when one of its leases was seen expired: out of the quotas until it heartbeats again."""
    leaving: bool = False
    kv_down_since: float | None = None
    """When this replica's heartbeat started failing (NATS away, or the buckets' stream with no
    leader after a NATS node died); None while it succeeds."""
    unechoed_since: float | None = None
    """When the oldest heartbeat of this replica that its watcher has not delivered back was
    sent (None: the last one came back). The watcher is known current up to then only, so the
    others' silence is counted up to then (`horizon`): a deaf watcher never makes a live
    replica look dead (a replica healed from a partition took the shards of live
    ones)."""
    lease_unechoed: dict[int, tuple[int, float]] = field(default_factory=dict)
    """Shard -> (revision, when) of a lease write of this replica not yet seen by the watcher."""
    rewatch: Callable[[], Coroutine[Any, Any, None]] | None = None
    """Starts both watchers again (set by `entrypoints.LeaseWatchers.start`)."""
    rewatched_at: float = 0.0
    _closed: bool = False
    _wake: asyncio.Event = field(default_factory=asyncio.Event)
    _tasks: set[asyncio.Task[None]] = field(default_factory=set)
    _balance_lock: asyncio.Lock = field(default_factory=asyncio.Lock)

    # -- what the watchers report -------------------------------------------------------

    def on_lease(self, shard: int, owner: str | None, revision: int) -> None:
        self.seen[shard] = Seen(owner, revision, self.clock())
        pending = self.lease_unechoed.get(shard)
        if pending is not None and revision >= pending[0]:
            del self.lease_unechoed[shard]
        held = self.held.get(shard)
        if held is not None and not held.releasing and owner != self.me and revision > held.revision:
            log.warning("shard lease taken by another replica", shard=shard, owner=owner)
            start_kept(self._tasks, self._lose(shard))
        self._wake.set()

    def on_member(self, replica: str, alive: bool) -> None:
        now = self.clock()
        if replica == self.me and alive:
            self.unechoed_since = None
        if alive:
            before = self.members.get(replica)
            self.members[replica] = now
            self.heard[replica] = now
            if before is None or now - before > self.ttl_s or replica in self.dead:  # new, or back
                self._wake.set()
        else:
            self.heard[replica] = now - self.ttl_s  # it left: its shards are free at once
            if self.members.pop(replica, None) is not None:
                self._wake.set()

    def _after_outage(self, since: float, now: float) -> None:
        """The buckets answer again after an outage this replica saw too (its own heartbeat
        failed from `since` to `now`). Nobody could heartbeat meanwhile, so the silence of the
        replicas alive before it says nothing of them: each gets a fresh TTL from now, instead
        of every replica counting all the others dead at once and fighting over every shard
        (a NATS election, seconds, is longer than the TTL). Only later, never
        earlier, takeovers follow: a replica that died meanwhile is noticed one TTL later.
        A replica cut off alone is not forgiven by the others (they saw no outage)."""
        self.kv_down_since = None
        if now - since <= self.renew_s:
            return
        log.warning("lease buckets back after an outage", outage_s=round(now - since, 3))
        for replica, at in list(self.heard.items()):
            if at >= since - self.ttl_s:  # alive when the outage began
                self.heard[replica] = now
                if self.dead.get(replica, 0.0) >= since:  # counted dead during the outage only
                    del self.dead[replica]
        for replica in list(self.members):
            if self.members[replica] >= since - MEMBER_TTL_S:
                self.members[replica] = now

    def horizon(self, now: float) -> float:
        """Until when the heartbeat watcher is known to have delivered everything: now, or the
        send time of this replica's oldest heartbeat it has not delivered back yet."""
        return now if self.unechoed_since is None else min(now, self.unechoed_since)

    def _silent_for(self, replica: str, now: float) -> float:
        """How long no heartbeat of `replica` was seen (since this manager started, at most),
        counted up to the watcher's `horizon` only."""
        return self.horizon(now) - self.heard.get(replica, self.started)

    def deaf(self, now: float) -> bool:
        """Has a watcher missed one of this replica's own writes for `ECHO_S`?"""
        if self.unechoed_since is not None and now - self.unechoed_since > ECHO_S:
            return True
        return any(now - at > ECHO_S for _, at in self.lease_unechoed.values())

    def fenced(self, shard: int) -> None:
        """A newer owner wrote a table of the shard (the log's writer epochs): the
        lease was taken and the watcher did not say so. Stop serving the shard."""
        if shard in self.held:
            log.warning("shard lease lost: a newer owner wrote its log", shard=shard)
            start_kept(self._tasks, self._lose(shard))

    # -- queries ----------------------------------------------------------------------------

    def valid(self, shard: int) -> bool:
        """May this replica still write the shard's tables: lease held and fresh, or it was fresh
        when the lease buckets stopped answering this replica, `OUTAGE_VALID_S` ago at most.

        During such an outage (a NATS election of the buckets' stream, seconds) no replica can
        take the shard (that takes a write to the buckets), so the owner writes on instead of
        stopping every table for the election. The cases where the buckets answer
        others but not this replica (its connection cut, its node alone in a partition) leave
        it unable to append to the log too, and an append that lands late (sent before the
        cut) is fenced by the log: expected last sequence and writer epoch."""
        held = self.held.get(shard)
        if held is None:
            return False
        now = self.clock()
        if now < held.valid_until:
            return True
        down = self.kv_down_since
        return down is not None and held.valid_until >= down and now - down < OUTAGE_VALID_S

    def live(self) -> list[str]:
        """The members sharing the shards: heartbeat seen within `MEMBER_TTL_S`, and not an owner
        whose lease was seen expired with no heartbeat of it since (dead: its shards are free)."""
        now = self.clock()
        upto = self.horizon(now)
        for seen in self.seen.values():
            owner = seen.owner
            if owner is not None and owner != self.me and self._silent_for(owner, now) > self.ttl_s:
                # Dead from that moment on (even once its shards have new owners), until a
                # heartbeat of it arrives after it.
                last = self.heard.get(owner, self.started)
                self.dead[owner] = max(self.dead.get(owner, 0.0), last + self.ttl_s)
        for r in [r for r in self.dead if r not in self.members]:
            del self.dead[r]
        alive = [
            r
            for r, at in self.members.items()
            if upto - at < MEMBER_TTL_S and not (r in self.dead and at <= self.dead[r])
        ]
        return sorted(alive) if self.leaving else sorted({*alive, self.me})

    def free_for(self) -> dict[int, float]:
        now = self.clock()
        out: dict[int, float] = {}
        for shard in range(self.shards):
            seen = self.seen.get(shard)
            if seen is None:
                out[shard] = self.ttl_s  # never seen since start: free as far as we know
            elif seen.owner is None:
                out[shard] = now - seen.at
            elif shard not in self.held and seen.owner != self.me:
                silent = self._silent_for(seen.owner, now)
                if silent > self.ttl_s:  # its owner's lease (heartbeat) expired
                    out[shard] = silent - self.ttl_s
            elif shard not in self.held:
                out[shard] = now - seen.at  # ours from before a restart: take it back
        return out

    def owners(self) -> dict[int, str]:
        return {s: v.owner for s, v in self.seen.items() if v.owner is not None}

    # -- loops --------------------------------------------------------------------------------

    async def start(self, settle_s: float = 8.0) -> None:
        """Heartbeat, then balance until this replica holds its quota (or `settle_s` passed)."""
        self.started = self.clock()
        await self.store.heartbeat(self.me)
        self.members[self.me] = self.clock()
        deadline = self.clock() + settle_s
        start_kept(self._tasks, self._renew_loop())
        while self.clock() < deadline:
            await self.balance()
            quota = quotas(self.live(), self.shards).get(self.me, 0)
            if len(self.held) >= quota:
                break
            await asyncio.sleep(0.1)
        start_kept(self._tasks, self._balance_loop())

    async def stop(self) -> None:
        self._closed = True
        await cancel_and_wait(list(self._tasks))

    async def _renew_loop(self) -> None:
        due = self.clock()
        while not self._closed:
            started = self.clock()
            if started - due > self.valid_s - self.renew_s:
                # The event loop was busy elsewhere: the leases may lapse (diagnostic only).
                log.warning("lease renewal late", late_s=round(started - due, 3), held=len(self.held))
            ok = True
            try:
                if self.leaving:  # the heartbeat is gone: the shards still held are renewed one by one
                    ok = all(await asyncio.gather(*(self._renew(s) for s in list(self.held))))
                else:
                    sent = self.clock()
                    first = self.unechoed_since is None
                    if first:  # before the put: its echo may come before its ack
                        self.unechoed_since = sent
                    try:
                        await self.store.heartbeat(self.me)
                    except Exception:
                        if first:
                            self.unechoed_since = None  # nothing stored: no echo to wait for
                        if self.kv_down_since is None:
                            self.kv_down_since = sent
                        raise
                    self._check_watchers()
                    lapsed: list[int] = []
                    for shard, held in self.held.items():  # one lease for every held shard
                        if held.releasing:
                            continue
                        if sent >= held.valid_until:
                            lapsed.append(shard)  # another may have taken it meanwhile: ask the key
                        else:
                            held.valid_until = sent + self.valid_s
                    if lapsed:  # still valid meanwhile if they were when an outage began (`valid`)
                        ok = all(await asyncio.gather(*(self._renew(s) for s in lapsed)))
                    if self.kv_down_since is not None:
                        self._after_outage(self.kv_down_since, self.clock())
            except Exception as exc:  # noqa: BLE001 - NATS away: keep trying, validity runs out
                log.warning("lease renewal failed", error=repr(exc))
                ok = False
            took = self.clock() - started
            if took > self.valid_s - self.renew_s:
                log.warning("lease renewal slow", took_s=round(took, 3), held=len(self.held))
            period = self.renew_s if ok else min(self.renew_s, RETRY_S)
            pause = max(0.05, period - took)
            due = self.clock() + pause
            await asyncio.sleep(pause)

    def _check_watchers(self) -> None:
        """A deaf watcher (`deaf`) is started again, at most once per `ECHO_S`."""
        now = self.clock()
        if self.rewatch is None or not self.deaf(now) or now - self.rewatched_at < ECHO_S:
            return
        self.rewatched_at = now
        log.warning(
            "lease watchers deaf, starting them again",
            heartbeat_unechoed_s=None if self.unechoed_since is None else round(now - self.unechoed_since, 3),
            leases_unechoed=len(self.lease_unechoed),
        )
        self.lease_unechoed.clear()  # the new watchers deliver every key's latest value
        start_kept(self._tasks, self._rewatch(self.rewatch))

    async def _rewatch(self, rewatch: Callable[[], Coroutine[Any, Any, None]]) -> None:
        try:
            await rewatch()
        except Exception as exc:  # noqa: BLE001 - NATS away: tried again after ECHO_S
            log.warning("lease watchers not started again", error=repr(exc))

    def _wrote(self, shard: int, revision: int, sent: float) -> None:
        """A lease write of this replica stored at `revision`: its watcher should deliver it."""
        seen = self.seen.get(shard)
        if seen is not None and seen.revision >= revision:
            return  # delivered already, before the write's ack
        if shard not in self.lease_unechoed:
            self.lease_unechoed[shard] = (revision, sent)

    async def _renew(self, shard: int) -> bool:
        """Renew one held lease; False if the attempt failed (try again soon)."""
        held = self.held.get(shard)
        if held is None or held.releasing:
            return True
        sent = self.clock()
        try:
            revision = await self.store.update(shard, self.me, held.revision)
        except Exception as exc:  # noqa: BLE001 - transient: try again next round
            log.warning("lease renewal failed", shard=shard, error=repr(exc))
            return False
        if self.held.get(shard) is not held:
            return True
        if held.releasing:
            if revision is not None:  # the release deletes at this revision
                held.revision = revision
                held.valid_until = sent + self.valid_s
            return True
        if revision is None:
            # Expired while this replica was too slow to renew, or taken. Expired and still
            # free: win it again at once (a new epoch; the log check covers anything appended
            # in between). Taken: stop serving it.
            try:
                revision = await self.store.create(shard, self.me)
            except Exception as exc:  # noqa: BLE001 - treat as lost
                log.warning("lease re-creation failed", shard=shard, error=repr(exc))
            if revision is None or self.held.get(shard) is not held:
                log.warning("shard lease lost", shard=shard)
                await self._lose(shard)
                return True
            log.warning("shard lease expired and won again", shard=shard)
            held.epoch = revision
        held.revision = revision
        held.valid_until = sent + self.valid_s
        self._wrote(shard, revision, sent)
        return True

    async def _lose(self, shard: int) -> None:
        if self.held.pop(shard, None) is not None:
            await self.host.lost(shard)
            self._wake.set()

    def next_expiry(self, now: float) -> float | None:
        """When the silence of another shard owner next reaches the TTL (its shards free then),
        if that can be known now: not while this replica's watcher is behind (`horizon`)."""
        if self.unechoed_since is not None:
            return None
        owners = {s.owner for s in self.seen.values() if s.owner is not None and s.owner != self.me}
        due = [self.heard.get(o, self.started) + self.ttl_s for o in owners]
        return min((d for d in due if d > now), default=None)

    def forgive(self, stalled_s: float) -> None:
        """This replica's event loop stalled for `stalled_s`: the heartbeats that came
        meanwhile may still wait unread, so the stall is not the others' silence (their
        shards would be taken from live owners). A replica that died meanwhile is noticed
        that much later."""
        now = self.clock()
        since = now - stalled_s
        for replica, at in self.heard.items():
            if at >= since - self.ttl_s:  # alive when the stall began
                self.heard[replica] = min(now, at + stalled_s)

    async def _balance_loop(self) -> None:
        loop = asyncio.get_running_loop()
        while not self._closed:
            # Woken at the next expiry (a dead owner's shards are taken at once), a watcher
            # event, or after BALANCE_S. asyncio.wait, not wait_for: on 3.11 wait_for may
            # swallow a cancellation.
            due = self.next_expiry(self.clock())
            wait = BALANCE_S if due is None else min(BALANCE_S, max(0.01, due - self.clock() + 0.005))
            until = loop.time() + wait
            waiter = asyncio.ensure_future(self._wake.wait())
            try:
                await asyncio.wait({waiter}, timeout=wait)
            finally:
                waiter.cancel()
            self._wake.clear()
            late = loop.time() - until
            if late > STALL_S:
                log.info("lease balancing late, not counted as the others' silence", late_s=round(late, 3))
                self.forgive(late)
            try:
                await self.balance()
            except Exception as exc:  # noqa: BLE001 - try again next round
                log.warning("shard balancing failed", error=repr(exc))

    async def balance(self) -> None:
        """One balancing step (see `plan`)."""
        async with self._balance_lock:
            if self.leaving or self.kv_down_since is not None:
                return  # the buckets do not answer this replica: its view of the others is stale
            step = plan(self.me, self.live(), self.held, self.owners(), self.free_for(), self.shards)
            if step.acquire:
                await self._acquire(list(step.acquire))
            if step.release:
                await asyncio.gather(*(self._release(s) for s in step.release))

    async def _acquire(self, shards: list[int]) -> None:
        """Win the shards' leases (all at once: a dead owner's tables resume together)."""

        async def one(shard: int) -> bool:
            sent = self.clock()
            seen = self.seen.get(shard)
            revision: int | None = None
            try:
                if seen is not None and seen.owner is not None:
                    revision = await self.store.update(shard, self.me, seen.revision)  # take over an expired lease
                if revision is None:
                    revision = await self.store.create(shard, self.me)
            except Exception as exc:  # noqa: BLE001 - transient: the next round tries again
                log.warning("lease acquisition failed", shard=shard, error=repr(exc))
                return False
            if revision is None:
                # Someone else holds it (our view was late): count it as theirs from now on.
                now_seen = self.seen.get(shard)
                if now_seen is None or now_seen is seen:
                    self.seen[shard] = Seen(seen.owner if seen else "?", seen.revision if seen else 0, self.clock())
                return False
            self.held[shard] = Held(revision, sent + self.valid_s, epoch=revision)
            self._wrote(shard, revision, sent)
            return True

        won = await asyncio.gather(*(one(s) for s in shards))
        got = [s for s, ok in zip(shards, won, strict=True) if ok]
        if got:
            log.info("shards acquired", shards=got, held=len(self.held))
            await self._serve(got)

    async def _serve(self, shards: list[int]) -> None:
        """Rebuild and serve newly won shards; a failed rebuild (NATS slow, TABLE_LOG electing a
        leader) is tried again while the leases are held and renewed, for `serve_window_s`."""
        deadline = self.clock() + self.serve_window_s
        pause = SERVE_PAUSE_S
        while True:
            try:
                await self.host.acquired(shards)
                return
            except Exception as exc:  # noqa: BLE001 - a rebuild that failed: again, then give the shards up
                left = [s for s in shards if s in self.held]
                if self._closed or not left or self.clock() + pause >= deadline:
                    # Held but not served would leave their tables unanswered for as long as this
                    # replica renews: free them instead, the next round (here or elsewhere) tries again.
                    log.warning("shards not served, leases given up", shards=left, error=repr(exc))
                    await asyncio.gather(*(self._give_up(s) for s in left))
                    return
                log.warning("shards not served yet, rebuilding again", shards=left, error=repr(exc))
                shards = left
            await asyncio.sleep(pause)
            pause = min(2 * pause, 2.0)

    async def _give_up(self, shard: int) -> None:
        held = self.held.get(shard)
        if held is None:
            return
        try:
            await self.store.release(shard, held.revision)
        except Exception as exc:  # noqa: BLE001 - then the lease simply expires
            log.warning("shard release failed", shard=shard, error=repr(exc))
        await self._lose(shard)

    async def _release(self, shard: int) -> None:
        held = self.held.get(shard)
        if held is None:
            return
        held.releasing = True
        try:
            await self.host.releasing(shard)
            # A renewal sent just before the release may land first: retry at its revision.
            for _ in range(3):
                if self.clock() >= held.valid_until:
                    break  # the lease simply expires
                seen = self.seen.get(shard)
                if seen is not None and seen.owner == self.me and seen.revision > held.revision:
                    held.revision = seen.revision
                if await self.store.release(shard, held.revision):
                    break
                await asyncio.sleep(0.1)
        except Exception as exc:  # noqa: BLE001 - the lease then simply expires
            log.warning("shard release failed", shard=shard, error=repr(exc))
        self.held.pop(shard, None)
        await self.host.lost(shard)
        log.info("shard handed over", shard=shard, held=len(self.held))

    async def handover(self, timeout_s: float = 10.0) -> None:
        """Graceful shutdown: leave the membership, hand every shard over, then stop."""
        async with self._balance_lock:
            self.leaving = True
        try:
            await self.store.leave(self.me)
        except Exception as exc:  # noqa: BLE001
            log.warning("leaving the membership failed", error=repr(exc))
        # Give the others a moment to see that this replica is leaving (their quotas grow).
        await asyncio.sleep(min(0.2, timeout_s))
        deadline = self.clock() + timeout_s
        for shard in sorted(self.held, key=lambda s: preference(self.me, s)):
            if self.clock() > deadline:
                break
            await self._release(shard)
        await self.stop()
