"""Helpers of the matchmaking tests: a real nats-server, in-process and subprocess replicas,
a signed-identity gRPC client and a reader of the MatchFormed stream."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import grpc
import nats

from support.keys import SuiteKeys
from support.ports import wait_port
from support.processes import kill_process, stop_process
from support.scoring import InProcessScoring
from support.scoring import scoring_env as shared_env
from trix.matchmaking.__main__ import build
from trix.matchmaking.bootstrap import NewMatchmaking
from trix.matchmaking.config import MatchmakingConfig
from trix.matchmaking.service import MatchmakingService
from trix.natsio import subjects
from trix.processes import free_port
from trix.runtime.config import RuntimeConfig
from trix.runtime.identity import IDENTITY_METADATA, ROLE_PLAYER
from trix.runtime.server import Runtime
from trix.v1 import events_pb2, matchmaking_pb2_grpc, scoring_pb2

REPO = Path(__file__).resolve().parents[2]
KEYS = SuiteKeys("mm-tests")


def config(nats_url: str, **overrides: Any) -> MatchmakingConfig:
    runtime = RuntimeConfig.from_env(
        "matchmaking",
        {"TRIX_NATS_URL": nats_url, "TRIX_METRICS_PORT": "-1", "TRIX_SHUTDOWN_GRACE_S": "1", "TRIX_DRAIN_DELAY_S": "0"},
    )
    base: dict[str, Any] = {"runtime": runtime, "keys": KEYS.keys("matchmaking"), "partitions": 4, "tick_s": 0.02}
    base.update(overrides)
    return MatchmakingConfig(**base)


async def start_replica(cfg: MatchmakingConfig, new_service: NewMatchmaking) -> Runtime:
    runtime = build(cfg, new_service)
    await runtime.start()
    return runtime


def service_of(runtime: Runtime) -> MatchmakingService:
    """The service a started replica built."""
    assert isinstance(runtime.service, MatchmakingService)
    return runtime.service


def identity(player: str) -> tuple[tuple[str, str], ...]:
    return ((IDENTITY_METADATA, KEYS.token(ROLE_PLAYER, player)),)


def stub(address: str) -> tuple[grpc.aio.Channel, matchmaking_pb2_grpc.MatchmakingServiceStub]:
    channel = grpc.aio.insecure_channel(address)
    return channel, matchmaking_pb2_grpc.MatchmakingServiceStub(channel)


async def serving_replica(
    cfg: MatchmakingConfig, new_service: NewMatchmaking
) -> tuple[Runtime, grpc.aio.Channel, matchmaking_pb2_grpc.MatchmakingServiceStub]:
    """A started replica and a stub to it, once the replica has leased every partition."""
    runtime = await start_replica(cfg, new_service)
    service = service_of(runtime)
    channel, api = stub(runtime.address)
    for _ in range(200):
        if len(service.pools) == cfg.partitions:
            break
        await asyncio.sleep(0.05)
    return runtime, channel, api


async def read_matches(url: str, expect: int | None = None, timeout_s: float = 30.0) -> list[events_pb2.MatchFormed]:
    """Every MatchFormed stored in the MATCHES stream (waiting for `expect` of them)."""
    nc = await nats.connect(url)
    js = nc.jetstream()
    deadline = time.monotonic() + timeout_s
    try:
        while True:
            info = await js.stream_info("MATCHES")
            if expect is None or info.state.messages >= expect or time.monotonic() > deadline:
                break
            await asyncio.sleep(0.2)
        out: list[events_pb2.MatchFormed] = []
        sub = await js.subscribe(subjects.match_formed(), ordered_consumer=True)
        for _ in range(info.state.messages):
            msg = await sub.next_msg(timeout=10)
            event = events_pb2.Event()
            event.ParseFromString(msg.data)
            out.append(event.match_formed)
        await sub.unsubscribe()
        return out
    finally:
        await nc.close()


class ReplicaProcess:
    """`python -m trix.matchmaking` as a subprocess."""

    def __init__(self, name: str, workdir: Path, nats_url: str, **env: str) -> None:
        self.name = name
        self.port = free_port()
        self.log_path = workdir / f"{name}.log"
        self.env = {k: v for k, v in os.environ.items() if not k.startswith("TRIX_")}
        self.env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO / "services"), self.env.get("PYTHONPATH")]))
        self.env.update(
            TRIX_INSTANCE=name,
            TRIX_GRPC_PORT=str(self.port),
            TRIX_METRICS_PORT="-1",
            TRIX_NATS_URL=nats_url,
            TRIX_LOG_LEVEL="warning",
            **KEYS.env("matchmaking"),
        )
        self.env.update(env)
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    def start(self) -> None:
        with open(self.log_path, "ab") as log:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "trix.matchmaking"], env=self.env, stdout=log, stderr=log
            )
        wait_port(self.port, 30)

    def kill(self) -> None:
        kill_process(self.proc)

    def stop(self) -> None:
        stop_process(self.proc, grace_s=15)


SCORING_ADMIN_TOKEN = "test-scoring-admin"
SCORING_ADMIN = (("x-trix-admin-token", SCORING_ADMIN_TOKEN),)


def scoring_env(nats_url: str, **extra: str) -> dict[str, str]:
    """Scoring with the keys matchmaking signs its stake calls with (a HoldStake without one is refused)."""
    return shared_env(
        nats_url,
        admin_token=SCORING_ADMIN_TOKEN,
        keys=KEYS,
        **extra,
    )


class ScoringApp(InProcessScoring):
    """The real scoring service in this process (`support.scoring`) over the test's nats-server,
    with grants, balances and totals through its stub."""

    def __init__(self, nats_url: str) -> None:
        super().__init__(scoring_env(nats_url))

    async def grant(self, player: str, coins: int) -> None:
        request = scoring_pb2.GrantRequest(player_id=player, amount=coins, grant_id=f"grant-{player}")
        await self.stub.Grant(request, metadata=SCORING_ADMIN, timeout=30)

    async def balance(self, player: str) -> tuple[int, int]:
        got = await self.stub.GetBalance(
            scoring_pb2.GetBalanceRequest(player_id=player), metadata=SCORING_ADMIN, timeout=30
        )
        return got.available, got.held

    async def totals(self) -> scoring_pb2.GetWalletTotalsResponse:
        return await self.stub.GetWalletTotals(scoring_pb2.GetWalletTotalsRequest(), metadata=SCORING_ADMIN, timeout=30)


async def publish_rated_game(nats_url: str, table_id: str, players: list[str], ranking: list[int]) -> None:
    """A finished TRIX game as the table service reports it (TableCreated, GameEnded with a record
    showing a card played), so scoring rates its four players (ADR 0004)."""
    import json

    from google.protobuf.timestamp_pb2 import Timestamp

    from trix.v1 import common_pb2

    nc = await nats.connect(nats_url)
    try:
        js = nc.jetstream(timeout=10)
        record = {
            "format": "trix-game/1",
            "variant": "TRIX",
            "players": players,
            "deals": [{"contract": "KING", "plays": [{"seat": 0, "card": "2C"}]}],
            "totals": [0, 0, 0, 0],
            "ranking": ranking,
        }
        bodies: list[dict[str, Any]] = [
            {
                "table_created": events_pb2.TableCreated(
                    variant=common_pb2.VARIANT_TRIX,
                    seats=[common_pb2.Seat(index=s, player_id=p) for s, p in enumerate(players)],
                )
            },
            {
                "game_ended": events_pb2.GameEnded(
                    record_json=json.dumps(record),
                    totals=common_pb2.SeatScores(values=[0, 0, 0, 0]),
                    ranking=ranking,
                    left_seat=-1,
                )
            },
        ]
        for sequence, body in enumerate(bodies, start=1):
            stamp = Timestamp()
            stamp.FromMilliseconds(1_700_000_000_000 + sequence)
            event = events_pb2.Event(table_id=table_id, sequence=sequence, time=stamp, **body)
            await js.publish(
                subjects.table_results(table_id),
                event.SerializeToString(),
                headers={"Nats-Msg-Id": f"{table_id}:{sequence}"},
            )
    finally:
        await nc.close()


class ScoringProcess:
    """`python -m trix.scoring` as a subprocess (the wallet of replica tests), with a stub."""

    def __init__(self, workdir: Path, nats_url: str) -> None:
        self.port = free_port()
        self.log_path = workdir / "scoring.log"
        self.env = {k: v for k, v in os.environ.items() if not k.startswith("TRIX_")}
        self.env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO / "services"), self.env.get("PYTHONPATH")]))
        self.env.update(scoring_env(nats_url, TRIX_GRPC_PORT=str(self.port)))
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    def start(self) -> None:
        with open(self.log_path, "ab") as log:
            self.proc = subprocess.Popen([sys.executable, "-m", "trix.scoring"], env=self.env, stdout=log, stderr=log)
        wait_port(self.port, 30)

    def stop(self) -> None:
        stop_process(self.proc, grace_s=15)
