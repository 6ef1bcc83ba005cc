"""What the attacks of issue 18 run on: a NATS server with the generated users and
permissions (a bare nats-server, or `trix up`'s own with its real services), one
connection per NATS user that records the server's permission violations, and the
outcome of one attempt (refused by the server, or not)."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import queue
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import AsyncIterator, Awaitable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import nats
from nats.aio.client import Client

from support.nats import AuthNats
from trix.natsio import permissions
from trix.up import nats_url_of

REPO = Path(__file__).resolve().parents[2]
REFUSED = "refused"
ATTACK_LINES: list[str] = []
"""One line per attack attempt, printed at the end of the run (`make test-security`)."""


@dataclass
class Backend:
    """A NATS server running the platform's permissions; `url(user)` connects as that user."""

    name: str
    urls: dict[str, str]
    stop: Any = None
    gateways: list[str] = field(default_factory=list)
    """`trix up`: the gRPC targets of its gateway replicas (127.0.0.1:port)."""
    edge: str = ""
    """`trix up`: the gRPC target of its Envoy edge (in front of the first gateway)."""
    env: dict[str, str] = field(default_factory=dict)
    """`trix up`: the gateway secrets it generated (TRIX_GATEWAY_TOKEN_KEY, TRIX_GATEWAY_EDGE_SECRET)."""
    targets: dict[str, str] = field(default_factory=dict)
    """`trix up`: every service process's gRPC target by name (gateway-1, scoring, ...)."""

    def url(self, user: str) -> str:
        return self.urls[user]


def bare_nats(workdir: Path) -> Backend:
    """A JetStream nats-server (`support.nats.AuthNats`) with every user, provisioned."""
    server = AuthNats(workdir, users=permissions.USERS)
    try:
        server.start()
    except BaseException:
        server.stop()
        raise
    return Backend("nats-server", {u: server.url(u) for u in server.passwords}, server.stop)


def trix_up(workdir: Path, ready_timeout_s: float = 240.0) -> Backend:
    """`trix up` (its NATS, provisioner and real services, two gateway replicas and the Envoy
    edge in front of the first), until its `ready` line."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("TRIX_")}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO / "services"), env.get("PYTHONPATH", "")]))
    env["PYTHONUNBUFFERED"] = "1"
    state = workdir / "state"
    argv = [sys.executable, "-m", "trix.cli", "up", "--state-dir", str(state), "--fresh", "--grace", "5"]
    argv += ["--edge", "--replicas", "gateway=2"]
    proc = subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    lines: queue.Queue[str] = queue.Queue()
    output: list[str] = []

    def read() -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            lines.put(line.rstrip("\n"))

    threading.Thread(target=read, daemon=True).start()

    def stop() -> None:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(60)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()

    deadline = time.monotonic() + ready_timeout_s
    try:
        while True:
            if time.monotonic() > deadline or proc.poll() is not None:
                raise RuntimeError("trix up did not get ready:\n" + "\n".join(output[-40:]))
            try:
                line = lines.get(timeout=0.2)
            except queue.Empty:
                continue
            output.append(line)
            if re.search(r"trix up: ready", line):
                break
        urls = {u: nats_url_of(state, u) for u in permissions.USERS}
        targets = dict(m.groups() for line in output if (m := re.search(r"trix up: (\S+)\s+grpc=(\S+)", line)))
        gateways = [target for name, target in targets.items() if name.startswith("gateway")]
        edge = next(m.group(1) for line in output if (m := re.search(r"trix up: edge\s+http://(\S+)", line)))
        secrets_file = state / "gateway-secrets.json"  # what trix up generated (mode 0600)
        given = json.loads(secrets_file.read_text()) if secrets_file.exists() else {}
    except BaseException:
        stop()
        raise
    return Backend("trix up", urls, stop, gateways, edge, given, targets)


@dataclass
class Conn:
    """One NATS connection as `user`, with the permission violations the server reported."""

    user: str
    nc: Client
    violations: list[str] = field(default_factory=list)

    def violated(self, subject: str) -> bool:
        wanted = f'"{subject}"'.lower()
        return any(wanted in v for v in self.violations)


@contextlib.asynccontextmanager
async def connected(backend: Backend, user: str) -> AsyncIterator[Conn]:
    conn: Conn | None = None

    async def on_error(exc: Exception) -> None:
        if conn is not None and "permissions violation" in str(exc).lower():
            conn.violations.append(str(exc).lower())

    nc = await nats.connect(
        backend.url(user),
        name=f"attacker-{user}",
        inbox_prefix=permissions.inbox_prefix(user).encode(),
        error_cb=on_error,
        max_reconnect_attempts=0,
    )
    conn = Conn(user, nc)
    try:
        yield conn
    finally:
        await nc.close()


async def attempt(conn: Conn, op: Awaitable[object], subject: str, timeout_s: float = 30.0) -> str:
    """Run one attack: REFUSED once the server reports a permissions violation on `subject`,
    else what happened instead (it went through, or failed for another reason)."""
    task = asyncio.ensure_future(op)
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout_s
    try:
        while loop.time() < deadline:
            if conn.violated(subject):
                return REFUSED
            if task.done():
                exc = task.exception()
                await asyncio.sleep(0.3)  # a violation may arrive just after the reply
                if conn.violated(subject):
                    return REFUSED
                return "ALLOWED" if exc is None else f"failed otherwise ({type(exc).__name__}: {exc})"
            await asyncio.sleep(0.01)
        return "no answer and no refusal"
    finally:
        if not task.done():
            task.cancel()
            with contextlib.suppress(BaseException):
                await task


def report(backend: Backend, attack: str, user: str, outcome: str) -> str:
    line = f"{attack:<50} as {user:<12} on {backend.name:<12} {outcome}"
    ATTACK_LINES.append(line)
    return line
