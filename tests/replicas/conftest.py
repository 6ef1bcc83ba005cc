"""Fixtures of the replica tests (issue 5): a real nats-server with per-service users and a
cluster of table replica processes; every process a fixture starts, the fixture stops."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from replicas_support import Cluster

from support.nats import AuthNats


@pytest.fixture
async def cluster(auth_nats: AuthNats, tmp_path: Path) -> AsyncIterator[Cluster]:
    """Three replicas, started and balanced (22/21/21 shards)."""
    c = Cluster(auth_nats, tmp_path, 3)
    try:
        await c.connect()
        for i in range(3):
            c.start(i)
        await c.wait_balanced([0, 1, 2])
        yield c
    finally:
        await c.close()
        c.stop_all()
