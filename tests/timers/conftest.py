"""Fixtures of the timers tests: a real nats-server with per-service users on a free
port and a client connected as the gateway. Services are started by each test (on the
clock it needs) and stopped by it; every process a fixture starts, the fixture stops."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from timers_support import Client_

from support.nats import AuthNats


@pytest.fixture
async def client(auth_nats: AuthNats) -> AsyncIterator[Client_]:
    c = await Client_.connect(auth_nats.url("gateway"))
    try:
        yield c
    finally:
        await c.nc.close()
