"""Helpers of the matchmaking tests: a real nats-server, in-process and subprocess replicas,
a signed-identity gRPC client and a reader of the MatchFormed stream."""

from __future__ import annotations

import asyncio
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import grpc
import nats

from trix.matchmaking.__main__ import build
from trix.matchmaking.config import MatchmakingConfig
from trix.matchmaking.service import MatchmakingService
from trix.natsio import subjects
from trix.runtime.config import RuntimeConfig
from trix.runtime.identity import IDENTITY_METADATA, sign
from trix.runtime.server import Runtime
from trix.up import free_port, nats_server_binary
from trix.v1 import events_pb2, matchmaking_pb2_grpc

REPO = Path(__file__).resolve().parents[2]
TOKEN_KEY = "test-internal-key"


def wait_port(port: int, timeout_s: float = 20.0) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return
        except OSError:
            time.sleep(0.05)
    raise TimeoutError(f"nothing listening on 127.0.0.1:{port}")


class NatsServer:
    """A JetStream nats-server on a free port (its store in the test's tmp dir)."""

    def __init__(self, workdir: Path) -> None:
        self.port = free_port()
        self.conf = workdir / "nats.conf"
        self.conf.write_text(
            f'listen: 127.0.0.1:{self.port}\nmax_payload: 1048576\njetstream {{\n  store_dir: "{workdir / "js"}"\n}}\n'
        )
        self.log = workdir / "nats.log"
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"nats://127.0.0.1:{self.port}"

    def start(self) -> None:
        with open(self.log, "ab") as log:
            self.proc = subprocess.Popen([nats_server_binary(), "-c", str(self.conf)], stdout=log, stderr=log)
        wait_port(self.port)

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.proc = None


class FakeClock:
    """An injected clock the test moves by hand."""

    def __init__(self, now: float = 1_000_000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


def config(nats_url: str, **overrides: Any) -> MatchmakingConfig:
    runtime = RuntimeConfig.from_env(
        "matchmaking",
        {"TRIX_NATS_URL": nats_url, "TRIX_METRICS_PORT": "-1", "TRIX_SHUTDOWN_GRACE_S": "1", "TRIX_DRAIN_DELAY_S": "0"},
    )
    base: dict[str, Any] = {"runtime": runtime, "internal_token_key": TOKEN_KEY, "partitions": 4, "tick_s": 0.02}
    base.update(overrides)
    return MatchmakingConfig(**base)


async def start_replica(cfg: MatchmakingConfig, service: MatchmakingService) -> Runtime:
    runtime = build(cfg, service)
    await runtime.start()
    return runtime


def identity(player: str) -> tuple[tuple[str, str], ...]:
    return ((IDENTITY_METADATA, sign(TOKEN_KEY.encode(), player, int(time.time()) + 3600)),)


def stub(address: str) -> tuple[grpc.aio.Channel, matchmaking_pb2_grpc.MatchmakingServiceStub]:
    channel = grpc.aio.insecure_channel(address)
    return channel, matchmaking_pb2_grpc.MatchmakingServiceStub(channel)


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
            TRIX_INTERNAL_TOKEN_KEY=TOKEN_KEY,
            TRIX_LOG_LEVEL="warning",
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
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
