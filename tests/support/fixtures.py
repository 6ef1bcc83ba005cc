"""Fixtures every test folder may use (registered by tests/conftest.py): a real
nats-server, with or without per-service users. Every process a fixture starts, the
fixture stops."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from support.nats import AuthNats, NatsServer


@pytest.fixture
def nats_server(tmp_path: Path) -> Iterator[NatsServer]:
    """A JetStream nats-server without users, stopped after the test."""
    server = NatsServer(tmp_path)
    server.start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def auth_nats(tmp_path: Path) -> Iterator[AuthNats]:
    """A JetStream nats-server with one user per service, stopped after the test."""
    server = AuthNats(tmp_path)
    server.start()
    try:
        yield server
    finally:
        server.stop()
