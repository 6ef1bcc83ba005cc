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
import secrets
import signal
import subprocess
import sys
import threading
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import grpc
import nats
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from nats.aio.client import Client

from support.nats import AuthNats
from support.processes import stop_process
from trix.natsio import permissions
from trix.processes import free_port
from trix.runtime.identity import PLAYER_KEY_ENV, sign_service
from trix.scoring.config import SCORING_ADMIN_ENV
from trix.state_folder import SIGNING_KEYS_FILE, nats_url_of

REPO = Path(__file__).resolve().parents[2]
REFUSED = "refused"
ATTACK_LINES: list[str] = []
"""One line per attack attempt, printed at the end of the run (`make test-security`)."""


def wait_serving(target: str, timeout_s: float) -> None:
    """Until a service's gRPC health check says SERVING (connected to NATS, its ports attached)."""
    from grpc_health.v1 import health_pb2, health_pb2_grpc

    deadline = time.monotonic() + timeout_s
    with grpc.insecure_channel(target) as channel:
        stub = health_pb2_grpc.HealthStub(channel)
        while time.monotonic() < deadline:
            with contextlib.suppress(grpc.RpcError):
                reply = stub.Check(health_pb2.HealthCheckRequest(service=""), timeout=1.0)
                if reply.status == health_pb2.HealthCheckResponse.SERVING:
                    return
            time.sleep(0.1)
    raise TimeoutError(f"{target} was not SERVING in {timeout_s:.0f}s")


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
    """`trix up`: the gateway secrets it generated (TRIX_GATEWAY_TOKEN_KEY, TRIX_GATEWAY_EDGE_SECRET),
    the player-role key it was given (TRIX_PLAYER_TOKEN_KEY) and scoring's admin token
    (TRIX_SCORING_ADMIN_TOKEN)."""
    targets: dict[str, str] = field(default_factory=dict)
    """`trix up`: every service process's gRPC target by name (gateway-1, scoring, ...)."""
    signing_keys: dict[str, str] = field(default_factory=dict)
    """`trix up`: each signer's private key it generated in its state folder (ADR 0028), the
    operators' (admin) too: what the tests sign service tokens with, as that signer."""

    def service_token(self, name: str, ttl_s: float = 60.0, *, key: str = "") -> str:
        """A service token in `name`, signed with that signer's own key (or `key`, a forgery)."""
        private = key or self.signing_keys[name]
        return sign_service(Ed25519PrivateKey.from_private_bytes(bytes.fromhex(private)), name, time.time(), ttl_s)

    def url(self, user: str) -> str:
        return self.urls[user]


IN_PROCESS = Backend("a process", {})
"""Where the attacks on one process's inputs and configuration run (no server)."""


def bare_nats(workdir: Path) -> Backend:
    """A JetStream nats-server (`support.nats.AuthNats`) with every user, provisioned."""
    server = AuthNats(workdir, users=permissions.USERS)
    try:
        server.start()
    except BaseException:
        server.stop()
        raise
    return Backend("nats-server", {u: server.url(u) for u in server.passwords}, server.stop)


ACCOUNTS_BURST = 20
"""TRIX_GATEWAY_NEW_ACCOUNTS_BURST of the suite's `trix up` (the default): new guest accounts
one address may create at once."""
ACCOUNTS_PER_HOUR = 1800
"""TRIX_GATEWAY_NEW_ACCOUNTS_PER_HOUR of the suite's `trix up` (60 by default): its refill."""


def trix_up(workdir: Path, ready_timeout_s: float = 240.0) -> Backend:
    """`trix up` (its NATS, provisioner and real services, two gateway replicas and the Envoy
    edge in front of the first), until its `ready` line."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("TRIX_")}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO / "services"), env.get("PYTHONPATH", "")]))
    env["PYTHONUNBUFFERED"] = "1"
    # The player-role key given (trix up takes it from its environment): the tests start one
    # more gateway on this platform (a rotation, short lifetimes) whose tokens the table accepts.
    player_key = secrets.token_hex(32)
    env[PLAYER_KEY_ENV] = player_key
    # Scoring's admin token given too (issue 42): the tests grant the coins an attack tries to
    # spend. The service tokens' keys are the state folder's (`Backend.signing_keys`).
    given_keys = {SCORING_ADMIN_ENV: secrets.token_hex(16)}
    env.update(given_keys)
    # The new-account budget refills every 2 s here (one an hour per address by default, whose
    # burst of 20 the whole suite's guests from 127.0.0.1 would outgrow); its burst is kept.
    env["TRIX_GATEWAY_NEW_ACCOUNTS_BURST"] = str(ACCOUNTS_BURST)
    env["TRIX_GATEWAY_NEW_ACCOUNTS_PER_HOUR"] = str(ACCOUNTS_PER_HOUR)
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
        given[PLAYER_KEY_ENV] = player_key
        given.update(given_keys)
        signing_keys = json.loads((state / SIGNING_KEYS_FILE).read_text())
    except BaseException:
        stop()
        raise
    return Backend("trix up", urls, stop, gateways, edge, given, targets, signing_keys)


@contextlib.contextmanager
def gateway_process(backend: Backend, log_path: Path, **settings: str) -> Iterator[str]:
    """One more real gateway (`python -m trix.gateway`) on `trix up`'s NATS, with its public-token
    key and player-role key unless `settings` say otherwise (a rotation, short lifetimes); its
    gRPC target, until it is stopped (by this context)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("TRIX_")}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO / "services"), env.get("PYTHONPATH", "")]))
    port = free_port()
    env.update(
        TRIX_NATS_URL=backend.url("gateway"),
        TRIX_GRPC_HOST="127.0.0.1",
        TRIX_GRPC_PORT=str(port),
        TRIX_METRICS_PORT="-1",
        TRIX_LOG_LEVEL="warning",
        TRIX_SHUTDOWN_GRACE_S="1",
        TRIX_DRAIN_DELAY_S="0",
        TRIX_PLAYER_TOKEN_KEY=backend.env[PLAYER_KEY_ENV],
        TRIX_GATEWAY_TOKEN_KEY=backend.env["TRIX_GATEWAY_TOKEN_KEY"],
    )
    env.update(settings)
    with open(log_path, "ab") as log:
        proc = subprocess.Popen([sys.executable, "-m", "trix.gateway"], env=env, stdout=log, stderr=log)
    try:
        wait_serving(f"127.0.0.1:{port}", 60.0)
        yield f"127.0.0.1:{port}"
    finally:
        stop_process(proc, 15)


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


HELD = "held"
BROKEN = "BROKEN"
"""The verdict of a line: the defence held (the outcome is the one expected), or not."""


async def until_found(ask: Callable[[], Awaitable[object]], timeout_s: float, pause_s: float) -> None:
    """Ask again while the answer is NOT_FOUND (something the platform has not decided yet); any
    other error, or still NOT_FOUND after `timeout_s`, fails the test."""
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            await ask()
            return
        except grpc.aio.AioRpcError as err:
            assert err.code() == grpc.StatusCode.NOT_FOUND and time.monotonic() < deadline, err
            await asyncio.sleep(pause_s)


def report(backend: Backend, attack: str, user: str, outcome: str, expected: str = REFUSED) -> str:
    """One line of `make test-security`'s summary: the verdict, the attack, who tried it, where,
    and what happened (an attack is expected to be refused; a legitimate use, such as a token
    of one replica on the other, to be accepted)."""
    verdict = HELD if outcome == expected else BROKEN
    line = f"{verdict:<6} {attack:<62} as {user:<11} on {backend.name:<11} {outcome}"
    ATTACK_LINES.append(line)
    return line
