"""Micro benchmark (not a test) of issue 10's event batching: the CPU it takes to move table
events from a gateway Session's outbox to a client over one loopback gRPC stream, with and
without `batch_events`. The server side is the real `Session.messages` (fed like the follow
task feeds it: the events of one action pushed back to back), the client side the real
`trix.client.flattened`; server and client share this process, so the CPU is both ends'. An
action's events are pushed once the previous action's are written (no backlog), so with
batching each action is one message.

    PYTHONPATH=services .venv/bin/python tests/gateway/bench_batching.py [--events 30000] [--per-action 3]

Prints one JSON line per mode and the ratio."""

from __future__ import annotations

import argparse
import asyncio
import json
import time
from collections.abc import AsyncIterator
from typing import Any

import grpc

from trix.client import flattened
from trix.gateway.config import GatewayConfig
from trix.gateway.service import GatewayService
from trix.gateway.session import Session
from trix.gateway.tokens import Principal
from trix.v1 import events_pb2, gateway_pb2


class Unused:
    """The gateway's NATS ports, which this benchmark never reaches (one Session's outbox only)."""

    def __getattr__(self, name: str) -> Any:
        raise AssertionError(f"the batching benchmark does not use {name}")


def events(count: int) -> list[events_pb2.Event]:
    out = []
    for i in range(1, count + 1):
        e = events_pb2.Event(table_id="bench-table-0001", sequence=i)
        if i % 3 == 0:
            e.turn_started.seats.append(i % 4)
            e.turn_started.turn_seq = i
        else:
            e.card_played.seat = i % 4
            e.card_played.card.id = i % 52
        out.append(e)
    return out


async def run(batch: bool, count: int, per_action: int) -> dict[str, Any]:
    config = GatewayConfig.from_env(
        {
            "TRIX_NATS_URL": "none",
            "TRIX_PLAYER_TOKEN_KEY": "k" * 32,
            "TRIX_GATEWAY_TOKEN_KEY": "g" * 32,
            "TRIX_GATEWAY_OUTBOX": str(4 * per_action + 16),
        }
    )
    gateway = GatewayService(config, Unused(), Unused(), Unused())
    todo = events(count)

    async def stream(request: Any, context: Any) -> AsyncIterator[gateway_pb2.SessionResponse]:
        session = Session(gateway, Principal("bench", "bench", 0), interactive=False)
        session.batch_events = batch

        drained = asyncio.Event()
        drained.set()

        async def feed() -> None:
            for i in range(0, count, per_action):
                await drained.wait()  # the next action once the previous one's events are out
                drained.clear()
                for event in todo[i : i + per_action]:  # one action's events, back to back
                    session.push(event)
            await drained.wait()
            session.push(gateway_pb2.SessionResponse(pong=True))

        feeder = asyncio.ensure_future(feed())
        async for message in session.messages():
            yield message
            if message.pong:
                break
            if session.outbox.empty():
                drained.set()
        await feeder

    server = grpc.aio.server()
    handler = grpc.unary_stream_rpc_method_handler(
        stream,
        request_deserializer=gateway_pb2.SessionRequest.FromString,
        response_serializer=gateway_pb2.SessionResponse.SerializeToString,
    )
    server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler("bench.Bench", {"Events": handler}),))
    port = server.add_insecure_port("127.0.0.1:0")
    await server.start()
    try:
        async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel:
            method = channel.unary_stream(
                "/bench.Bench/Events",
                request_serializer=gateway_pb2.SessionRequest.SerializeToString,
                response_deserializer=gateway_pb2.SessionResponse.FromString,
            )
            cpu, wall = time.process_time(), time.perf_counter()
            raw = method(gateway_pb2.SessionRequest())
            messages = 0

            async def counted() -> AsyncIterator[gateway_pb2.SessionResponse]:
                nonlocal messages
                async for m in raw:
                    messages += 1
                    yield m

            seen = 0
            async for m in flattened(counted()):
                if m.HasField("event"):
                    seen += 1
                    assert m.event.sequence == seen
            cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
    finally:
        await server.stop(None)
    assert seen == count, (seen, count)
    return {
        "batch_events": batch,
        "events": count,
        "messages": messages - 1,
        "cpu_us_per_event": round(cpu / count * 1e6, 1),
        "wall_s": round(wall, 2),
    }


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--events", type=int, default=30000)
    parser.add_argument("--per-action", type=int, default=3)
    args = parser.parse_args()
    results = [await run(batch, args.events, args.per_action) for batch in (False, True)]
    for result in results:
        print(json.dumps(result))
    ratio = results[0]["cpu_us_per_event"] / max(results[1]["cpu_us_per_event"], 0.1)
    print(json.dumps({"cpu_ratio_unbatched_to_batched": round(ratio, 2)}))


if __name__ == "__main__":
    asyncio.run(main())
