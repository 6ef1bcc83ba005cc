"""Helpers of the competitions service tests: the real table service and the competitions
service in the test's event loop (real nats-server with one user per service, real gRPC on
127.0.0.1, the C engine), the competitions service on a clock the test moves."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import grpc

from support.nats import AuthNats
from support.table import KEYS, table_env
from trix.competitions.__main__ import build as build_competitions
from trix.competitions.config import DIGEST_DIR_ENV, CompetitionsConfig
from trix.competitions.ports import Digests, EventLog, Tables
from trix.competitions.service import CompetitionsService
from trix.runtime.identity import (
    IDENTITY_METADATA,
    ROLE_PLAYER,
    ROLE_SERVICE,
    sign,
)
from trix.runtime.server import Runtime
from trix.table.__main__ import build as build_table
from trix.table.config import TableConfig
from trix.v1 import common_pb2, competitions_pb2_grpc
from trix.v1 import competitions_pb2 as pb

SEED = bytes(range(32))
NO_TIMERS = {"TRIX_COMPETITIONS_AWAIT_PLAYERS": "0"}
"""No timers run here to end a table's seed turn: auto-played seats are played at once (docs/rules.md §10)."""


def env(nats_url: str, service: str = "table", **extra: str) -> dict[str, str]:
    """A service's environment on the test's NATS user, its own keys, its gRPC on a port the OS picks."""
    return table_env(nats_url, service, TRIX_GRPC_PORT="0", TRIX_SHUTDOWN_GRACE_S="0.5", **extra)


class Clock:
    """Milliseconds since the epoch that move only when the test says."""

    def __init__(self) -> None:
        self.ms = time.time_ns() // 1_000_000

    def __call__(self) -> int:
        return self.ms


class Platform:
    """The table service and the competitions service (restartable) on one nats-server."""

    def __init__(self, nats: AuthNats, digest_dir: Path) -> None:
        self.nats = nats
        self.clock = Clock()
        self.digest_dir = digest_dir
        self.table: Runtime | None = None
        self.competitions: Runtime | None = None
        self.channel: grpc.aio.Channel | None = None
        self.stub: Any = None
        self.competitions_env: dict[str, str] = {}
        """More of the competitions service's environment (scoring's address: a paid competition)."""

    def _new_service(self, config: CompetitionsConfig, events: EventLog, tables: Tables, digests: Digests) -> Any:
        return CompetitionsService(config, events, tables, digests, clock_ms=self.clock, new_seed=lambda: SEED)

    async def start(self) -> None:
        await self.start_table()
        await self.start_competitions()

    async def start_table(self) -> None:
        self.table = build_table(TableConfig.from_env(env(self.nats.url("table"))))
        await self.table.start()

    async def stop_table(self) -> None:
        if self.table is not None:
            await self.table.stop()
            self.table = None

    async def start_competitions(self) -> None:
        config = CompetitionsConfig.from_env(
            env(
                self.nats.url("competitions"),
                "competitions",
                **{
                    DIGEST_DIR_ENV: str(self.digest_dir),
                    "TRIX_COMPETITIONS_TICK_S": "0.05",
                    **NO_TIMERS,
                    **self.competitions_env,
                },
            )
        )
        self.competitions = build_competitions(config, self._new_service)
        await self.competitions.start()
        self.channel = grpc.aio.insecure_channel(self.competitions.address)
        self.stub = competitions_pb2_grpc.CompetitionsServiceStub(self.channel)

    async def stop_competitions(self) -> None:
        if self.channel is not None:
            await self.channel.close()
            self.channel = None
        if self.competitions is not None:
            await self.competitions.stop()
            self.competitions = None

    async def stop(self) -> None:
        await self.stop_competitions()
        await self.stop_table()

    async def competition(self, cid: str) -> pb.Competition:
        """The competition as the service shows it now (GetCompetition, as the operators)."""
        return (
            await self.stub.GetCompetition(pb.GetCompetitionRequest(competition_id=cid), metadata=admin())
        ).competition


@asynccontextmanager
async def running(nats: AuthNats, digest_dir: Path, **competitions_env: str) -> AsyncIterator[Platform]:
    """A started `Platform` (its competitions service with `competitions_env` more), stopped after."""
    p = Platform(nats, digest_dir)
    p.competitions_env = competitions_env
    await p.start()
    try:
        yield p
    finally:
        await p.stop()


def admin() -> tuple[tuple[str, str]]:
    return ((IDENTITY_METADATA, KEYS.token(ROLE_SERVICE, "admin")),)


def player(name: str) -> tuple[tuple[str, str]]:
    return ((IDENTITY_METADATA, sign(KEYS.player, ROLE_PLAYER, name, time.time())),)


def free_knockout(now_ms: int, capacity: int = 16, rounds: int = 2) -> pb.CompetitionOptions:
    """A free knockout of COMPLEX (8 deals a game) with bot fill, starting a minute on."""
    return pb.CompetitionOptions(
        variant=common_pb2.VARIANT_COMPLEX,
        format=pb.COMPETITION_FORMAT_KNOCKOUT,
        rounds=rounds,
        capacity=capacity,
        starts_at_ms=now_ms + 60_000,
        registration_closes_at_ms=now_ms + 30_000,
        bot_fill=True,
        speed=pb.COMPETITION_SPEED_FAST,
    )


async def one_table_knockout(p: Platform, request_id: str, players: Sequence[str]) -> str:
    """A free one-round knockout of four seats (`free_knockout`, bots fill the rest) created by
    the admin with `players` registered: its id."""
    options = free_knockout(p.clock(), capacity=4, rounds=1)
    created = await p.stub.CreateCompetition(
        pb.CreateCompetitionRequest(options=options, request_id=request_id), metadata=admin()
    )
    cid: str = created.competition.competition_id
    for name in players:
        await p.stub.RegisterEntrant(pb.RegisterEntrantRequest(competition_id=cid), metadata=player(name))
    return cid
