"""Fixtures of the browser-client tests (issue 20): the whole platform as `trix up` runs
it (real nats-server, the five services as processes, the real Envoy edge serving the
built app on its origin through trix.webapp), started once per session by
`trix.embedded.EmbeddedPlatform` and stopped by the fixture. The edge ends silent streams
after STREAM_IDLE_S (600 s in production) so that every browser test also proves the
client survives it, and tokens live TOKEN_TTL_S (900 s in production) so that every test also
proves the client refreshes its token."""

from __future__ import annotations

import os
import shutil
from collections.abc import Generator, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from trix.embedded import EmbeddedPlatform

TLS = os.environ.get("TRIX_WEB_TLS", "") == "1"
"""TRIX_WEB_TLS=1: the platform as `trix up --tls` runs it (the edge HTTPS only), the browser and
the HTTP client trusting its CA (issue 41); plain HTTP on loopback by default."""

WEB_DIST = Path(__file__).resolve().parents[2] / "web" / "dist"
ARTIFACTS = (
    Path(os.environ.get("TRIX_TEST_ARTIFACTS") or Path(__file__).resolve().parents[2] / "test-artifacts") / "web"
)
"""Where every browser test's screenshots are kept after the run (issue 39: phone and desktop,
both languages, for review by eye): `test-artifacts/web/<test>/` (git-ignored), or under
$TRIX_TEST_ARTIFACTS."""
STREAM_IDLE_S = 4.0
TOKEN_TTL_S = 12
"""Public tokens live 12 s here (900 s in production): every browser test runs on tokens that
expire many times over, so each also proves the app refreshes its token by itself (ADR 0018)."""
COMPETITION_REVIEW_S = 8
"""A competition's review period after its final (10 minutes in production, issue 43)."""


@dataclass
class WebPlatform:
    url: str
    """http://127.0.0.1:<edge port>/ (https://localhost:<port>/ with TLS): the app, and gRPC-Web beside it."""
    state_dir: Path
    ca_file: str | None = None
    """The CA the edge's certificate is verified with (TRIX_WEB_TLS=1); None: plain HTTP."""
    gateway: str = ""
    """The gateway's gRPC address (host:port), for a test's players that are not browsers."""


@pytest.fixture(scope="session")
def web_platform(tmp_path_factory: pytest.TempPathFactory) -> Iterator[WebPlatform]:
    assert (WEB_DIST / "index.html").is_file(), "the web app is not built: make web-build"
    state = tmp_path_factory.mktemp("web-platform")
    env = {
        "TRIX_GATEWAY_RATE_PER_S": "400",
        "TRIX_GATEWAY_RATE_BURST": "400",
        "TRIX_MATCHMAKING_BOT_FILL_S": "0",
        "TRIX_GATEWAY_TOKEN_TTL_S": str(TOKEN_TTL_S),
        "TRIX_COMPETITIONS_REVIEW_S": str(COMPETITION_REVIEW_S),
    }
    embedded = EmbeddedPlatform(state, fresh=True, env=env, edge=True, edge_stream_idle_s=STREAM_IDLE_S, tls=TLS)
    try:
        embedded.start()
        yield WebPlatform(embedded.edge_url + "/", state, embedded.ca_file, embedded.gateway_target)
    finally:
        embedded.stop()


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    """Each phase's report on the item (`item.rep_call`): fixtures save a failed test's
    screenshots and browser logs (test_browser.Pages)."""
    report = yield
    setattr(item, f"rep_{report.when}", report)
    return report


@pytest.fixture(autouse=True)
def keep_screenshots(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[None]:
    """After each browser test, its screenshots (the PNGs it wrote to its tmp dir) are copied
    to ARTIFACTS/<test name>/, which outlives pytest's rotation of tmp dirs."""
    yield
    shots = sorted(tmp_path.rglob("*.png"))
    if not shots:
        return
    kept = ARTIFACTS / request.node.name
    shutil.rmtree(kept, ignore_errors=True)
    kept.mkdir(parents=True)
    for shot in shots:
        shutil.copy2(shot, kept / shot.name)
