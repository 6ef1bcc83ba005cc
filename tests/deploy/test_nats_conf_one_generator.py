"""Issue 19: one generator (trix.natsio.serverconf) renders the nats-server config of
`trix up --nats-cluster 3` and of deploy/k8s, so what the cluster tests ran is what ships:
the nodes `trix up` writes are exactly the generator's output, they differ from the
Kubernetes config only in the site's facts (names, addresses, paths, passwords), and each
passes `nats-server -t`."""

from __future__ import annotations

import stat
from pathlib import Path

import k8s_check as kc
import pytest

from support.up import inspected_supervisor
from trix.natsio import permissions, serverconf
from trix.processes import Child
from trix.state_folder import nats_url_of
from trix.supervisor import Supervisor


def _cluster(state: Path, nodes: int = 3, *, tls: bool = False) -> tuple[Supervisor, list[Child]]:
    """The supervisor of `trix up --nats-cluster nodes [--tls]` and its NATS nodes (configs written)."""
    sup = inspected_supervisor(state, nats_cluster=nodes, tls=tls)
    sup.prepare()
    return sup, [sup.nats_node_child(n) for n in sup.nats_nodes]


def test_trix_up_cluster_nodes_are_the_generators_output(tmp_path: Path) -> None:
    sup, nodes = _cluster(tmp_path)
    assert [c.name for c in nodes] == ["nats-1", "nats-2", "nats-3"]
    for node, child in zip(sup.nats_nodes, nodes, strict=True):
        conf = Path(child.argv[-1])
        assert stat.S_IMODE(conf.stat().st_mode) == 0o600  # it holds the passwords
        want = serverconf.loopback(
            node,
            sup.nats_nodes,
            store_dir=str(tmp_path / "nats" / f"n{node.index}"),
            pid_file=str(tmp_path / f"nats-{node.index}.pid"),
            passwords=sup.passwords,
        )
        assert conf.read_text() == want
        assert permissions.authorization_block(sup.passwords) in want
        routes = "".join(f"    nats://127.0.0.1:{n.cluster_port}\n" for n in sup.nats_nodes)
        assert f"  routes: [\n{routes}  ]\n" in want


def test_trix_up_and_kubernetes_differ_only_in_the_sites_facts(tmp_path: Path) -> None:
    """`trix up --tls` is the deployed cluster's config (TLS on clients and routes, issue 41)."""
    _, nodes = _cluster(tmp_path, tls=True)
    k8s = serverconf.shared_lines(kc.NATS_CONF.read_text())
    assert "sync_interval: always" in k8s and "no_advertise: true" in k8s
    for child in nodes:
        assert serverconf.shared_lines(Path(child.argv[-1]).read_text()) == k8s


def test_each_trix_up_node_config_passes_nats_server_t(tmp_path: Path) -> None:
    for child in [*_cluster(tmp_path / "plain")[1], *_cluster(tmp_path / "tls", tls=True)[1]]:
        result = kc.nats_server_test(Path(child.argv[-1]).read_text())
        assert result.ok, result.detail


def test_every_service_gets_every_nodes_url_with_its_own_user(tmp_path: Path) -> None:
    sup, _ = _cluster(tmp_path)
    ports = [n.client_port for n in sup.nats_nodes]
    for svc in sup.service_children():
        urls = svc.env["TRIX_NATS_URL"].split(",")
        assert [permissions.user_of(u) for u in urls] == [svc.name] * 3
        assert [int(u.rsplit(":", 1)[1]) for u in urls] == ports
        assert svc.env["TRIX_NATS_STREAM_REPLICAS"] == "3"
    assert nats_url_of(tmp_path, "table") == sup.nats_url("table")
    assert sup.provisioner_child().env["TRIX_NATS_STREAM_REPLICAS"] == "3"


def test_the_single_node_stays_the_default(tmp_path: Path) -> None:
    sup, nodes = _cluster(tmp_path, nodes=1, tls=True)
    assert [c.name for c in nodes] == ["nats"]
    text = (tmp_path / "nats.conf").read_text()
    assert "cluster {" not in text
    assert serverconf.shared_lines(text) == serverconf.shared_lines(_without_cluster_block(kc.NATS_CONF.read_text()))
    assert sup.base_env()["TRIX_NATS_STREAM_REPLICAS"] == "1"


def test_plain_text_stays_the_default_of_trix_up(tmp_path: Path) -> None:
    """Issue 41: without --tls no node has a tls block and no service a TLS file."""
    for nodes in (1, 3):
        sup, children = _cluster(tmp_path / str(nodes), nodes=nodes)
        assert all("tls {" not in Path(c.argv[-1]).read_text() for c in children)
        assert not [k for k in sup.base_env() if k.startswith("TRIX_TLS_")]
    sup, children = _cluster(tmp_path / "tls", nodes=3, tls=True)
    assert all(Path(c.argv[-1]).read_text().count("tls {") == 2 for c in children)  # clients and routes
    assert {k for k in sup.base_env() if k.startswith("TRIX_TLS_")} == {
        "TRIX_TLS_CA_FILE",
        "TRIX_TLS_CERT_FILE",
        "TRIX_TLS_KEY_FILE",
    }


def _without_cluster_block(conf: str) -> str:
    head, _, rest = conf.partition("\ncluster {\n")
    return head + "\n" + rest.split("\n}\n", 1)[1]


def test_trix_up_nats_nodes_run_one_go_scheduler_thread_unless_the_operator_sets_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """ADR 0023: a nats-server sharing the box with the services runs GOMAXPROCS=1 (14 % less
    CPU per action at 200 tables); an operator's GOMAXPROCS is kept."""
    monkeypatch.delenv("GOMAXPROCS", raising=False)
    for child in _cluster(tmp_path / "a")[1]:
        assert child.env["GOMAXPROCS"] == serverconf.GO_MAXPROCS == "1"
    monkeypatch.setenv("GOMAXPROCS", "2")
    for child in _cluster(tmp_path / "b")[1]:
        assert child.env["GOMAXPROCS"] == "2"
