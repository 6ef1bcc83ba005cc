"""The gateway process's gRPC C-core experiments (ADR 0022): `python -m trix.gateway` sets them
before grpc loads, so its sockets are the core's own epoll poller's, not the EventEngine's; an
operator's own GRPC_EXPERIMENTS is left as it is."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

from trix.gateway.config import GRPC_CORE_EXPERIMENTS, GRPC_EXPERIMENTS_ENV

# Imports the gateway's entry module (as `python -m trix.gateway` does, without running it),
# then serves one call on loopback with the core's TCP tracer on, and prints what it saw.
PROBE = textwrap.dedent(
    """
    import asyncio, os, sys
    import trix.gateway.__main__  # noqa: F401 - what `python -m trix.gateway` runs first
    import grpc

    async def main() -> None:
        server = grpc.aio.server()
        port = server.add_insecure_port("127.0.0.1:0")
        await server.start()
        async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel:
            try:
                await channel.unary_unary("/probe.Probe/Call")(b"", timeout=10)
            except grpc.aio.AioRpcError as err:
                print("status", err.code().name)
        await server.stop(0)

    asyncio.run(main())
    print("experiments", os.environ.get("GRPC_EXPERIMENTS", ""))
    """
)


def _probe(extra_env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != GRPC_EXPERIMENTS_ENV}
    env.update(GRPC_TRACE="tcp", GRPC_VERBOSITY="debug", **extra_env)
    return subprocess.run(
        [sys.executable, "-c", PROBE], env=env, capture_output=True, text=True, timeout=60, check=True
    )


def test_gateway_process_serves_its_sockets_with_the_core_poller() -> None:
    done = _probe({})
    assert "status UNIMPLEMENTED" in done.stdout  # a real call was served on loopback
    assert f"experiments {GRPC_CORE_EXPERIMENTS}" in done.stdout
    assert "tcp_posix.cc" in done.stderr  # the core's own TCP endpoint, polled by epoll1


def test_an_operators_grpc_experiments_are_left_as_they_are() -> None:
    done = _probe({GRPC_EXPERIMENTS_ENV: "monitoring_experiment"})
    assert "status UNIMPLEMENTED" in done.stdout
    assert "experiments monitoring_experiment" in done.stdout
    assert "tcp_posix.cc" not in done.stderr  # the EventEngine's endpoints, grpc's default
