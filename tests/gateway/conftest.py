"""Fixtures of the gateway tests: the whole platform (real nats-server, the five
services as processes, real gRPC on 127.0.0.1, the real C engine, a real Envoy edge in
front of the gateway) started once per session through `trix.embedded.EmbeddedPlatform`,
and stopped by the fixture."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from gateway_support import Platform

from trix.embedded import EmbeddedPlatform
from trix.runtime.identity import PLAYER_KEY_ENV


@pytest.fixture(scope="session")
def platform(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Platform]:
    state: Path = tmp_path_factory.mktemp("gateway-platform")
    env = {
        "TRIX_GATEWAY_RATE_PER_S": "400",
        "TRIX_GATEWAY_RATE_BURST": "400",
        "TRIX_MATCHMAKING_BOT_FILL_S": "0",
    }
    embedded = EmbeddedPlatform(state, fresh=True, env=env, edge=True)
    try:
        target = embedded.start()
        gateway = next(c for c in embedded.supervisor.services if c.name == "gateway")
        assert gateway.proc is not None
        # The gateway's player-token key (trix up generates it per run): tests that talk to the
        # table as a player sign with it, as the gateway does.
        env = {**embedded.env, PLAYER_KEY_ENV: gateway.env[PLAYER_KEY_ENV]}
        yield Platform(target, env, state, gateway.proc.pid, embedded.edge_url)
    finally:
        embedded.stop()
