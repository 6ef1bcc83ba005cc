"""Startup fair share (issue 5): three replicas started together reach the exact split
(22/21/21 shards) within a generous deadline, even on a saturated machine."""

from __future__ import annotations

import time
from pathlib import Path

from replicas_support import Cluster

from support.nats import AuthNats

DEADLINE_S = 45.0


async def test_three_replicas_started_together_split_the_shards_evenly(auth_nats: AuthNats, tmp_path: Path) -> None:
    cluster = Cluster(auth_nats, tmp_path, 3)
    try:
        await cluster.connect()
        t0 = time.monotonic()
        for i in range(3):
            cluster.start(i)
        leases = await cluster.wait_balanced([0, 1, 2], timeout_s=DEADLINE_S)
        counts = sorted((sum(1 for o in leases.values() if o == r) for r in set(leases.values())), reverse=True)
        print({"balanced_s": round(time.monotonic() - t0, 1), "shards": counts})
        assert counts == [22, 21, 21]
    finally:
        await cluster.close()
        cluster.stop_all()
