"""Table leases across an outage of the lease buckets (issue 19): on a NATS cluster a bucket
has no leader for the RAFT election after its leader node died (seconds, longer than the
lease TTL). A replica that saw the outage itself (its own heartbeat failed) does not count
the others dead for the silence it shared with them, and claims nothing while it lasts;
a replica that went silent alone is still taken over after the TTL."""

from __future__ import annotations

from typing import Any

from support.clock import ManualClock
from trix.natsio.leases import LeaseManager


def manager(clock: ManualClock) -> LeaseManager:
    store: Any = None  # the queries below touch neither the store nor the host
    host: Any = None
    m = LeaseManager("table-a", store, host, clock=clock)
    m.started = clock.now() - 60
    for replica in ("table-a", "table-b", "table-c"):
        m.on_member(replica, alive=True)
    m.on_lease(0, "table-b", 10)
    m.on_lease(1, "table-c", 11)
    return m


def test_a_shared_outage_longer_than_the_ttl_kills_nobody() -> None:
    clock = ManualClock(100.0)
    m = manager(clock)
    m.kv_down_since = clock.now() + 0.1  # our heartbeat fails from here ...
    clock.advance(7.0)  # ... through a 7 s election
    assert m.live() == ["table-a"]  # what the silence alone says
    m._after_outage(m.kv_down_since, clock.now())
    assert m.live() == ["table-a", "table-b", "table-c"]
    assert 0 not in m.free_for() and 1 not in m.free_for()


def test_a_replica_silent_alone_is_taken_over_after_the_ttl() -> None:
    clock = ManualClock(100.0)
    m = manager(clock)
    clock.advance(m.ttl_s + 0.5)
    m.on_member("table-c", alive=True)  # c goes on heartbeating, b fell silent
    assert m.live() == ["table-a", "table-c"]
    assert 0 in m.free_for() and 1 not in m.free_for()
