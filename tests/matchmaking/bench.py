"""Benchmark of matchmaking (`make bench-matchmaking`): 3 replica processes on a real
nats-server; solo tickets arrive at a steady rate; prints one JSON line with the tickets
matched per second and the p50/p99 wait (enqueue sent -> MatchFormed seen).

Also counts what a burst costs: enqueue calls that failed (by status), partition leases a
replica lost to another ("partition lease lost" in its log) and leases that expired but were
taken back by their owner before anyone else ("renewed late").

Usage: bench.py [--rate 300] [--seconds 20] [--replicas 3] [--logs DIR]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import tempfile
import time
from pathlib import Path

import grpc
import nats
from mm_support import ReplicaProcess, identity

from support.nats import NatsServer
from trix.natsio import subjects
from trix.v1 import common_pb2, events_pb2
from trix.v1 import matchmaking_pb2 as mm
from trix.v1.matchmaking_pb2_grpc import MatchmakingServiceStub as Stub


async def drive(nats_url: str, addresses: list[str], rate: float, seconds: float) -> dict[str, object]:
    nc = await nats.connect(nats_url)
    seen: dict[str, float] = {}

    async def on_match(msg: nats.aio.msg.Msg) -> None:
        event = events_pb2.Event()
        event.ParseFromString(msg.data)
        now = time.monotonic()
        for s in event.match_formed.seats:
            if s.player_id:
                seen.setdefault(s.player_id, now)

    await nc.subscribe(subjects.match_formed(), cb=on_match)
    channels = [grpc.aio.insecure_channel(a) for a in addresses]
    stubs = [Stub(c) for c in channels]
    sent: dict[str, float] = {}
    wish = mm.GameWish(variant=common_pb2.VARIANT_TRIX)
    total = int(rate * seconds)
    start = time.monotonic()
    tasks = []

    errors: dict[str, int] = {}

    async def one(i: int) -> None:
        player = f"b{i}"
        sent[player] = time.monotonic()
        request = mm.EnqueueTicketRequest(wish=wish, request_id=f"r{i}")
        try:
            await stubs[i % len(stubs)].EnqueueTicket(request, metadata=identity(player), timeout=30)
        except grpc.aio.AioRpcError as err:
            errors[err.code().name] = errors.get(err.code().name, 0) + 1

    for i in range(total):
        target = start + i / rate
        delay = target - time.monotonic()
        if delay > 0:
            await asyncio.sleep(delay)
        tasks.append(asyncio.ensure_future(one(i)))
    await asyncio.gather(*tasks)
    deadline = time.monotonic() + 60
    ok = total - sum(errors.values())
    expect = ok - ok % 4
    while len(seen) < expect and time.monotonic() < deadline:  # noqa: ASYNC110 - polling a counter
        await asyncio.sleep(0.1)
    end = max(seen.values()) if seen else time.monotonic()
    waits = sorted(seen[p] - sent[p] for p in seen if p in sent)
    for c in channels:
        await c.close()
    await nc.close()

    def pct(q: float) -> float:
        return round(waits[min(len(waits) - 1, int(q * len(waits)))] * 1000, 1) if waits else -1.0

    return {
        "bench": "matchmaking",
        "replicas": len(addresses),
        "arrival_rate_per_s": rate,
        "tickets": total,
        "matched": len(seen),
        "tickets_matched_per_s": round(len(seen) / (end - start), 1),
        "wait_p50_ms": pct(0.50),
        "wait_p99_ms": pct(0.99),
        "enqueue_errors": errors,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rate", type=float, default=300.0)
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--replicas", type=int, default=3)
    parser.add_argument("--logs", type=Path, default=None, help="keep the replicas' and NATS logs here")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        if args.logs is not None:
            args.logs.mkdir(parents=True, exist_ok=True)
            work = args.logs
        server = NatsServer(work)
        server.start()
        replicas = [
            ReplicaProcess(f"mm-{i}", work, server.url, TRIX_MATCHMAKING_BOT_FILL_S="100000")
            for i in range(args.replicas)
        ]
        try:
            for r in replicas:
                r.start()
            time.sleep(1.5)
            figures = asyncio.run(drive(server.url, [r.address for r in replicas], args.rate, args.seconds))
        finally:
            for r in replicas:
                r.stop()
            server.stop()
        logs = [r.log_path.read_text(errors="replace") for r in replicas]
        figures["leases_lost"] = sum(text.count("partition lease lost") for text in logs)
        figures["leases_renewed_late"] = sum(text.count("partition lease renewed late") for text in logs)
    print(json.dumps(figures, separators=(",", ":")))
    return 0


if __name__ == "__main__":
    sys.exit(main())
