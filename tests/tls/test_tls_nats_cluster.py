"""Route connections of a NATS cluster over TLS (issue 41, `trix up --nats-cluster 3 --tls`):
three real nats-servers with the configs trix.natsio.serverconf renders with TLS files form a
cluster (every node routes to the two others, each route TLS), and a node whose certificate
another CA signed is kept out of it."""

from __future__ import annotations

import json
import secrets
import subprocess
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from support.ports import wait_port
from support.processes import stop_process
from trix import tls
from trix.natsio import permissions, serverconf
from trix.processes import free_port, nats_server_binary

pytestmark = pytest.mark.timeout(120)

DEADLINE_S = 30.0


def _monitor(node: serverconf.LocalNode, page: str) -> dict[str, object]:
    with urllib.request.urlopen(f"http://127.0.0.1:{node.http_port}/{page}", timeout=2) as resp:
        answer: dict[str, object] = json.load(resp)
    return answer


def _routez(node: serverconf.LocalNode) -> dict[str, object]:
    return _monitor(node, "routez")


def _start(
    root: Path, node: serverconf.LocalNode, nodes: list[serverconf.LocalNode], pki: tls.Pki
) -> subprocess.Popen[bytes]:
    conf = root / f"nats-{node.index}.conf"
    conf.write_text(
        serverconf.loopback(
            node,
            nodes,
            store_dir=str(root / f"js{node.index}"),
            pid_file=str(root / f"nats-{node.index}.pid"),
            passwords={u: secrets.token_hex(8) for u in permissions.USERS},
            tls=tls.nats_files(pki),
        )
    )
    with open(root / f"nats-{node.index}.log", "wb") as log:
        proc = subprocess.Popen([nats_server_binary(), "-c", str(conf)], stdout=log, stderr=log)
    wait_port(node.client_port)
    return proc


@pytest.fixture
def nodes() -> list[serverconf.LocalNode]:
    return [
        serverconf.LocalNode(index=i, client_port=free_port(), http_port=free_port(), cluster_port=free_port())
        for i in (1, 2, 3)
    ]


@pytest.fixture
def procs() -> Iterator[list[subprocess.Popen[bytes]]]:
    started: list[subprocess.Popen[bytes]] = []
    yield started
    for proc in started:
        stop_process(proc, grace_s=10)


def _routes(node: serverconf.LocalNode) -> int:
    return int(str(_routez(node)["num_routes"]))


def test_a_tls_cluster_routes_every_node_to_the_others_over_tls(
    tmp_path: Path, nodes: list[serverconf.LocalNode], procs: list[subprocess.Popen[bytes]]
) -> None:
    pki = tls.local_pki(tmp_path / "pki")
    procs += [_start(tmp_path, n, nodes, pki) for n in nodes]
    deadline = time.monotonic() + DEADLINE_S
    while time.monotonic() < deadline and not all(_routes(n) >= 2 for n in nodes):
        time.sleep(0.2)
    for node in nodes:
        routez = _routez(node)
        assert int(str(routez["num_routes"])) >= 2, routez
        cluster = _monitor(node, "varz")["cluster"]
        assert isinstance(cluster, dict)
        # The route listener requires TLS and verifies the peer's certificate: a listed route
        # passed both handshakes.
        assert cluster.get("tls_required") is True and cluster.get("tls_verify") is True, cluster


def test_a_node_with_a_certificate_of_another_ca_is_kept_out(
    tmp_path: Path, nodes: list[serverconf.LocalNode], procs: list[subprocess.Popen[bytes]]
) -> None:
    pki = tls.local_pki(tmp_path / "pki")
    stranger = tls.local_pki(tmp_path / "stranger")
    procs += [_start(tmp_path, n, nodes, pki) for n in nodes[:2]]
    procs.append(_start(tmp_path, nodes[2], nodes, stranger))
    deadline = time.monotonic() + DEADLINE_S
    while time.monotonic() < deadline and not all(_routes(n) >= 1 for n in nodes[:2]):
        time.sleep(0.2)
    assert _routes(nodes[0]) >= 1 and _routes(nodes[1]) >= 1  # the two of one CA route to each other
    time.sleep(3)  # the stranger's attempts (connect_retries) fail their handshakes meanwhile
    assert _routes(nodes[2]) == 0
    names = {str(r.get("remote_name", "")) for n in nodes[:2] for r in _routez(n)["routes"]}  # type: ignore[attr-defined]
    assert "trix_up_3" not in names
