"""Fixtures of the security tests (issue 18): each attack runs against a bare nats-server
with the generated permissions and against `trix up`'s own NATS with its real services;
every process a fixture starts, the fixture stops. The attacks' outcomes are printed last,
one line each."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from security_support import ATTACK_LINES, Backend, bare_nats, trix_up


@pytest.fixture(scope="session", params=["nats-server", "trix-up"])
def backend(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Backend]:
    workdir = tmp_path_factory.mktemp(str(request.param))
    server = bare_nats(workdir) if request.param == "nats-server" else trix_up(workdir)
    try:
        yield server
    finally:
        server.stop()


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    if ATTACK_LINES:
        terminalreporter.section("attacks (issue 18)")
        for line in ATTACK_LINES:
            terminalreporter.write_line(line)
