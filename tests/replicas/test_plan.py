"""The pure balancing decision of the shard leases (trix.natsio.balancing.plan)."""

from __future__ import annotations

from trix.natsio.balancing import ORPHAN_S, Plan, plan, quotas


def test_quotas_are_exact_and_sum_to_the_shards() -> None:
    for n in range(1, 10):
        q = quotas([f"r{i}" for i in range(n)])
        assert sum(q.values()) == 64 and max(q.values()) - min(q.values()) <= 1


def test_a_lone_replica_takes_every_free_shard() -> None:
    step = plan("a", ["a"], [], {}, {s: 2.0 for s in range(64)})
    assert sorted(step.acquire) == list(range(64)) and not step.release


def test_a_full_replica_releases_only_when_someone_is_below_quota() -> None:
    owners = {s: "a" for s in range(64)}
    assert plan("a", ["a"], range(64), owners, {}) == plan("a", ["a"], range(64), owners, {})
    assert not plan("a", ["a"], range(64), owners, {}).release
    step = plan("a", ["a", "b"], range(64), owners, {})
    assert len(step.release) == 4 and not step.acquire  # at most 4 at once, b takes them


def test_the_dead_replicas_expired_shards_are_shared_by_the_survivors() -> None:
    owners = {s: ["a", "b", "c"][s % 3] for s in range(64)}
    expired = {s: 0.5 for s in range(64) if s % 3 == 2}  # c died: its leases expired
    mine = [s for s in range(64) if s % 3 == 0]
    step = plan("a", ["a", "b"], mine, owners, expired)
    assert len(step.acquire) == 32 - len(mine) and set(step.acquire) <= set(expired)


def test_an_orphan_shard_is_taken_even_at_quota() -> None:
    # In a's view shard 63 is b's to take (b is below quota); if b does not (its view differs),
    # a takes it after ORPHAN_S if it prefers it most, after 2 * ORPHAN_S in any case.
    owners = {s: "a" if s < 32 else "b" for s in range(63)}
    assert plan("a", ["a", "b"], range(32), owners, {63: 0.1}) == Plan()
    assert plan("a", ["a", "b"], range(32), owners, {63: 2 * ORPHAN_S + 0.1}).acquire == (63,)


def test_survivors_split_a_dead_owners_shards_without_overlap() -> None:
    owners = {s: ["a", "b", "c"][s % 3] for s in range(64)}
    expired = {s: 0.1 for s in range(64) if s % 3 == 2}
    steps = {r: plan(r, ["a", "b"], [s for s in range(64) if owners[s] == r], owners, expired) for r in ("a", "b")}
    got_a, got_b = set(steps["a"].acquire), set(steps["b"].acquire)
    assert not got_a & got_b and got_a | got_b == set(expired)
    assert len(got_a) + 22 == 32 and len(got_b) + 21 == 32


def test_a_full_replica_gives_only_what_the_free_shards_do_not_cover() -> None:
    free = {s: 0.1 for s in range(60, 64)}
    owners = {s: "a" for s in range(60)}
    assert len(plan("a", ["a", "b"], range(60), owners, free).release) == 4  # the per-round cap
    owners = {s: "a" if s < 34 else "b" for s in range(60)}
    assert len(plan("a", ["a", "b"], range(34), owners, free).release) == 2
    owners = {s: "a" if s < 32 else "b" for s in range(60)}
    assert plan("a", ["a", "b"], range(32), owners, free) == Plan()  # b takes the free ones
