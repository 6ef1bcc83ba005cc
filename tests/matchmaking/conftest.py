"""Fixtures of the matchmaking tests: a real nats-server on a free port, stopped by the test."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from mm_support import NatsServer


@pytest.fixture
def nats_server(tmp_path: Path) -> Iterator[NatsServer]:
    server = NatsServer(tmp_path)
    server.start()
    try:
        yield server
    finally:
        server.stop()
