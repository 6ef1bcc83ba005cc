"""Prometheus metrics of a service and their HTTP endpoint.

Owns the standard gRPC server metrics (the names of go-grpc-prometheus /
py-grpc-prometheus): `grpc_server_started_total`, `grpc_server_handled_total`
(with `grpc_code`) and the `grpc_server_handling_seconds` histogram, labelled only
by `grpc_type`, `grpc_service` and `grpc_method`; and `trix_rpc_refused_total`, the calls
refused with a domain error by `reason` (its kind: PermissionDenied, IllegalMove, ...). Never label by table, player or
any other unbounded id. Each runtime has its own registry so several servers can
live in one test process.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from wsgiref.simple_server import WSGIServer

from prometheus_client import CollectorRegistry, Counter, Histogram, start_http_server

RPC_LABELS = ("grpc_type", "grpc_service", "grpc_method")

# Latency buckets in seconds: a move is a few ms, a slow store up to seconds.
LATENCY_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)


@dataclass
class RpcMetrics:
    """The RPC metrics of one server."""

    registry: CollectorRegistry = field(default_factory=lambda: CollectorRegistry(auto_describe=True))

    def __post_init__(self) -> None:
        self.started = Counter(
            "grpc_server_started_total", "RPCs started on the server.", RPC_LABELS, registry=self.registry
        )
        self.handled = Counter(
            "grpc_server_handled_total",
            "RPCs completed on the server, regardless of success or failure.",
            (*RPC_LABELS, "grpc_code"),
            registry=self.registry,
        )
        self.refused = Counter(
            "trix_rpc_refused_total",
            "RPCs refused with a domain error (bad input, not allowed, not now), by reason: counted, "
            "not logged one line each (issue 42).",
            ("grpc_service", "grpc_method", "reason"),
            registry=self.registry,
        )
        self.handling_seconds = Histogram(
            "grpc_server_handling_seconds",
            "Latency of RPCs handled by the server, until the last response.",
            RPC_LABELS,
            buckets=LATENCY_BUCKETS,
            registry=self.registry,
        )


class MetricsEndpoint:
    """The `/metrics` HTTP endpoint of one service (a daemon thread)."""

    def __init__(self, registry: CollectorRegistry, host: str, port: int) -> None:
        self._server: WSGIServer
        self._thread: threading.Thread
        self._server, self._thread = start_http_server(port, addr=host, registry=registry)
        self.port: int = int(self._server.server_port)

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()
