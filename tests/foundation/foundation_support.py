"""Helpers of the foundation tests: a real nats-server and service subprocesses on free ports."""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from trix.natsio.connection import NatsConnection
from trix.runtime.identity import PLAYER_KEY_ENV, SERVICE_KEY_ENV
from trix.up import free_port, nats_server_binary

REPO = Path(__file__).resolve().parents[2]
SERVICES_DIR = REPO / "services"


@contextlib.asynccontextmanager
async def connected(url: str, name: str, **options: Any) -> AsyncIterator[NatsConnection]:
    """A NatsConnection (provisioned) for the block, drained after it."""
    conn = NatsConnection(url, name, **options)
    await conn.connect(give_up_after_s=30)
    try:
        yield conn
    finally:
        await conn.drain()


def wait_port(port: int, timeout_s: float = 20.0) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return
        except OSError:
            time.sleep(0.05)
    raise TimeoutError(f"nothing listening on 127.0.0.1:{port} after {timeout_s}s")


class NatsServer:
    """A JetStream nats-server that can be stopped and started again on the same port and store."""

    def __init__(self, workdir: Path) -> None:
        self.port = free_port()
        self.store = workdir / "jetstream"
        self.conf = workdir / "nats.conf"
        self.log = workdir / "nats.log"
        self.conf.write_text(
            f'listen: 127.0.0.1:{self.port}\njetstream {{\n  store_dir: "{self.store}"\n  sync_interval: always\n}}\n'
        )
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"nats://127.0.0.1:{self.port}"

    def start(self) -> None:
        with open(self.log, "ab") as log:
            self.proc = subprocess.Popen(
                [nats_server_binary(), "-c", str(self.conf)], stdout=log, stderr=subprocess.STDOUT
            )
        wait_port(self.port)

    def stop(self) -> None:
        if self.proc is None:
            return
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.proc = None


def service_env(**overrides: str) -> dict[str, str]:
    """Environment for a service subprocess: the repo's `trix` importable, our overrides on top."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("TRIX_")}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(SERVICES_DIR), env.get("PYTHONPATH", "")]))
    env["PYTHONUNBUFFERED"] = "1"
    # The internal token keys every service needs (trix.runtime.identity; without them it exits 2).
    env.update({PLAYER_KEY_ENV: "f" * 32 + "-player", SERVICE_KEY_ENV: "f" * 32 + "-service"})
    env.update(overrides)
    return env


class ServiceProcess:
    """`python -m trix.<name>` as a subprocess with fixed free ports; stderr captured to a file."""

    def __init__(self, name: str, workdir: Path, **env: str) -> None:
        self.name = name
        self.grpc_port = free_port()
        self.metrics_port = free_port()
        self.stderr_path = workdir / f"{name}.stderr"
        self.env = service_env(TRIX_GRPC_PORT=str(self.grpc_port), TRIX_METRICS_PORT=str(self.metrics_port), **env)
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        with open(self.stderr_path, "wb") as err:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", f"trix.{self.name}"], env=self.env, stdout=err, stderr=subprocess.STDOUT
            )

    def stderr_lines(self) -> list[str]:
        return self.stderr_path.read_text().splitlines()

    def stop(self) -> int:
        assert self.proc is not None
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                return self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        return self.proc.returncode
