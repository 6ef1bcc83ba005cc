"""The service runtime in-process: draining within the grace period, the error table,
UNIMPLEMENTED naming the issue, and metrics scraped over HTTP."""

from __future__ import annotations

import asyncio
import urllib.request
from dataclasses import replace
from typing import Any

import grpc
import nats.js.errors
import pytest
import structlog.testing
from grpc_health.v1 import health_pb2, health_pb2_grpc

from trix.errors import IllegalMove, StaleTurn
from trix.runtime.config import RuntimeConfig
from trix.runtime.interceptors import RefusalLog
from trix.runtime.server import Runtime, ServiceBinding
from trix.v1 import scoring_pb2, scoring_pb2_grpc, timers_pb2, timers_pb2_grpc


class ProbeTimers(timers_pb2_grpc.TimersServiceServicer):
    """A test-only servicer: ListDeadlines sleeps `delay` seconds, GetPresence raises by player id."""

    def __init__(self) -> None:
        self.delay = 0.0

    async def ListDeadlines(self, request: Any, context: Any) -> timers_pb2.ListDeadlinesResponse:
        await asyncio.sleep(self.delay)
        return timers_pb2.ListDeadlinesResponse()

    async def GetPresence(self, request: Any, context: Any) -> timers_pb2.GetPresenceResponse:
        if request.player_id == "illegal":
            raise IllegalMove("must follow suit (C)")
        if request.player_id == "stale":
            raise StaleTurn("turn 7 is over")
        if request.player_id == "in-process":  # a JetStream leader's "not now" (issue 42)
            raise nats.js.errors.APIError(code=400, err_code=10164, description="wrong last sequence")
        raise KeyError("secret-internal-detail")


def runtime_config(**changes: Any) -> RuntimeConfig:
    base = RuntimeConfig.from_env("probe", {"TRIX_NATS_URL": "none", "TRIX_DRAIN_DELAY_S": "0"})
    return replace(base, **changes)


async def start_probe(config: RuntimeConfig) -> tuple[Runtime, ProbeTimers]:
    probe = ProbeTimers()

    def register(server: grpc.aio.Server) -> None:
        timers_pb2_grpc.add_TimersServiceServicer_to_server(probe, server)

    def register_unbuilt(server: grpc.aio.Server) -> None:
        # The generated base servicer: every RPC raises NotImplementedError, as an
        # RPC of a service whose issue has not landed yet would.
        scoring_pb2_grpc.add_ScoringServiceServicer_to_server(scoring_pb2_grpc.ScoringServiceServicer(), server)

    runtime = Runtime(
        config,
        [
            ServiceBinding("trix.v1.TimersService", register),
            ServiceBinding("trix.v1.ScoringService", register_unbuilt, unbuilt_issue=99),
        ],
    )
    await runtime.start()
    return runtime, probe


async def test_in_flight_call_finishes_within_grace() -> None:
    runtime, probe = await start_probe(runtime_config(shutdown_grace_s=10.0))
    probe.delay = 1.5
    async with grpc.aio.insecure_channel(runtime.address) as channel:
        stub = timers_pb2_grpc.TimersServiceStub(channel)
        call = asyncio.ensure_future(stub.ListDeadlines(timers_pb2.ListDeadlinesRequest(table_id="t1"), timeout=30))
        await asyncio.sleep(0.5)  # the call is in flight
        loop = asyncio.get_running_loop()
        started = loop.time()
        await runtime.stop()
        took = loop.time() - started
        reply = await call  # finished, not cancelled
        assert isinstance(reply, timers_pb2.ListDeadlinesResponse)
        assert took < 8.0, took
    async with grpc.aio.insecure_channel(runtime.address) as channel:
        stub = timers_pb2_grpc.TimersServiceStub(channel)
        with pytest.raises(grpc.aio.AioRpcError) as refused:
            await stub.ListDeadlines(timers_pb2.ListDeadlinesRequest(), timeout=5)
        assert refused.value.code() == grpc.StatusCode.UNAVAILABLE


async def test_call_longer_than_grace_is_cut() -> None:
    runtime, probe = await start_probe(runtime_config(shutdown_grace_s=0.5))
    probe.delay = 30.0
    async with grpc.aio.insecure_channel(runtime.address) as channel:
        stub = timers_pb2_grpc.TimersServiceStub(channel)
        call = asyncio.ensure_future(stub.ListDeadlines(timers_pb2.ListDeadlinesRequest(), timeout=60))
        await asyncio.sleep(0.5)
        loop = asyncio.get_running_loop()
        started = loop.time()
        await runtime.stop()
        assert loop.time() - started < 5.0
        with pytest.raises(grpc.aio.AioRpcError) as cut:
            await call
        assert cut.value.code() in (grpc.StatusCode.CANCELLED, grpc.StatusCode.UNAVAILABLE)


async def test_error_table_unimplemented_and_metrics() -> None:
    runtime, _ = await start_probe(runtime_config())
    try:
        async with grpc.aio.insecure_channel(runtime.address) as channel:
            stub = timers_pb2_grpc.TimersServiceStub(channel)
            for player, code, text in (
                ("illegal", grpc.StatusCode.FAILED_PRECONDITION, "must follow suit (C)"),
                ("stale", grpc.StatusCode.ABORTED, "turn 7 is over"),
            ):
                with pytest.raises(grpc.aio.AioRpcError) as err:
                    await stub.GetPresence(timers_pb2.GetPresenceRequest(player_id=player), timeout=10)
                assert err.value.code() == code
                assert err.value.details() == text
            with pytest.raises(grpc.aio.AioRpcError) as err:
                await stub.GetPresence(timers_pb2.GetPresenceRequest(player_id="boom"), timeout=10)
            assert err.value.code() == grpc.StatusCode.INTERNAL
            details = err.value.details() or ""
            assert "error id" in details
            assert "secret-internal-detail" not in details and "KeyError" not in details

            unbuilt = scoring_pb2_grpc.ScoringServiceStub(channel)
            with pytest.raises(grpc.aio.AioRpcError) as err:
                await unbuilt.GetStandings(scoring_pb2.GetStandingsRequest(), timeout=10)
            assert err.value.code() == grpc.StatusCode.UNIMPLEMENTED
            assert "issue #99" in (err.value.details() or "")
            assert "GetStandings" in (err.value.details() or "")

            health = health_pb2_grpc.HealthStub(channel)
            status = await health.Check(health_pb2.HealthCheckRequest(service="trix.v1.TimersService"), timeout=10)
            assert status.status == health_pb2.HealthCheckResponse.SERVING

        url = f"http://127.0.0.1:{runtime.metrics_port}/metrics"
        body = await asyncio.to_thread(lambda: urllib.request.urlopen(url, timeout=10).read().decode())
        assert 'grpc_server_started_total{grpc_method="GetPresence",grpc_service="trix.v1.TimersService"' in body
        assert (
            'grpc_server_handled_total{grpc_code="FAILED_PRECONDITION",grpc_method="GetPresence",'
            'grpc_service="trix.v1.TimersService",grpc_type="unary"} 1.0'
        ) in body
        assert 'grpc_code="INTERNAL",grpc_method="GetPresence"' in body
        assert 'grpc_code="UNIMPLEMENTED",grpc_method="GetStandings",grpc_service="trix.v1.ScoringService"' in body
        assert "grpc_server_handling_seconds_bucket{" in body
        assert "boom" not in body and "illegal" not in body  # no ids as labels
    finally:
        await runtime.stop()


async def test_a_leaders_in_process_answer_is_unavailable_never_internal() -> None:
    runtime, _ = await start_probe(runtime_config(metrics_port=-1))
    try:
        async with grpc.aio.insecure_channel(runtime.address) as channel:
            stub = timers_pb2_grpc.TimersServiceStub(channel)
            with pytest.raises(grpc.aio.AioRpcError) as err:
                await stub.GetPresence(timers_pb2.GetPresenceRequest(player_id="in-process"), timeout=10)
            assert err.value.code() == grpc.StatusCode.UNAVAILABLE
            assert err.value.details() == "briefly unavailable, try again"
    finally:
        await runtime.stop()


async def test_refused_calls_are_counted_by_reason_and_logged_once_a_minute_not_each() -> None:
    """Issue 42, finding 6: 200 refused calls make 200 in `trix_rpc_refused_total` by reason
    and one log line per method and reason (not 200), which says how many it stands for."""
    runtime, _ = await start_probe(runtime_config())
    try:
        with structlog.testing.capture_logs() as logs:
            async with grpc.aio.insecure_channel(runtime.address) as channel:
                stub = timers_pb2_grpc.TimersServiceStub(channel)
                for player in ["illegal"] * 150 + ["stale"] * 50:
                    with pytest.raises(grpc.aio.AioRpcError):
                        await stub.GetPresence(timers_pb2.GetPresenceRequest(player_id=player), timeout=10)
        lines = [e for e in logs if e["event"] == "rpc refused"]
        assert sorted((e["reason"], e["refused"]) for e in lines) == [("IllegalMove", 1), ("StaleTurn", 1)]
        url = f"http://127.0.0.1:{runtime.metrics_port}/metrics"
        body = await asyncio.to_thread(lambda: urllib.request.urlopen(url, timeout=10).read().decode())
        for reason, count in (("IllegalMove", 150), ("StaleTurn", 50)):
            assert (
                f'trix_rpc_refused_total{{grpc_method="GetPresence",grpc_service="trix.v1.TimersService",'
                f'reason="{reason}"}} {count}.0'
            ) in body
    finally:
        await runtime.stop()


def test_a_refusal_line_a_minute_tells_how_many_it_stands_for() -> None:
    now = [0.0]
    refusals = RefusalLog(every_s=60.0, clock=lambda: now[0])
    with structlog.testing.capture_logs() as logs:
        for second in range(0, 150):
            now[0] = float(second)
            refusals.refused("PlayCard", "IllegalMove", "FAILED_PRECONDITION", "must follow suit")
    assert [(e["grpc_method"], e["refused"]) for e in logs] == [("PlayCard", 1), ("PlayCard", 60), ("PlayCard", 60)]
