"""The SIGKILL fault run of issue 5: 3 table replicas on a real NATS, concurrent bot games
driven through table commands; again and again, the owner of a random running table is
SIGKILLed right at one of that table's acknowledged moves and restarted at once.

Measured: every acknowledged action is in its table's log exactly once, no action is
applied twice, every game finishes with the scores its record replays to, and the
resume time of every table the killed replica owned (from the kill to that table's next
acknowledged action whose request was sent after the kill).

`python tests/replicas/fault.py --kills 20` (make fault-replicas) prints, last, one JSON
line; tests/replicas/test_fault.py runs a CI-sized version and asserts on it.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from replicas_support import VARIANTS, Ack, Cluster, Driver, GameStats, GatewayClient, check_games, summary

from support.nats import AuthNats
from trix.natsio.subjects import table_shard


@dataclass
class Kill:
    replica: int
    at: float
    tables: list[str]
    resume: dict[str, float] = field(default_factory=dict)


async def _kill_at_ack(
    cluster: Cluster, rng: random.Random, current: dict[int, str], stats: GameStats, drivers: list[Driver]
) -> Kill | None:
    """SIGKILL the owner of a random running table right at one of its next 1-4 acknowledged
    moves; None if that game ended first (the caller picks another table)."""
    leases = await cluster.wait_balanced([0, 1, 2], timeout_s=60)
    await asyncio.sleep(rng.uniform(0.2, 1.0))
    running = sorted(t for t in current.values() if t not in stats.finished)
    if not running:
        await asyncio.sleep(0.2)
        return None
    target = rng.choice(running)
    owner_id = leases[table_shard(target)]
    victim = cluster.index_of(owner_id)
    countdown = [rng.randint(1, 4)]
    killed: asyncio.Future[Kill] = asyncio.get_running_loop().create_future()

    def on_ack(ack: Ack) -> None:
        if ack.table_id != target or killed.done():
            return
        countdown[0] -= 1
        if countdown[0] > 0:
            return
        cluster.kill(victim)  # right at this acknowledged move
        at = time.monotonic()
        owned = [t for t in current.values() if t not in stats.finished and leases.get(table_shard(t)) == owner_id]
        killed.set_result(Kill(victim, at, owned))

    for d in drivers:
        d.on_ack.append(on_ack)
    try:
        deadline = time.monotonic() + 60
        while not killed.done() and target not in stats.finished and time.monotonic() < deadline:
            await asyncio.wait({killed}, timeout=0.2)
    finally:
        for d in drivers:
            d.on_ack.remove(on_ack)
    return killed.result() if killed.done() else None


async def run_fault(
    workdir: Path, *, slots: int = 6, kills: int = 3, seed: int = 5, say: Any = print
) -> dict[str, Any]:
    rng = random.Random(seed)
    server = AuthNats(workdir)
    cluster = Cluster(server, workdir, 3)
    client: GatewayClient | None = None
    try:
        server.start()
        await cluster.connect()
        for i in range(3):  # together: the startup fair share (test_startup.py) splits them
            cluster.start(i)
        await cluster.wait_balanced([0, 1, 2], timeout_s=60)
        client = await GatewayClient.connect(server.url("gateway"))
        client.timeout_s = 1.5  # a request to a killed owner is retried soon
        stats = GameStats()
        stop = asyncio.Event()
        current: dict[int, str] = {}
        drivers: list[Driver] = []

        async def slot(n: int) -> None:
            driver = Driver(client, stats, seed * 1000 + n)  # type: ignore[arg-type]
            drivers.append(driver)
            game = 0
            while not stop.is_set():
                table_id = f"s{seed}-{n}-{game}"
                game += 1
                await driver.create(table_id, VARIANTS[(n + game) % len(VARIANTS)])
                current[n] = table_id
                await driver.play(table_id)

        tasks = [asyncio.ensure_future(slot(n)) for n in range(slots)]
        done: list[Kill] = []
        t0 = time.monotonic()
        for k in range(kills):
            kill: Kill | None = None
            picked = time.monotonic()
            while kill is None:
                assert time.monotonic() - picked < 120, "no running table to kill the owner of"
                kill = await _kill_at_ack(cluster, rng, current, stats, drivers)
            victim = kill.replica
            cluster.start(victim)  # restarted at once: it rejoins as a new replica
            deadline = time.monotonic() + 30
            while time.monotonic() < deadline:
                for t in kill.tables:
                    if t in kill.resume:
                        continue
                    after = [a.acked for a in stats.acks if a.table_id == t and a.sent >= kill.at]
                    if after:
                        kill.resume[t] = min(after) - kill.at
                    elif t in stats.finished:
                        kill.resume[t] = 0.0
                if len(kill.resume) == len(kill.tables):
                    break
                await asyncio.sleep(0.05)
            done.append(kill)
            worst = max(kill.resume.values(), default=0.0)
            say(
                f"kill {k + 1}/{kills}: replica r{victim} at {kill.at - t0:.1f}s, "
                f"{len(kill.tables)} running tables owned, resumed {len(kill.resume)}, max {worst:.2f}s"
            )
        stop.set()
        await asyncio.wait_for(asyncio.gather(*tasks), 300)
        verdict = await check_games(cluster.nc, stats)  # type: ignore[arg-type]
        resumes = [r for k in done for r in k.resume.values()]
        unresumed = sum(len(k.tables) - len(k.resume) for k in done)
        p95, worst = summary(resumes)
        result: dict[str, Any] = {
            "kills": len(done),
            "actions_acked": verdict.actions_acked,
            "lost": verdict.lost,
            "applied_twice": verdict.applied_twice,
            "games": verdict.games,
            "games_ok": verdict.games_ok,
            "resume_p95_s": p95,
            "resume_max_s": worst,
            "tables_resumed": len(resumes),
            "tables_not_resumed": unresumed,
            "epochs_monotonic": verdict.epochs_ok,
            "retries": stats.retries,
            "problems": verdict.problems[:5],
            "seconds": round(time.monotonic() - t0, 1),
        }
        return result
    finally:
        if client is not None:
            await client.nc.close()
        await cluster.close()
        cluster.stop_all()
        server.stop()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kills", type=int, default=20)
    parser.add_argument("--slots", type=int, default=8)
    parser.add_argument("--seed", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="trix-fault-") as tmp:
        result = asyncio.run(
            run_fault(Path(tmp), slots=args.slots, kills=args.kills, seed=args.seed, say=lambda m: print(m, flush=True))
        )
    keys = ("kills", "actions_acked", "lost", "applied_twice", "games", "games_ok", "resume_p95_s", "resume_max_s")
    ok = (
        result["lost"] == 0
        and result["applied_twice"] == 0
        and result["games_ok"] == result["games"]
        and result["resume_max_s"] <= 5.0
        and result["tables_not_resumed"] == 0
    )
    print("details:", json.dumps({k: v for k, v in result.items() if k not in keys}), flush=True)
    print(
        json.dumps(
            {
                **{k: result[k] for k in keys},
                "acked_lost": result["lost"],
            }
        )
    )
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
