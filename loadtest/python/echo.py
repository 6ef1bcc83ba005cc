"""The baseline: a bare gRPC echo through the same kind of server (grpc.aio, its own
process, loopback), driven the same way the bots drive the gateway (messages on
bidirectional streams, several client processes), so the report can state the
platform's per-action cost as a ratio to the cheapest possible round trip.

Owns `echo_server_main` (the server process), `echo_client_main` (one client process:
`streams` ping-pong streams for `seconds`) and `echo_baseline` (both run, the round trips
per second and their latency). Raw bytes, no protobuf, no logic.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator, Sequence
from typing import Any

import grpc

from trix.loadtest.report import percentile
from trix.runtime import eventloop

METHOD = "/trix.loadtest.Echo/Stream"


async def _serve(port_out: Any, stop: Any) -> None:
    async def stream(requests: AsyncIterator[bytes], _context: grpc.aio.ServicerContext[bytes, bytes]) -> Any:
        async for payload in requests:
            yield payload

    await serve_stream("trix.loadtest.Echo", stream, port_out, stop)


async def serve_stream(
    service: str, stream: Any, port_out: Any, stop: Any, options: Sequence[tuple[str, int]] = ()
) -> None:
    """Serve one bidirectional `Stream` method of raw bytes on a free loopback port (put on
    `port_out`) until `stop` is set: the baselines' server (the echo's and the floor's), with
    the gRPC server `options` given."""
    handler = grpc.method_handlers_generic_handler(service, {"Stream": grpc.stream_stream_rpc_method_handler(stream)})
    server = grpc.aio.server(options=list(options))
    server.add_generic_rpc_handlers((handler,))
    port = server.add_insecure_port("127.0.0.1:0")
    await server.start()
    port_out.put(port)
    await asyncio.get_running_loop().run_in_executor(None, stop.wait)
    await server.stop(0.5)


def echo_server_main(port_out: Any, stop: Any) -> None:
    with contextlib.suppress(KeyboardInterrupt):
        eventloop.run(_serve(port_out, stop))


async def _ping_pong(target: str, seconds: float, streams: int) -> tuple[int, list[float]]:
    channel = grpc.aio.insecure_channel(target)
    call_factory: Any = channel.stream_stream(METHOD)
    count = 0
    latencies: list[float] = []
    deadline = time.monotonic() + seconds
    payload = b"x" * 64

    async def one() -> None:
        nonlocal count
        call = call_factory()
        while time.monotonic() < deadline:
            t0 = time.perf_counter()
            await call.write(payload)
            await call.read()
            latencies.append((time.perf_counter() - t0) * 1000)
            count += 1
        await call.done_writing()

    try:
        await asyncio.gather(*(one() for _ in range(streams)))
    finally:
        await channel.close()
    return count, latencies


def echo_client_main(target: str, seconds: float, streams: int, out: Any) -> None:
    count, latencies = eventloop.run(_ping_pong(target, seconds, streams))
    latencies.sort()
    out.put((count, latencies[:: max(1, len(latencies) // 2000)]))


def echo_baseline(ctx: Any, seconds: float, workers: int, streams: int) -> dict[str, float]:
    """Round trips per second of a bare grpc.aio echo (server in its own process)."""
    port_q, stop = ctx.Queue(), ctx.Event()
    server = ctx.Process(target=echo_server_main, args=(port_q, stop), daemon=True)
    server.start()
    try:
        port = port_q.get(timeout=30)
        out = ctx.Queue()
        per = max(1, streams // workers)
        clients = [
            ctx.Process(target=echo_client_main, args=(f"127.0.0.1:{port}", seconds, per, out), daemon=True)
            for _ in range(workers)
        ]
        for c in clients:
            c.start()
        total, lat = 0, []
        for _ in clients:
            count, sample = out.get(timeout=seconds + 60)
            total += count
            lat += sample
        for c in clients:
            c.join(10)
        lat.sort()
        return {
            "echo_baseline_per_s": round(total / seconds, 1),
            "echo_p50_ms": round(percentile(lat, 50), 3),
            "echo_p99_ms": round(percentile(lat, 99), 3),
            "echo_streams": per * workers,
        }
    finally:
        stop.set()
        server.join(5)
        if server.is_alive():
            server.kill()
