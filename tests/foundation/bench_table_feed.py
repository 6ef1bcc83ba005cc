"""Benchmark of the table feed at the gateway (ADR 0012 amendment "one feed per table"): CPU
per action of a gateway's live feeds (`trix.natsio.seatstream.LiveFeeds`, four seat readers per
table with their sinks, as the gateway's sessions follow them) and of nats-server, when an
action's copies come as one feed batch (the public copies and the next seat's own copy, as the
table publishes them) against two batches (the seat's own copy, then the public copies: the
message count of the seat subjects before the feed), on a real nats-server at a steady rate.

`make bench-table-feed` (TABLES=400 RATE=400 SECONDS=15): one JSON line per case, then a summary
line with the one-batch case's CPU per action as a ratio to the two-batch case of the same run.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing
import time
from typing import Any

import psutil

from support.nats import NatsServer, bare_server
from support.waiting import eventually
from trix.natsio import seatstream, subjects
from trix.natsio.connection import NatsConnection
from trix.runtime import eventloop
from trix.v1 import common_pb2, events_pb2

CASES = ("two-batches", "one-batch")


def table_id(i: int) -> str:
    return f"bench-{i}"


def action(table: str, n: int) -> tuple[events_pb2.TableEventBatch, events_pb2.TableEventBatch]:
    """Action `n` of a table (n >= 0): its public copies (a card played, the next turn's public
    copy) and the next seat's own copy of that turn (its legal cards), as two batches."""
    seq, seat = 2 * n + 1, n % 4
    played = events_pb2.Event(table_id=table, sequence=seq)
    played.card_played.seat = (seat + 3) % 4
    played.card_played.card.id = n % 52
    turn = events_pb2.TurnStarted(seats=[seat], decision=common_pb2.DECISION_CARD, turn_seq=seq + 1, seat_copies=True)
    public_turn = events_pb2.Event(table_id=table, sequence=seq + 1, turn_started=turn)
    own_turn = events_pb2.Event()
    own_turn.CopyFrom(public_turn)
    own_turn.turn_started.legal_cards.extend(common_pb2.Card(id=c) for c in range(seat, 52, 4)[:6])
    public = events_pb2.TableEventBatch(events=[played, public_turn])
    own = events_pb2.TableEventBatch(seats=[events_pb2.SeatCopies(seat=seat, events=[own_turn])])
    return public, own


async def _read(url: str, tables: int, seconds: float, ready: Any, out: Any) -> None:
    conn = NatsConnection(url, "bench-feed", streams=(), buckets=())
    await conn.connect(give_up_after_s=30)
    feeds = seatstream.LiveFeeds(conn)
    events = 0

    def sink(_event: events_pb2.Event) -> bool:
        nonlocal events
        events += 1
        return True

    async def nothing_missed(_after: int) -> list[events_pb2.Event]:
        return []

    async def follow(table: str, seat: int) -> None:
        stream = seatstream.follow(conn, table, seat, timeout_s=30, history=nothing_missed, feeds=feeds, sink=sink)
        async for _event in stream:  # only what a sink does not take comes here
            sink(_event)

    readers = [asyncio.ensure_future(follow(table_id(i), s)) for i in range(tables) for s in range(4)]
    await eventually(lambda: all(feeds.live(table_id(i)) for i in range(tables)), 120, "every table's feed")
    ready.set()
    await asyncio.sleep(2.0)  # the publisher reaches its rate
    cpu0, got0 = time.process_time(), events
    await asyncio.sleep(seconds)
    cpu, got = time.process_time() - cpu0, events - got0
    out.put({"cpu_s": cpu, "events": got})
    for task in readers:
        task.cancel()
    await asyncio.gather(*readers, return_exceptions=True)
    await conn.drain()


def _reader_main(url: str, tables: int, seconds: float, ready: Any, out: Any) -> None:
    eventloop.run(_read(url, tables, seconds, ready, out))


async def _publish(url: str, case: str, tables: int, rate: float, seconds: float, sent_q: Any) -> None:
    conn = NatsConnection(url, "bench-feed-table", streams=(), buckets=())
    await conn.connect(give_up_after_s=30)
    nc = conn.client
    start = time.monotonic()
    sent = 0
    while (now := time.monotonic()) < start + seconds:
        due = int((now - start) * rate)
        while sent < due:
            table = table_id(sent % tables)
            public, own = action(table, sent // tables)
            feed = subjects.table_feed(table)
            if case == "one-batch":
                await nc.publish(feed, public.SerializeToString() + own.SerializeToString())
            else:
                await nc.publish(feed, own.SerializeToString())
                await nc.publish(feed, public.SerializeToString())
            sent += 1
        await asyncio.sleep(0.001)
    await nc.flush()
    await conn.drain()
    sent_q.put(sent)


def run_case(server: NatsServer, case: str, tables: int, rate: float, seconds: float) -> dict[str, Any]:
    ctx = multiprocessing.get_context("spawn")
    ready, out, sent_q = ctx.Event(), ctx.Queue(), ctx.Queue()
    reader = ctx.Process(target=_reader_main, args=(server.url, tables, seconds, ready, out))
    reader.start()
    publisher = None
    try:
        if not ready.wait(120):
            raise RuntimeError("the readers did not start")
        publisher = ctx.Process(target=_publish_main, args=(server.url, case, tables, rate, seconds + 4.0, sent_q))
        assert server.proc is not None
        nats_proc = psutil.Process(server.proc.pid)
        publisher.start()
        time.sleep(2.0)
        nats0 = sum(nats_proc.cpu_times()[:2])
        got: dict[str, Any] = out.get(timeout=seconds + 60)
        nats_cpu = sum(nats_proc.cpu_times()[:2]) - nats0
        sent_q.get(timeout=60)
    finally:
        for proc in (reader, publisher):
            if proc is not None:
                proc.join(60)
                if proc.is_alive():
                    proc.kill()
                    proc.join()
    actions = got["events"] / 8  # each of a table's four seats sees two events per action
    return {
        "case": case,
        "actions": round(actions),
        "gateway_ms_per_action": round(got["cpu_s"] * 1000 / max(actions, 1), 4),
        "nats_ms_per_action": round(nats_cpu * 1000 / max(actions, 1), 4),
    }


def _publish_main(url: str, case: str, tables: int, rate: float, seconds: float, sent_q: Any) -> None:
    eventloop.run(_publish(url, case, tables, rate, seconds, sent_q))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--tables", type=int, default=400)
    parser.add_argument("--rate", type=float, default=400.0, help="actions per second")
    parser.add_argument("--seconds", type=float, default=15.0, help="measured seconds per case")
    parser.add_argument("--rounds", type=int, default=2, help="each case this many times, alternating")
    args = parser.parse_args()
    with bare_server() as server:
        results: dict[str, list[dict[str, Any]]] = {c: [] for c in CASES}
        for _ in range(args.rounds):
            for case in CASES:
                result = run_case(server, case, args.tables, args.rate, args.seconds)
                print(json.dumps(result), flush=True)
                results[case].append(result)
        summary: dict[str, Any] = {"tables": args.tables, "rate_per_s": args.rate}
        for key in ("gateway_ms_per_action", "nats_ms_per_action"):
            one = sum(r[key] for r in results["one-batch"]) / args.rounds
            two = sum(r[key] for r in results["two-batches"]) / args.rounds
            summary[key.replace("_ms_per_action", "_one_batch_ratio")] = round(one / two, 3)
        print(json.dumps(summary), flush=True)


if __name__ == "__main__":
    main()
