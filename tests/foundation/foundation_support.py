"""Helpers of the foundation tests: a real nats-server and service subprocesses on free ports."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from support.keys import SuiteKeys
from support.processes import stop_process
from trix.natsio.connection import NatsConnection
from trix.processes import free_port
from trix.runtime.identity import GATEWAY_KEY_ENV, PLAYER_KEY_ENV

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


KEYS = SuiteKeys("foundation-tests")


def service_env(service: str = "", **overrides: str) -> dict[str, str]:
    """Environment for a service subprocess: the repo's `trix` importable, our overrides on top;
    with `service`, the signing and public keys that service is given (ADR 0028)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("TRIX_")}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(SERVICES_DIR), env.get("PYTHONPATH", "")]))
    env["PYTHONUNBUFFERED"] = "1"
    # The internal token keys every service needs (trix.runtime.identity; without them it exits 2).
    env[PLAYER_KEY_ENV] = "f" * 32 + "-player"
    env.update(KEYS.env(service) if service else {})
    env[GATEWAY_KEY_ENV] = "f" * 32 + "-gateway"  # the gateway's public-token key (ADR 0018)
    env.update(overrides)
    return env


class ServiceProcess:
    """`python -m trix.<name>` as a subprocess with fixed free ports; stderr captured to a file."""

    def __init__(self, name: str, workdir: Path, **env: str) -> None:
        self.name = name
        self.grpc_port = free_port()
        self.metrics_port = free_port()
        self.stderr_path = workdir / f"{name}.stderr"
        self.env = service_env(
            name, TRIX_GRPC_PORT=str(self.grpc_port), TRIX_METRICS_PORT=str(self.metrics_port), **env
        )
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
        code = stop_process(self.proc, grace_s=30)
        assert code is not None
        return code
