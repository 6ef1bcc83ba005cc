"""Benchmark of coalesced NATS reads (ADR 0019): the subscriber's CPU per received message
with read windows of 0 (reads at once, as the library does), 5 and 20 ms, and with window 0
and direct delivery (`subscribe_direct`: no task step per message, ADR 0019 addendum), on one
wildcard subscription (the timers' shape) and on 1,000 subscriptions (the gateway's), at a
steady publish rate on a real nats-server, each subscriber on the services' event loop (uvloop).

`make bench-nats-reads` (RATE=1600 SECONDS=12): one JSON line per case, then a summary line
with every case's CPU per message as a ratio to the window-0 queued figure of the same run.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing
import time
from typing import Any

from support.nats import bare_server
from trix.natsio.coalesce import new_client, subscribe_direct
from trix.runtime import eventloop

CASES = ((0.0, False), (5.0, False), (20.0, False), (0.0, True))
"""(read window in ms, direct delivery)"""
SHAPES = {"one-wildcard": 1, "1000-subjects": 1000}


async def _subscribe(url: str, window_ms: float, direct: bool, subs: int, seconds: float, ready: Any, out: Any) -> None:
    nc = new_client(window_ms / 1000)
    await nc.connect(url)
    received = 0

    def count(_msg: Any) -> None:
        nonlocal received
        received += 1

    async def on_msg(msg: Any) -> None:
        count(msg)

    for subject in ["bench.>"] if subs == 1 else [f"bench.{i}.*" for i in range(subs)]:
        if direct:
            await subscribe_direct(nc, subject, count)
        else:
            await nc.subscribe(subject, cb=on_msg)
    await nc.flush()
    ready.set()
    await asyncio.sleep(2.0)  # the publisher reaches its rate
    cpu0, got0 = time.process_time(), received
    await asyncio.sleep(seconds)
    cpu, got = time.process_time() - cpu0, received - got0
    await nc.close()
    out.put({"messages": got, "cpu_ms_per_msg": round(cpu * 1000 / max(got, 1), 4)})


def _subscriber_main(url: str, window_ms: float, direct: bool, subs: int, seconds: float, ready: Any, out: Any) -> None:
    eventloop.run(_subscribe(url, window_ms, direct, subs, seconds, ready, out))


async def _publish(url: str, rate: float, seconds: float, subjects: int) -> None:
    nc = new_client(0)
    await nc.connect(url)
    payload = b"x" * 300
    start = time.monotonic()
    sent = 0
    while (now := time.monotonic()) < start + seconds:
        due = int((now - start) * rate)
        while sent < due:
            await nc.publish(f"bench.{sent % subjects}.e", payload)
            sent += 1
        await asyncio.sleep(0.001)
    await nc.flush()
    await nc.close()


def run_case(url: str, window_ms: float, direct: bool, subs: int, rate: float, seconds: float) -> dict[str, Any]:
    ctx = multiprocessing.get_context("spawn")
    ready, out = ctx.Event(), ctx.Queue()
    proc = ctx.Process(target=_subscriber_main, args=(url, window_ms, direct, subs, seconds, ready, out))
    proc.start()
    try:
        if not ready.wait(60):
            raise RuntimeError("the subscriber did not start")
        eventloop.run(_publish(url, rate, seconds + 3.0, max(subs, 1000)))
        result: dict[str, Any] = out.get(timeout=60)
    finally:
        proc.join(30)
        if proc.is_alive():
            proc.kill()
            proc.join()
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rate", type=float, default=1600.0, help="messages per second")
    parser.add_argument("--seconds", type=float, default=12.0, help="measured seconds per case")
    args = parser.parse_args()
    with bare_server() as server:
        summary: dict[str, Any] = {"rate_per_s": args.rate}
        for shape, subs in SHAPES.items():
            base = 0.0
            for window, direct in CASES:
                case = run_case(server.url, window, direct, subs, args.rate, args.seconds)
                case.update(shape=shape, window_ms=window, direct=direct)
                print(json.dumps(case), flush=True)
                if window == 0 and not direct:
                    base = case["cpu_ms_per_msg"]
                else:
                    name = f"{shape}_{window:g}ms{'_direct' if direct else ''}_ratio"
                    summary[name] = round(case["cpu_ms_per_msg"] / base, 3)
        print(json.dumps(summary), flush=True)


if __name__ == "__main__":
    main()
