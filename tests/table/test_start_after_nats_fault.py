"""A service's start rides out a NATS fault (issue 42): a table process started while its
nats-server is stopped (SIGSTOP), whose seed watcher's consumer is then not made (the
request is never answered, as while a stream elects a leader), is started again in the
same process and serves once NATS answers; it never exits."""

from __future__ import annotations

import json
import signal
import subprocess
import time
from pathlib import Path

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc

from support.nats import _NatsProcess
from support.table import TableProcess, table_env
from trix.natsio.permissions import user_url
from trix.natsio.provision import provision_now

STOPPED_S = 2.0
UNANSWERED = "$JS.API.CONSUMER.>"
"""What the service's user may not ask while NATS "does not answer": making a consumer (a
request refused for permissions is never answered: it times out, as during an election)."""


def _authorization(*, consumers: bool) -> str:
    users = [
        {"user": "admin", "password": "admin-pw"},
        {"user": "svc", "password": "svc-pw", "permissions": {} if consumers else {"publish": {"deny": [UNANSWERED]}}},
    ]
    return "authorization " + json.dumps({"users": users}) + "\n"


def _serving(port: int, timeout_s: float) -> bool:
    deadline = time.monotonic() + timeout_s
    with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
        stub = health_pb2_grpc.HealthStub(channel)
        while time.monotonic() < deadline:
            try:
                reply = stub.Check(health_pb2.HealthCheckRequest(), timeout=1)
                if reply.status == health_pb2.HealthCheckResponse.SERVING:
                    return True
            except grpc.RpcError:
                pass
            time.sleep(0.1)
    return False


def _wait_log(path: Path, text: str, proc: TableProcess, timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    while text not in path.read_text(errors="replace"):
        assert proc.proc is not None and proc.proc.poll() is None, f"exited:\n{path.read_text()[-3000:]}"
        assert time.monotonic() < deadline, f"no {text!r} in:\n{path.read_text()[-3000:]}"
        time.sleep(0.05)


def test_a_start_failed_on_a_nats_fault_is_started_again_and_serves(tmp_path: Path) -> None:
    nats = _NatsProcess(tmp_path, _authorization(consumers=False))
    base_conf = nats.conf.read_text().replace(_authorization(consumers=False), "")
    nats.start()
    table: TableProcess | None = None
    try:
        provision_now(user_url(nats.server_url, "admin", "admin-pw"))
        assert nats.proc is not None
        nats.proc.send_signal(signal.SIGSTOP)
        env = table_env(user_url(nats.server_url, "svc", "svc-pw"), TRIX_LOG_LEVEL="info")
        table = TableProcess(env, tmp_path / "table.log")
        table.start()
        time.sleep(STOPPED_S)
        nats.proc.send_signal(signal.SIGCONT)
        _wait_log(table.log_path, "start failed on a nats fault, starting again", table, timeout_s=12)
        nats.conf.write_text(base_conf + _authorization(consumers=True))
        nats.proc.send_signal(signal.SIGHUP)  # reloaded: the consumers are made now
        assert _serving(int(env["TRIX_GRPC_PORT"]), timeout_s=10), table.log_path.read_text()[-3000:]
        assert table.proc is not None and table.proc.poll() is None
        logged = table.log_path.read_text()
        assert '"start failed"' not in logged
        assert "table replica started" in logged
    finally:
        if table is not None:
            table.stop()
        if nats.proc is not None:
            nats.proc.send_signal(signal.SIGCONT)
        nats.stop()


def test_a_nats_fault_outlasting_the_start_again_window_exits_for_the_supervisor(tmp_path: Path) -> None:
    """The in-process starts again are bounded (TRIX_START_AGAIN_FOR_S): a JetStream request that
    is never answered (the consumers denied for good) makes the start fail past the window, and
    the process exits 1 with "start failed", so the supervisor's restarts (trix up's backoff,
    Kubernetes') take over; before, it started again for ever, alive but never serving."""
    nats = _NatsProcess(tmp_path, _authorization(consumers=False))
    nats.start()
    table: TableProcess | None = None
    try:
        provision_now(user_url(nats.server_url, "admin", "admin-pw"))
        env = table_env(user_url(nats.server_url, "svc", "svc-pw"), TRIX_LOG_LEVEL="info", TRIX_START_AGAIN_FOR_S="0.5")
        table = TableProcess(env, tmp_path / "table.log")
        table.start()
        assert table.proc is not None
        try:
            code = table.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            raise AssertionError(f"still running:\n{table.log_path.read_text()[-3000:]}") from None
        logged = table.log_path.read_text()
        assert code == 1, logged[-3000:]
        assert '"start failed"' in logged and "starting again" not in logged
    finally:
        if table is not None:
            table.stop()
        nats.stop()
