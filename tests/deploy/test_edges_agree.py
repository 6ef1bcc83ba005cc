"""The two edges are one configuration (issue 42): the local edge of `trix up` (trix.edge's
template, services/trix/edge/envoy.yaml) rendered with the cluster's ports and descriptor path
is deploy/k8s/base/envoy/envoy.yaml but for the deliberate differences listed here, each with
its reason. Any other difference fails, and so does a listed one that is gone (the list stays
exact). Before, the local edge lacked `use_remote_address`: Envoy took the client's address
from a client-sent X-Forwarded-For and the gateway's per-address budgets were bypassed."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import k8s_check as kc
import yaml

from trix.edge import EdgeTls, render

CLUSTER_TLS = EdgeTls(sds_file=Path(kc.ENVOY_SDS_DIR) / "sds.yaml", upstream_ca=Path("/etc/envoy/internal-tls/ca.crt"))

HCM = "static_resources/listeners/edge/filter_chains/0/filters/envoy.filters.network.http_connection_manager"
GATEWAY = "static_resources/clusters/gateway"

DELIBERATE: dict[str, str] = {
    # Where it listens: the local edge on loopback only; the cluster's on the pod's address.
    "static_resources/listeners/edge/address/socket_address/address": "loopback locally, every interface in the pod",
    # How it finds the gateway: one process on a port locally; the pods behind a headless
    # Service in the cluster, balanced, health-checked (NOT_SERVING while draining).
    f"{GATEWAY}/type": "STATIC locally, STRICT_DNS (the headless Service) in the cluster",
    f"{GATEWAY}/load_assignment/endpoints/0/lb_endpoints/0/endpoint/address/socket_address/address": "host",
    f"{GATEWAY}/dns_lookup_family": "the cluster resolves the gateway's Service",
    f"{GATEWAY}/dns_refresh_rate": "the cluster resolves the gateway's Service",
    f"{GATEWAY}/lb_policy": "several gateway pods",
    f"{GATEWAY}/health_checks": "pods drain on SIGTERM; one local gateway is supervised by trix up",
    f"{GATEWAY}/circuit_breakers": "the cluster's many connections",
    # The name on the gateway's certificate: `localhost` for the processes of one machine
    # (trix.tls.LOCAL_HOSTS), the Service's name in the cluster.
    f"{GATEWAY}/transport_socket/typed_config/sni": "the gateway's name: localhost locally, its Service in the cluster",
    f"{GATEWAY}/transport_socket/typed_config/common_tls_context/validation_context/match_typed_subject_alt_names": (
        "the gateway's name: localhost locally, its Service in the cluster"
    ),
    # The cluster's metrics: Prometheus scrapes 9902/metrics (the admin port stays on loopback);
    # locally the admin port itself is read.
    "static_resources/listeners/metrics": "Prometheus scrapes the cluster's edge",
    "static_resources/clusters/admin": "the metrics listener's upstream",
}
"""Paths (named list items by their `name`, others by index) where the edges may differ."""

ORDERED = {"http_filters", "routes"}
"""Lists whose order is behaviour (a filter chain, the first matching route): kept by index."""


def _flat(node: Any, path: str = "") -> dict[str, Any]:
    """Every leaf of a parsed config by its path; a list of named objects (listeners, clusters)
    is keyed by name, any other list and an ORDERED one by index."""
    if isinstance(node, dict):
        out: dict[str, Any] = {}
        for key, value in node.items():
            out.update(_flat(value, f"{path}/{key}" if path else str(key)))
        return out or {path: {}}
    if isinstance(node, list):
        names = [item.get("name") for item in node if isinstance(item, dict)]
        unique = len(names) == len(node) and None not in names and len(set(names)) == len(names)
        by_name = unique and path.rsplit("/", 1)[-1] not in ORDERED
        keys = [str(item["name"]) for item in node] if by_name else [str(i) for i in range(len(node))]
        out = {}
        for key, value in zip(keys, node, strict=True):
            out.update(_flat(value, f"{path}/{key}"))
        return out or {path: []}
    return {path: node}


def _under(path: str, prefix: str) -> bool:
    return path == prefix or path.startswith(prefix + "/")


def _local(tls: EdgeTls | None) -> str:
    return render(
        listen_port=8080,
        admin_port=9901,
        gateway_port=50051,
        web_port=8081,
        descriptor=Path("/etc/envoy/proto/trix.pb"),
        tls=tls,
    )


def _edges() -> tuple[dict[str, Any], dict[str, Any]]:
    # The template's slots filled with the cluster's ports, descriptor and certificate paths:
    # `trix up --tls`'s edge (issue 41); the cluster's edge is always TLS.
    config = _local(CLUSTER_TLS)
    local = yaml.safe_load(config)
    cluster = yaml.safe_load(kc.ENVOY_CONF.read_text())
    return _flat(local), _flat(cluster)


def test_the_local_and_cluster_edges_differ_only_where_deliberate() -> None:
    local, cluster = _edges()
    differing = {p for p in local.keys() | cluster.keys() if local.get(p, "<absent>") != cluster.get(p, "<absent>")}
    undeclared = sorted(p for p in differing if not any(_under(p, d) for d in DELIBERATE))
    assert not undeclared, "the edges differ where no deliberate difference is listed:\n" + "\n".join(
        f"  {p}: local {local.get(p, '<absent>')!r}, cluster {cluster.get(p, '<absent>')!r}" for p in undeclared
    )
    stale = sorted(d for d in DELIBERATE if not any(_under(p, d) for p in differing))
    assert not stale, f"listed as deliberate differences but the same on both edges: {stale}"


def test_neither_edge_believes_a_client_sent_x_forwarded_for() -> None:
    """The client's address the gateway's limits count (x-trix-client-address, ADR 0018) is the
    TCP peer's on both edges: no hop of X-Forwarded-For is trusted."""
    for flat in _edges():
        assert flat[f"{HCM}/typed_config/use_remote_address"] is True
        assert flat[f"{HCM}/typed_config/xff_num_trusted_hops"] == 0
        headers = {
            flat[f"{HCM}/typed_config/route_config/request_headers_to_add/{i}/header/key"]: flat[
                f"{HCM}/typed_config/route_config/request_headers_to_add/{i}/header/value"
            ]
            for i in range(2)
        }
        assert headers["x-trix-client-address"] == "%DOWNSTREAM_REMOTE_ADDRESS_WITHOUT_PORT%"


def test_both_edges_refuse_an_unknown_query_parameter() -> None:
    for flat in _edges():
        transcoder = next(
            p.removesuffix("/name")
            for p, v in flat.items()
            if p.startswith(f"{HCM}/typed_config/http_filters/") and v == "envoy.filters.http.grpc_json_transcoder"
        )
        assert flat[f"{transcoder}/typed_config/request_validation_options/reject_unknown_query_parameters"] is True


def test_the_local_edge_is_plain_unless_asked_for_tls() -> None:
    """`trix up`'s default stays the plain loopback run (issue 41): no TLS on either side of
    the local edge unless it is rendered with one."""
    plain = _flat(yaml.safe_load(_local(None)))
    assert not [p for p in plain if "transport_socket" in p]
    tls = _flat(yaml.safe_load(_local(CLUSTER_TLS)))
    assert tls[f"{HCM.rsplit('/filters/', 1)[0]}/transport_socket/name"] == "envoy.transport_sockets.tls"
    assert tls[f"{GATEWAY}/transport_socket/name"] == "envoy.transport_sockets.tls"


def test_both_edges_serve_h2_and_http1_by_alpn_on_one_port() -> None:
    chain = HCM.rsplit("/filters/", 1)[0]
    for flat in _edges():
        alpn = f"{chain}/transport_socket/typed_config/common_tls_context/alpn_protocols"
        assert [flat[f"{alpn}/0"], flat[f"{alpn}/1"]] == ["h2", "http/1.1"]
        assert f"{alpn}/2" not in flat
