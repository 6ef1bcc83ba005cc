"""Fixtures of the table tests: a real nats-server with per-service users on a free
port, the table service in-process (real gRPC on 127.0.0.1, real NATS, real C engine),
and a gateway client. Every process a fixture starts, the fixture stops."""

from __future__ import annotations

import random
from collections.abc import AsyncIterator
from functools import partial

import nats
import pytest

from support.nats import AuthNats
from support.scoring import InProcessScoring as SharedScoring
from support.table import GatewayClient, table_env
from trix.natsio.permissions import inbox_prefix
from trix.runtime.server import Runtime
from trix.table.__main__ import build
from trix.table.config import TableConfig
from trix.table.service import TableService

SCORING_ADMIN = "table-tests-scoring-admin"


class InProcessTable:
    """The table service running in the test's event loop; `restart()` simulates a new process."""

    def __init__(self, nats_url: str, seed: int) -> None:
        self.env = table_env(nats_url, TRIX_GRPC_PORT="0", TRIX_TABLE_SNAPSHOT_EVERY="7")
        self.rng = random.Random(seed)
        self.runtime: Runtime | None = None
        self.service: TableService | None = None

    async def start(self) -> None:
        config = TableConfig.from_env(self.env)
        self.runtime = build(config, partial(TableService, new_seed=partial(self.rng.randbytes, 32)))
        await self.runtime.start()
        assert isinstance(self.runtime.service, TableService)
        self.service = self.runtime.service

    async def crash(self) -> None:
        """Drop everything without draining (what a SIGKILL leaves behind)."""
        assert self.runtime is not None and self.runtime.nats is not None
        await self.runtime.nats.client.close()
        self.runtime.config = self.runtime.config.__class__(
            **{**self.runtime.config.__dict__, "shutdown_grace_s": 0.0, "drain_delay_s": 0.0}
        )
        await self.runtime.stop()
        self.runtime = None

    async def stop(self) -> None:
        if self.runtime is not None:
            await self.runtime.stop()
            self.runtime = None

    @property
    def address(self) -> str:
        assert self.runtime is not None
        return self.runtime.address


@pytest.fixture
async def table_service(auth_nats: AuthNats) -> AsyncIterator[InProcessTable]:
    table = InProcessTable(auth_nats.url("table"), seed=4)
    await table.start()
    try:
        yield table
    finally:
        await table.stop()


@pytest.fixture
async def gateway(auth_nats: AuthNats) -> AsyncIterator[GatewayClient]:
    client = await GatewayClient.connect(auth_nats.url("gateway"))
    try:
        yield client
    finally:
        await client.nc.close()


@pytest.fixture
async def table_nc(auth_nats: AuthNats) -> AsyncIterator[nats.aio.client.Client]:
    """A NATS connection as the table user (to read logs and snapshots in checks)."""
    nc = await nats.connect(auth_nats.url("table"), inbox_prefix=inbox_prefix("table").encode())
    try:
        yield nc
    finally:
        await nc.close()


class InProcessScoring(SharedScoring):
    """The scoring service in the test's event loop as its own NATS user (`support.scoring`), for
    the tests that need a game's record archived or a stake settled."""

    def __init__(self, nats_url: str) -> None:
        super().__init__(table_env(nats_url, "scoring", TRIX_GRPC_PORT="0", TRIX_SCORING_ADMIN_TOKEN=SCORING_ADMIN))


@pytest.fixture
async def scoring(auth_nats: AuthNats) -> AsyncIterator[InProcessScoring]:
    """Scoring, not started: the test starts (and may stop and restart) it."""
    app = InProcessScoring(auth_nats.url("scoring"))
    try:
        yield app
    finally:
        await app.stop()
