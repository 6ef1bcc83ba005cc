"""Benchmark of the scoring consumer: table events consumed per second (issue 8).

A real nats-server; the TABLE_RESULTS stream is filled first with whole games (TableCreated,
one DealScored per deal, GameEnded carrying a real §12 record, and the CardPlayed events a
table also publishes, which scoring reads and skips), half of them paid tables; then the
scoring service starts in-process and the time until it has consumed every event is
measured. Prints one JSON line: events, applied (journaled), seconds, events_per_second.
`make bench-scoring` runs it.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from scoring_support import ADMIN_TOKEN, EventPublisher, InProcessScoring

from support.nats import NatsServer
from trix.runtime.logs import configure_logging
from trix.v1 import common_pb2, events_pb2

RECORD = Path(__file__).resolve().parents[1] / "golden" / "game_0003.json"  # a COMPLEX game, 8 deals


async def fill(pub: EventPublisher, tables: int, noise: int, record: dict[str, Any]) -> int:
    record_json = json.dumps(record)
    count = 0
    pending: list[Any] = []

    async def flush() -> None:
        await asyncio.gather(*pending)
        pending.clear()

    for t in range(tables):
        table = f"bench{t:05d}"
        players = [f"u{(t + s) % 97:03d}" for s in range(4)]
        seq = 0

        def publish(table: str = table, **body: Any) -> None:
            nonlocal seq, count
            seq += 1
            count += 1
            pending.append(pub.publish(table, seq, **body))

        created = events_pb2.TableCreated(
            variant=common_pb2.VARIANT_COMPLEX,
            seats=[common_pb2.Seat(index=s, player_id=p) for s, p in enumerate(players)],
        )
        if t % 2:
            created.stake.coins = 10
        publish(table_created=created)
        running = [0, 0, 0, 0]
        for d, deal in enumerate(record["deals"]):
            for k in range(noise // len(record["deals"])):
                card = common_pb2.Card(id=k % 52)
                publish(card_played=events_pb2.CardPlayed(deal_index=d, seat=k % 4, card=card))
            running = [a + b for a, b in zip(running, deal["scores"], strict=True)]
            contract = common_pb2.Contract.Value(f"CONTRACT_{deal['contract']}")
            publish(
                deal_scored=events_pb2.DealScored(
                    deal_index=d,
                    contract=contract,
                    points=common_pb2.SeatScores(values=deal["scores"]),
                    totals=common_pb2.SeatScores(values=running),
                )
            )
        publish(
            game_ended=events_pb2.GameEnded(
                record_json=record_json,
                totals=common_pb2.SeatScores(values=record["totals"]),
                ranking=record["ranking"],
                left_seat=-1,
            )
        )
        if len(pending) >= 200:
            await flush()
    await flush()
    return count


async def bench(workdir: Path, tables: int, noise: int, record: dict[str, Any]) -> dict[str, Any]:
    nats_server = NatsServer(workdir)
    nats_server.start()
    try:
        pub = await EventPublisher.connect(nats_server.url)
        total = await fill(pub, tables, noise, record)
        app = InProcessScoring(nats_server.url)
        await app.start()
        try:
            for n in range(97):
                await app.service.grant(f"u{n:03d}", 1000, f"bench-{n}", ADMIN_TOKEN)
            assert app.consumer is not None
            started = time.perf_counter()
            while app.consumer.consumed < total:  # noqa: ASYNC110 - polls the consumer's count
                await asyncio.sleep(0.01)
            seconds = time.perf_counter() - started
            applied = app.service.events_applied
        finally:
            await app.stop()
            await pub.close()
    finally:
        nats_server.stop()
    return {
        "events": total,
        "applied": applied,
        "tables": tables,
        "seconds": round(seconds, 3),
        "events_per_second": round(total / seconds, 1),
        "applied_per_second": round(applied / seconds, 1),
    }


def run_bench(workdir: Path, *, tables: int, noise: int) -> dict[str, Any]:
    return asyncio.run(bench(workdir, tables, noise, json.loads(RECORD.read_text())))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tables", type=int, default=300)
    parser.add_argument("--noise", type=int, default=32, help="CardPlayed events per table (scoring skips them)")
    args = parser.parse_args()
    configure_logging("scoring", "bench", "warning")
    with tempfile.TemporaryDirectory(prefix="bench-scoring-") as tmp:
        result = run_bench(Path(tmp), tables=args.tables, noise=args.noise)
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
