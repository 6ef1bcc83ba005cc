"""A real service process: health SERVING then NOT_SERVING on SIGTERM and exit 0, JSON
logs with the request context, metrics over HTTP, and a bad config value refused."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
import urllib.request

import grpc
import pytest
from foundation_support import ServiceProcess, service_env
from grpc_health.v1 import health_pb2, health_pb2_grpc

from trix.declarations import names_of
from trix.v1 import table_pb2, table_pb2_grpc

SERVICES = names_of()


def wait_serving(channel: grpc.Channel, timeout_s: float = 60.0) -> None:
    stub = health_pb2_grpc.HealthStub(channel)
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            reply = stub.Check(health_pb2.HealthCheckRequest(), timeout=2)
            if reply.status == health_pb2.HealthCheckResponse.SERVING:
                return
        except grpc.RpcError:
            pass
        time.sleep(0.1)
    raise TimeoutError("service never became SERVING")


def serving_table(service_process: type[ServiceProcess], drain_s: str) -> ServiceProcess:
    """A started table service process, once its health says SERVING."""
    service = service_process("table", TRIX_DRAIN_DELAY_S=drain_s)
    service.start()
    assert service.proc is not None
    with grpc.insecure_channel(f"127.0.0.1:{service.grpc_port}") as channel:
        wait_serving(channel)
    return service


def test_health_serving_then_not_serving_on_sigterm(service_process: type[ServiceProcess]) -> None:
    service = serving_table(service_process, "0.5")
    assert service.proc is not None
    with grpc.insecure_channel(f"127.0.0.1:{service.grpc_port}") as channel:
        watch = health_pb2_grpc.HealthStub(channel).Watch(
            health_pb2.HealthCheckRequest(service="trix.v1.TableService"), timeout=60
        )
        statuses = [next(watch).status]
        assert statuses == [health_pb2.HealthCheckResponse.SERVING]
        service.proc.send_signal(signal.SIGTERM)
        try:
            for reply in watch:
                statuses.append(reply.status)
        except grpc.RpcError as err:
            assert err.code() == grpc.StatusCode.UNAVAILABLE  # the stream ends as the server stops
        assert statuses[-1] == health_pb2.HealthCheckResponse.NOT_SERVING
    assert service.proc.wait(30) == 0
    events = [json.loads(line)["event"] for line in service.stderr_lines()]
    assert events.index("shutting down") < events.index("stopped")


def test_sigusr1_logs_every_asyncio_task_as_one_json_record(service_process: type[ServiceProcess]) -> None:
    service = serving_table(service_process, "0.1")
    assert service.proc is not None
    service.proc.send_signal(signal.SIGUSR1)
    deadline = time.monotonic() + 30
    dump: dict[str, object] = {}
    while time.monotonic() < deadline and not dump:
        records = [json.loads(line) for line in service.stderr_lines()]
        dump = next((r for r in records if r["event"] == "asyncio tasks"), {})
        time.sleep(0.2)
    service.proc.send_signal(signal.SIGTERM)
    assert service.proc.wait(30) == 0  # the process keeps serving after the dump, then stops cleanly
    assert dump, "no task dump logged"
    tasks = dump["tasks"]
    assert isinstance(tasks, dict) and dump["count"] == len(tasks) > 0
    frames = [frame for chain in tasks.values() for frame in chain]
    assert any("trix/runtime/server.py" in frame and " serve" in frame for frame in frames), frames


def test_logs_are_json_with_context_and_metrics_name_rpcs(service_process: type[ServiceProcess]) -> None:
    service = service_process("table")
    service.start()
    with grpc.insecure_channel(f"127.0.0.1:{service.grpc_port}") as channel:
        wait_serving(channel)
        stub = table_pb2_grpc.TableServiceStub(channel)
        request = table_pb2.PlayCardRequest(header=table_pb2.ActionHeader(table_id="t-42", seat=1))
        with pytest.raises(grpc.RpcError) as err:
            stub.PlayCard(request, metadata=[("x-request-id", "req-abc")], timeout=10)
        # No internal identity token: the table refuses (docs/architecture.md, identity only from the gateway).
        assert err.value.code() == grpc.StatusCode.UNAUTHENTICATED
        url = f"http://127.0.0.1:{service.metrics_port}/metrics"
        handled = 'grpc_server_handled_total{grpc_code="UNAUTHENTICATED",grpc_method="PlayCard"'
        # The server counts a call as handled after its status is on the wire, so the client can
        # see the status a moment before the counter moves: read until it has (30 s deadline).
        deadline = time.monotonic() + 30
        body = urllib.request.urlopen(url, timeout=10).read().decode()
        while handled not in body and time.monotonic() < deadline:
            time.sleep(0.1)
            body = urllib.request.urlopen(url, timeout=10).read().decode()
    assert 'grpc_method="PlayCard",grpc_service="trix.v1.TableService"' in body
    assert handled in body
    assert "t-42" not in body and "req-abc" not in body
    assert service.stop() == 0
    records = [json.loads(line) for line in service.stderr_lines()]  # every line is JSON
    assert all({"event", "level", "timestamp", "service"} <= r.keys() for r in records)
    refused = [r for r in records if r.get("request_id") == "req-abc"]
    assert refused, records
    assert refused[0]["table_id"] == "t-42"
    assert refused[0]["service"] == "table"
    assert any(r["event"] == "metrics listening" and r["metrics_port"] == service.metrics_port for r in records)


@pytest.mark.parametrize(
    ("variable", "value", "message"),
    [
        ("TRIX_GRPC_PORT", "abc", "TRIX_GRPC_PORT: not an integer: 'abc'"),
        ("TRIX_SHUTDOWN_GRACE_S", "-1", "TRIX_SHUTDOWN_GRACE_S: must be >= 0.0"),
        ("TRIX_GRPC_REFLECTION", "maybe", "TRIX_GRPC_REFLECTION: not a boolean"),
    ],
)
def test_bad_config_stops_the_service_naming_the_variable(variable: str, value: str, message: str) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "trix.timers"],
        env=service_env("timers", **{variable: value}),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 2
    assert message in result.stderr


@pytest.mark.parametrize("name", SERVICES)
def test_every_service_bad_own_variable(name: str) -> None:
    own = {
        "gateway": "TRIX_GATEWAY_TOKEN_TTL_S",
        "matchmaking": "TRIX_MATCHMAKING_BOT_FILL_S",
        "table": "TRIX_TABLE_SNAPSHOT_EVERY",
        "timers": "TRIX_TIMERS_TICK_S",
        "competitions": "TRIX_COMPETITIONS_TICK_S",
        "social": "TRIX_METRICS_PORT",
        "scoring": "TRIX_METRICS_PORT",
    }[name]
    result = subprocess.run(
        [sys.executable, "-m", f"trix.{name}"],
        env=service_env(name, **{own: "x1"}),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 2, result.stderr
    assert own in result.stderr


@pytest.mark.parametrize("name", ["timers", "scoring"])
def test_consumers_stop_before_nats_drains_so_no_late_delivery_holds_the_exit(
    service_process: type[ServiceProcess], name: str
) -> None:
    # A pull subscription nobody fetches from any more keeps a late delivery (a pull
    # request's expiry status) in its queue, and NATS's drain waited on it until its timeout,
    # then asyncio logged "exception was never retrieved". The consumers stop first now.
    service = service_process(name)
    service.start()
    with grpc.insecure_channel(f"127.0.0.1:{service.grpc_port}") as channel:
        wait_serving(channel)
    time.sleep(3.0)  # idle: pull requests come and go
    assert service.stop() == 0
    records = [json.loads(line) for line in service.stderr_lines()]
    events = [str(r.get("event", "")) for r in records]
    assert not [e for e in events if "never retrieved" in e or "drain failed" in e], events
    assert events.index("shutting down") < events.index("stopped")
