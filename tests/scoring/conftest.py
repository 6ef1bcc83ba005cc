"""Fixtures of the scoring tests: a real nats-server on free ports and the scoring service
in-process with real gRPC on 127.0.0.1; every process a fixture starts, the fixture stops."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from scoring_support import EventPublisher, InProcessScoring

from support.nats import NatsServer


@pytest.fixture
async def scoring(nats_server: NatsServer) -> AsyncIterator[InProcessScoring]:
    app = InProcessScoring(nats_server.url)
    await app.start()
    try:
        yield app
    finally:
        await app.stop()


@pytest.fixture
async def publisher(nats_server: NatsServer) -> AsyncIterator[EventPublisher]:
    pub = await EventPublisher.connect(nats_server.url)
    try:
        yield pub
    finally:
        await pub.close()
