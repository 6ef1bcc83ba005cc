"""Fixtures of the foundation tests: a real nats-server on free ports and service
processes; every process a fixture starts, the fixture stops."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from foundation_support import ServiceProcess

from support.nats import NatsServer


@pytest.fixture
def service_process(tmp_path: Path, nats_server: NatsServer) -> Iterator[type[ServiceProcess]]:
    """Factory of service processes connected to the test's NATS; all stopped at the end."""
    started: list[ServiceProcess] = []

    class Bound(ServiceProcess):
        def __init__(self, name: str, **env: str) -> None:
            super().__init__(name, tmp_path, TRIX_NATS_URL=nats_server.url, **env)
            started.append(self)

    yield Bound
    for proc in started:
        if proc.proc is not None and proc.proc.poll() is None:
            proc.proc.kill()
            proc.proc.wait()
