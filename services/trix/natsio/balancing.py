"""The pure balancing decision of the shard leases: exact quotas over the live replicas
(sorted ids, the first `shards % n` get one more), free or expired shards acquired up to
the quota (preferred by rendezvous hashing, so replicas rarely race for the same shard),
shards above the quota released only when another live replica is below its own (`plan`)."""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from dataclasses import dataclass

from trix.natsio.subjects import TABLE_SHARDS

ORPHAN_S = 1.0
"""A free shard that nobody below its quota takes: after this long the replica preferring it
most (rendezvous) takes it, even above its quota; after twice this long, anyone does."""
MAX_RELEASE_PER_ROUND = 4
"""Shards handed over at once while rebalancing (each pauses its tables for a moment)."""


def quotas(live: Iterable[str], shards: int = TABLE_SHARDS) -> dict[str, int]:
    """Exact shares: `shards // n` each, one more for the first `shards % n` ids in order."""
    ids = sorted(set(live))
    if not ids:
        return {}
    base, extra = divmod(shards, len(ids))
    return {r: base + (1 if i < extra else 0) for i, r in enumerate(ids)}


def preference(replica: str, shard: int) -> int:
    """Rendezvous hash: how much `replica` wants `shard` (replicas prefer different shards)."""
    return int.from_bytes(hashlib.blake2b(f"{replica}/{shard}".encode(), digest_size=8).digest(), "big")


@dataclass(frozen=True)
class Plan:
    acquire: tuple[int, ...] = ()
    release: tuple[int, ...] = ()


def assign(free: Iterable[int], room: dict[str, int]) -> dict[int, str]:
    """Free shards -> the member below quota that takes each: in shard order, the member with room
    left that prefers the shard most. Every replica with the same view computes the same answer,
    so survivors split a dead owner's shards without racing for them."""
    left = dict(room)
    out: dict[int, str] = {}
    for shard in sorted(free):
        candidates = [r for r, n in left.items() if n > 0]
        if not candidates:
            break
        winner = max(candidates, key=lambda r: (preference(r, shard), r))
        left[winner] -= 1
        out[shard] = winner
    return out


def plan(
    me: str,
    live: Iterable[str],
    held: Iterable[int],
    owners: dict[int, str],
    free_for: dict[int, float],
    shards: int = TABLE_SHARDS,
) -> Plan:
    """The next balancing step of replica `me`.

    `owners`: shard -> owner of every lease currently held (by anyone, `me` included);
    `free_for`: shard -> seconds it has been free (no owner, or its lease expired).

    1. Free shards are assigned to the members below their quota (`assign`); `me` takes its own.
    2. A free shard still free after `ORPHAN_S` (views differ, or everyone is at quota) goes to
       the member preferring it most, after `2 * ORPHAN_S` to anyone: no shard stays orphaned.
    3. Above quota, release at most `MAX_RELEASE_PER_ROUND` shards, and only as many as the
       other members miss beyond the free shards (the newcomers take them).
    """
    members = sorted(set(live) | {me})
    quota = quotas(members, shards)
    mine = set(held)
    counts = {r: 0 for r in members}
    for shard, owner in owners.items():
        if owner in counts and owner != me and shard not in free_for:
            counts[owner] += 1
    counts[me] = len(mine)
    free = [s for s in free_for if s not in mine]
    room = {r: max(0, quota[r] - counts[r]) for r in members}
    assigned = assign(free, room)
    acquire = [s for s, r in assigned.items() if r == me]
    for shard in free:
        if assigned.get(shard) == me:
            continue
        age = free_for[shard]
        top = max(members, key=lambda r: (preference(r, shard), r))
        if age >= 2 * ORPHAN_S or (age >= ORPHAN_S and top == me):
            acquire.append(shard)
    if acquire:
        return Plan(acquire=tuple(sorted(acquire, key=lambda s: -preference(me, s))))
    want = quota[me] - len(mine)
    deficit = sum(room[r] for r in members if r != me) - len(free)
    if want < 0 and deficit > 0:
        give = min(-want, deficit, MAX_RELEASE_PER_ROUND)
        return Plan(release=tuple(sorted(mine, key=lambda s: preference(me, s))[:give]))
    return Plan()
