"""Services run on uvloop (trix.runtime.eventloop): a lone message must not wait for more
traffic. uvloop once deferred small socket writes to a loop turn that an idle loop never
took (MagicStack/uvloop#631), which with nats-py left messages stuck until more traffic
came. Here a real child process on the services' loop answers NATS requests and gRPC
calls one at a time with idle gaps, and pushes messages from a timer (not in answer to a
read, as the gateway pushes table events): each must arrive long before any later traffic
could have flushed it."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator

import grpc
import nats
import pytest

from support.nats import NatsServer
from trix.runtime import eventloop

pytestmark = pytest.mark.timeout(120)

GAP_S = 0.4
"""Idle time between two messages: nothing else flows that could flush a stuck write."""
BOUND_S = 3.0
"""A message later than this was stuck (normal: about a millisecond; loaded box: tens)."""
ROUNDS = 6

CHILD = r"""
import asyncio, json, sys, time
import grpc, nats
from trix.runtime import eventloop

async def main(url):
    nc = await nats.connect(url)

    async def pong(msg):
        await msg.respond(msg.data)

    await nc.subscribe("dl.ping", cb=pong)

    async def tick(n, gap):
        for i in range(n):
            await asyncio.sleep(gap)
            await nc.publish("dl.tick", json.dumps({"i": i, "t": time.time()}).encode())

    async def unary(request, context):
        return request

    async def ticks(request, context):
        n, gap = json.loads(request)
        for i in range(n):
            await asyncio.sleep(gap)
            await context.write(json.dumps({"i": i, "t": time.time()}).encode())

    server = grpc.aio.server()
    server.add_generic_rpc_handlers([grpc.method_handlers_generic_handler("dl.Svc", {
        "Echo": grpc.unary_unary_rpc_method_handler(unary),
        "Ticks": grpc.unary_stream_rpc_method_handler(ticks),
    })])
    port = server.add_insecure_port("127.0.0.1:0")
    await server.start()
    loop = type(asyncio.get_running_loop())
    print(json.dumps({"port": port, "loop": loop.__module__ + "." + loop.__name__}), flush=True)
    started = asyncio.Event()

    async def on_go(msg):
        started.set()
        asyncio.ensure_future(tick(int(msg.data), float(sys.argv[2])))

    await nc.subscribe("dl.go", cb=on_go)
    await asyncio.get_running_loop().run_in_executor(None, sys.stdin.read)  # until the test closes stdin
    await server.stop(0)
    await nc.close()

eventloop.run(main(sys.argv[1]))
"""


@pytest.fixture
def child(nats_server: NatsServer) -> Iterator[tuple[subprocess.Popen[str], dict[str, object]]]:
    env = {**os.environ, eventloop.ENV: "uvloop"}
    proc = subprocess.Popen(
        [sys.executable, "-c", CHILD, nats_server.url, str(GAP_S)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env=env,
    )
    try:
        assert proc.stdout is not None
        info = json.loads(proc.stdout.readline())
        yield proc, info
    finally:
        if proc.stdin is not None:
            proc.stdin.close()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(10)


def test_services_run_on_uvloop_unless_told_otherwise(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(eventloop.ENV, raising=False)
    assert eventloop.loop_kind() == "uvloop"
    monkeypatch.setenv(eventloop.ENV, "asyncio")
    assert eventloop.loop_factory() is None
    monkeypatch.setenv(eventloop.ENV, "trio")
    with pytest.raises(ValueError, match="TRIX_EVENT_LOOP"):
        eventloop.loop_kind()


async def test_lone_nats_messages_on_uvloop_are_not_left_waiting_for_traffic(
    nats_server: NatsServer, child: tuple[subprocess.Popen[str], dict[str, object]]
) -> None:
    _, info = child
    assert info["loop"] == "uvloop.Loop"
    nc = await nats.connect(nats_server.url)
    try:
        late: list[float] = []
        for i in range(ROUNDS):  # a request answered from a read callback
            await asyncio.sleep(GAP_S)
            sent = time.monotonic()
            reply = await nc.request("dl.ping", str(i).encode(), timeout=BOUND_S)
            assert reply.data == str(i).encode()
            late.append(time.monotonic() - sent)
        ticks: asyncio.Queue[tuple[dict[str, float], float]] = asyncio.Queue()

        async def on_tick(msg: nats.aio.msg.Msg) -> None:
            ticks.put_nowait((json.loads(msg.data), time.time()))

        await nc.subscribe("dl.tick", cb=on_tick)
        await nc.publish("dl.go", str(ROUNDS).encode())
        for i in range(ROUNDS):  # published from a timer, with nothing else flowing
            body, got = await asyncio.wait_for(ticks.get(), GAP_S + BOUND_S)
            assert body["i"] == i
            late.append(got - body["t"])
        assert max(late) < BOUND_S, late
    finally:
        await nc.close()


async def test_lone_grpc_replies_on_uvloop_are_not_left_waiting_for_traffic(
    child: tuple[subprocess.Popen[str], dict[str, object]],
) -> None:
    _, info = child
    async with grpc.aio.insecure_channel(f"127.0.0.1:{info['port']}") as channel:
        echo = channel.unary_unary("/dl.Svc/Echo")
        late: list[float] = []
        for i in range(ROUNDS):
            await asyncio.sleep(GAP_S)
            sent = time.monotonic()
            assert await echo(str(i).encode(), timeout=BOUND_S) == str(i).encode()
            late.append(time.monotonic() - sent)
        stream = channel.unary_stream("/dl.Svc/Ticks")(json.dumps([ROUNDS, GAP_S]).encode(), timeout=60)
        i = 0
        async for raw in stream:  # written from a timer on a server stream, as the gateway pushes events
            body = json.loads(raw)
            assert body["i"] == i
            late.append(time.time() - body["t"])
            i += 1
        assert i == ROUNDS
        assert max(late) < BOUND_S, late
