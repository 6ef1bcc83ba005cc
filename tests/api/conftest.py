"""Fixtures of the API contract tests (issue 40): the whole platform as `trix up --edge` starts
it (real nats-server, the five services as processes, the real C engine, a real Envoy edge)
with the gateway's default rate limits, once per session; the tests talk native gRPC over
HTTP/2 to the edge, as a mobile client does. Every process the fixture starts, it stops."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from trix.embedded import EmbeddedPlatform


@pytest.fixture(scope="session")
def edge(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The edge's gRPC target (host:port): native gRPC through Envoy."""
    state: Path = tmp_path_factory.mktemp("api-platform")
    embedded = EmbeddedPlatform(state, fresh=True, env={"TRIX_MATCHMAKING_BOT_FILL_S": "0"}, edge=True)
    try:
        embedded.start()
        parts = urlsplit(embedded.edge_url)
        yield f"{parts.hostname}:{parts.port}"
    finally:
        embedded.stop()
