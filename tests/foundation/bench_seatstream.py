"""Micro benchmark (not a test) of issue 10's shared live feeds: the CPU it takes one process
to follow `--tables` tables x 4 seats through `trix.natsio.seatstream.follow`, each reader with
its own subscriptions (`private`, as before) or sharing one per subject (`shared`,
`LiveFeeds`). A second process publishes `--events` public events per table (JetStream,
`sync_interval: always`, one action's worth at a time across the tables); the readers' process
measures its own CPU from after the stored part until every reader saw GameEnded; the
nats-server's CPU is read from /proc over the same window.

    PYTHONPATH=services:tests .venv/bin/python tests/foundation/bench_seatstream.py \
        [--tables 50] [--events 60] [--rounds 2]

Prints one JSON line per run: CPU per public event (all four readers together), NATS
messages the readers' connection received per public event."""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncGenerator
from pathlib import Path

from support.nats import NatsServer
from trix.natsio import seatstream, subjects
from trix.natsio.connection import NatsConnection
from trix.v1 import events_pb2


def cpu_s(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def event(table: str, seq: int, last: bool) -> bytes:
    e = events_pb2.Event(table_id=table, sequence=seq)
    if last:
        e.game_ended.SetInParent()
    else:
        e.card_played.seat = seq % 4
        e.card_played.card.id = seq % 52
    return e.SerializeToString()


async def readers(url: str, mode: str, tables: int) -> None:
    conn = NatsConnection(url, "bench-readers")
    await conn.connect(give_up_after_s=30)
    feeds = seatstream.LiveFeeds(conn) if mode == "shared" else None
    streams = [
        seatstream.follow(conn, f"bench{t}", s, timeout_s=30, feeds=feeds) for t in range(tables) for s in range(4)
    ]
    for stream in streams:
        await anext(stream)  # the stored first event: every reader subscribed
    in_msgs = conn.client.stats["in_msgs"]
    print("ready", flush=True)
    cpu = time.process_time()

    async def drain(stream: AsyncGenerator[events_pb2.Event, None]) -> int:
        return len([e async for e in stream])

    seen = sum(await asyncio.gather(*(drain(s) for s in streams)))
    print("done", time.process_time() - cpu, seen, conn.client.stats["in_msgs"] - in_msgs, flush=True)
    await conn.drain()


async def run(mode: str, tables: int, count: int) -> dict[str, object]:
    server = NatsServer(Path(tempfile.mkdtemp(prefix="bench-seatstream-")))
    server.start()
    assert server.proc is not None
    try:
        pub = NatsConnection(server.url, "bench-publisher")
        await pub.connect(give_up_after_s=30)
        js = pub.jetstream
        for t in range(tables):
            await js.publish(subjects.public_events(f"bench{t}"), event(f"bench{t}", 1, False))
        env = {**os.environ, "TRIX_LOG_LEVEL": "warning"}
        proc = await asyncio.create_subprocess_exec(
            sys.executable, __file__, "--reader", server.url, mode, str(tables), stdout=subprocess.PIPE, env=env
        )
        assert proc.stdout is not None

        async def line(word: bytes) -> list[str]:
            assert proc.stdout is not None
            while got := await proc.stdout.readline():
                if got.startswith(word):
                    return got.decode().split()
            raise RuntimeError("the readers' process ended")

        await line(b"ready")
        server_cpu = cpu_s(server.proc.pid)
        for seq in range(2, count + 1):
            acks = [
                await js.publish_async(subjects.public_events(f"bench{t}"), event(f"bench{t}", seq, seq == count))
                for t in range(tables)
            ]
            await asyncio.gather(*acks)
        _, cpu, seen, received = await line(b"done")
        server_cpu = cpu_s(server.proc.pid) - server_cpu
        await proc.wait()
        await pub.drain()
        published = tables * (count - 1)
        assert int(seen) == 4 * published, (seen, published)
        return {
            "mode": mode,
            "readers_cpu_us_per_event": round(float(cpu) / published * 1e6, 1),
            "nats_server_cpu_us_per_event": round(server_cpu / published * 1e6, 1),
            "messages_in_per_event": round(int(received) / published, 2),
        }
    finally:
        server.stop()


def main() -> None:
    if sys.argv[1:2] == ["--reader"]:
        url, mode, tables = sys.argv[2], sys.argv[3], int(sys.argv[4])
        asyncio.run(readers(url, mode, tables))
        return
    parser = argparse.ArgumentParser()
    parser.add_argument("--tables", type=int, default=50)
    parser.add_argument("--events", type=int, default=60)
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    for _ in range(args.rounds):
        for mode in ("private", "shared"):
            print(json.dumps(asyncio.run(run(mode, args.tables, args.events))), flush=True)


if __name__ == "__main__":
    main()
