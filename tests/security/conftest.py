"""Fixtures of the security tests (issue 18): each attack runs against a bare nats-server
with the generated permissions and against `trix up`'s own NATS with its real services;
every process a fixture starts, the fixture stops. The attacks' outcomes are printed last,
one line each."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from security_support import ATTACK_LINES, Backend, bare_nats, trix_up


@pytest.fixture(scope="session")
def up_platform(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Backend]:
    """One `trix up` for the whole run: its NATS (the attacks), its gateways and edge."""
    server = trix_up(tmp_path_factory.mktemp("trix-up"))
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="session")
def bare_backend(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Backend]:
    server = bare_nats(tmp_path_factory.mktemp("nats-server"))
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="session", params=["nats-server", "trix-up"])
def backend(request: pytest.FixtureRequest) -> Backend:
    server: Backend = request.getfixturevalue("bare_backend" if request.param == "nats-server" else "up_platform")
    return server


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    if ATTACK_LINES:
        terminalreporter.section("attacks (issue 18)")
        for line in ATTACK_LINES:
            terminalreporter.write_line(line)
