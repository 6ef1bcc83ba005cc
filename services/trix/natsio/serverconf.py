"""The nats-server configuration: one generator for `trix up` and deploy/k8s (ADR 0014, ADR 0023).

Owns `render`, a node's whole config (JetStream fsynced on every write, limits, lame duck,
an optional `cluster` block, the users of `trix.natsio.permissions`), and `process_env`
(`GO_MAXPROCS`). Only the site's facts differ between `trix up` and Kubernetes, and `Site`
holds exactly those, so what `trix up --nats-cluster 3` runs is what ships.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from trix.declarations import SERVICES, ServiceDeclaration
from trix.natsio import permissions

CLUSTER_NAME = "trix"
PASSWORD_MARKER = "@@PASSWORD:"
GO_MAXPROCS = "1"
"""GOMAXPROCS of a nats-server that shares its box with the services (`trix up`, its cluster,
the load test's floor): one Go scheduler thread. With Go's default (one per core) an idle P's
thread spins and parks on every hand-off, and the runtime's monitor keeps waking while
fsyncs hold a thread: nats-server spent 14 % less CPU per action with 1 (ADR 0023). Blocking
syscalls (the fsync of `sync_interval: always`) still run on their own threads. An operator's
GOMAXPROCS wins; Kubernetes leaves it to the pod's CPU limit (nats-server sizes it from it)."""


def password_var(user: str) -> str:
    """The environment variable holding `user`'s password on Kubernetes."""
    return f"NATS_PASSWORD_{user.upper()}"


@dataclass(frozen=True)
class TlsFiles:
    """Where a node finds its certificate, its key and the CA that signed every node's."""

    cert_file: str
    key_file: str
    ca_file: str


TLS_TIMEOUT_S = 5
"""Seconds a TLS handshake may take (nats-server's default of 0.5 s is short for a loaded box)."""


def _tls_block(tls: TlsFiles, indent: str, *, verify: bool) -> list[str]:
    """A `tls {}` block: the node's certificate; `verify` asks the peer for one signed by the CA
    (routes: every node presents its own; clients: they verify the server, not the reverse)."""
    lines = [
        f"{indent}tls {{",
        f"{indent}  cert_file: {_quoted(tls.cert_file)}",
        f"{indent}  key_file: {_quoted(tls.key_file)}",
        f"{indent}  ca_file: {_quoted(tls.ca_file)}",
        f"{indent}  timeout: {TLS_TIMEOUT_S}",
    ]
    if verify:
        lines.append(f"{indent}  verify: true")
    return [*lines, f"{indent}}}"]


@dataclass(frozen=True)
class Site:
    """What one node's config says of where it runs; everything else is the same everywhere."""

    server_name: str
    """A literal name, or `$POD_NAME` (nats-server resolves `$VAR` from its environment)."""
    listen: str
    """host:port of the client listener."""
    http_port: int
    store_dir: str
    pid_file: str
    cluster_listen: str = ""
    """host:port of the route listener; empty for a single node (no cluster block)."""
    routes: Sequence[str] = field(default_factory=tuple)
    """nats-route://host:port of every node of the cluster (a node's own route is ignored)."""
    passwords: Mapping[str, str] | None = None
    """user -> password written in; None: `$NATS_PASSWORD_<USER>` variables instead."""
    header: str = ""
    """Comment lines at the top (without the `# `)."""
    services: Sequence[ServiceDeclaration] = SERVICES
    """The services whose users it declares (a test may add its own)."""
    tls: TlsFiles | None = None
    """TLS on client and route connections; None: plain text (`trix up`'s default)."""


def process_env(environ: Mapping[str, str]) -> dict[str, str]:
    """The environment of a nats-server started on this box: `environ` with GOMAXPROCS set
    to `GO_MAXPROCS` unless it sets one."""
    env = dict(environ)
    env.setdefault("GOMAXPROCS", GO_MAXPROCS)
    return env


def _quoted(path: str) -> str:
    return path if path.startswith("/") and re.fullmatch(r"[\w/.-]+", path) else f'"{path}"'


def authorization(passwords: Mapping[str, str] | None, services: Sequence[ServiceDeclaration] = SERVICES) -> str:
    """The users block: passwords written in, or each one's environment variable."""
    if passwords is not None:
        return permissions.authorization_block(passwords, services)
    users = permissions.users(services)
    block = permissions.authorization_block({u: f"{PASSWORD_MARKER}{u}" for u in users}, services)
    return re.sub(rf'"{PASSWORD_MARKER}([a-z0-9]+)"', lambda m: "$" + password_var(m.group(1)), block)


def render(site: Site) -> str:
    """The config file of one node."""
    lines = [f"# {line}" if line else "#" for line in site.header.splitlines()]
    lines += [
        f"server_name: {site.server_name}",
        f"listen: {site.listen}",
        f"http_port: {site.http_port}",
        f"pid_file: {_quoted(site.pid_file)}",
        "lame_duck_duration: 30s",
        "lame_duck_grace_period: 10s",
        "max_payload: 1MB",
        "jetstream {",
        f"  store_dir: {_quoted(site.store_dir)}",
        "  max_file_store: 8GB",
        "  max_memory_store: 256MB",
        "  sync_interval: always",
        "}",
    ]
    if site.tls is not None:
        lines += _tls_block(site.tls, "", verify=False)
    if site.cluster_listen:
        lines += [
            "cluster {",
            f"  name: {CLUSTER_NAME}",
            f"  listen: {site.cluster_listen}",
            "  connect_retries: 120",
            "  # Clients get no other URLs than the ones they were given (each carries its user).",
            "  no_advertise: true",
            *(_tls_block(site.tls, "  ", verify=True) if site.tls is not None else []),
            "  routes: [",
            *(f"    {route}" for route in site.routes),
            "  ]",
            "}",
        ]
    return "\n".join(lines) + "\n" + authorization(site.passwords, site.services)


KUBERNETES_TLS = TlsFiles(
    cert_file="/etc/nats-tls/tls.crt", key_file="/etc/nats-tls/tls.key", ca_file="/etc/nats-tls/ca.crt"
)
"""The mounted Secret `trix-internal-tls` (keys tls.crt, tls.key, ca.crt; cert-manager's
Certificate in prod, docs/deploy.md): the certificate of every node and service inside."""


def kubernetes(nodes: int = 3, services: Sequence[ServiceDeclaration] = SERVICES) -> str:
    """deploy/k8s/base/nats/nats.conf: the StatefulSet's pods nats-0..nats-<nodes-1>."""
    return render(
        Site(
            server_name="$POD_NAME",
            listen="0.0.0.0:4222",
            http_port=8222,
            store_dir="/data/jetstream",
            pid_file="/var/run/nats/nats.pid",
            cluster_listen="0.0.0.0:6222",
            routes=[f"nats://nats-{i}.nats-headless:6222" for i in range(nodes)],
            services=services,
            tls=KUBERNETES_TLS,
            header=(
                "GENERATED by `python tests/deploy/k8s_check.py --write-nats-conf` from\n"
                "services/trix/natsio/serverconf.py and permissions.py: do not edit (make k8s-check\n"
                "fails on drift). A 3-node JetStream cluster; every write fsynced (docs/architecture.md)."
            ),
        )
    )


@dataclass(frozen=True)
class LocalNode:
    """One node of `trix up` on loopback."""

    index: int
    client_port: int
    http_port: int
    cluster_port: int = 0
    host: str = "127.0.0.1"
    """Where it listens: loopback, or a network namespace's address (tests/cluster/netns.py)."""


def loopback(
    node: LocalNode,
    nodes: Sequence[LocalNode],
    *,
    store_dir: str,
    pid_file: str,
    passwords: Mapping[str, str],
    services: Sequence[ServiceDeclaration] = SERVICES,
    tls: TlsFiles | None = None,
) -> str:
    """The config of `node` among `nodes` on this machine (a single node: no cluster block);
    with `tls`, client and route connections are TLS only (`trix up --tls`)."""
    clustered = len(nodes) > 1
    return render(
        Site(
            server_name=f"trix_up_{node.index}" if clustered else "trix_up",
            listen=f"{node.host}:{node.client_port}",
            http_port=node.http_port,
            store_dir=store_dir,
            pid_file=pid_file,
            cluster_listen=f"{node.host}:{node.cluster_port}" if clustered else "",
            routes=[f"nats://{n.host}:{n.cluster_port}" for n in nodes] if clustered else (),
            passwords=passwords,
            services=services,
            tls=tls,
            header=(
                "Written by `trix up` from trix.natsio.serverconf (the generator of deploy/k8s's\n"
                "nats.conf too): JetStream with fsync on every write (docs/architecture.md), the users\n"
                "and permissions of production (trix.natsio.permissions, ADR 0014)."
            ),
        )
    )


SITE_KEYS = ("server_name", "listen", "http_port", "pid_file", "store_dir", "cert_file", "key_file", "ca_file")
"""The lines a site sets; `shared_lines` drops them (and the cluster's `listen` and routes); the
certificate files' paths are the site's, the `tls {}` blocks themselves are shared."""


def shared_lines(conf: str) -> list[str]:
    """A rendered config without comments, site lines, routes and passwords: what every site
    must have the same (the drift check compares `trix up`'s nodes with Kubernetes on it)."""
    out: list[str] = []
    in_routes = False
    for raw in conf.splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        if in_routes:
            in_routes = line != "]"
            continue
        if line.startswith("routes: ["):
            in_routes = True
            continue
        key = line.split(":", 1)[0].strip()
        if key in SITE_KEYS:
            continue
        if line.startswith('"password"'):
            continue
        out.append(line)
    return out
