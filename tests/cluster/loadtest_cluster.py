"""`make loadtest-cluster` (issue 19): `trix loadtest steady` on the single NATS node and on
the 3-node JetStream cluster (every stream and bucket R3) in the same run, one after the
other with the same arguments, and the ratios: what replication costs in throughput and
latency. Each platform is the one of `trix up` (`--nats-cluster 1` / `3`), the load test
drives it through its gateway (`--server`); prints each run's summary, then, last, one JSON
line with both and the ratios (cluster / single).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from cluster_support import NatsCluster

LAB_ENV = {
    # as `trix loadtest` starts its own platform (trix.loadtest.runner.start_platform)
    "TRIX_MATCHMAKING_BOT_FILL_S": "30",
    "TRIX_GATEWAY_RATE_PER_S": "1000",
    "TRIX_GATEWAY_RATE_BURST": "2000",
}
KEYS = ("actions_per_s", "p50_ms", "p95_ms", "p99_ms", "max_ms", "errors", "games_finished", "games_verified")


async def one(nodes: int, workdir: Path, argv: list[str]) -> dict[str, Any]:
    cluster = NatsCluster(workdir / f"state-{nodes}", nodes=nodes, env=LAB_ENV)
    try:
        await cluster.start()
        cmd = [sys.executable, "-m", "trix.cli", "loadtest", "steady", "--server", cluster.gateways[0], *argv]
        cmd += ["--out", str(workdir / f"results-{nodes}"), "--echo-seconds", "0", "--floor-seconds", "0"]
        done = await asyncio.to_thread(subprocess.run, cmd, capture_output=True, text=True, check=False)
        lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
        if not lines:
            raise RuntimeError(f"loadtest on {nodes} node(s) printed no summary: {done.stderr[-2000:]}")
        summary: dict[str, Any] = json.loads(lines[-1])
        return {k: summary.get(k) for k in KEYS}
    finally:
        await cluster.stop()


def ratio(a: Any, b: Any) -> float | None:
    return round(a / b, 3) if isinstance(a, int | float) and isinstance(b, int | float) and b else None


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tables", type=int, default=100)
    parser.add_argument("--duration", type=float, default=60)
    parser.add_argument("--keep", type=Path, default=None, help="keep states and results in this folder")
    parser.add_argument("--finish", action="store_true", help="play every game to its end and verify it (longer)")
    args = parser.parse_args()
    argv = ["--tables", str(args.tables), "--duration", str(args.duration), *([] if args.finish else ["--no-finish"])]
    with tempfile.TemporaryDirectory(prefix="trix-loadtest-cluster-") as tmp:
        workdir = args.keep or Path(tmp)
        single = asyncio.run(one(1, workdir, argv))
        print("single node:", json.dumps(single), flush=True)
        cluster = asyncio.run(one(3, workdir, argv))
        print("3-node cluster:", json.dumps(cluster), flush=True)
    ratios = {k: ratio(cluster[k], single[k]) for k in ("actions_per_s", "p50_ms", "p95_ms", "p99_ms")}
    print(
        json.dumps(
            {
                "tables": args.tables,
                "duration_s": args.duration,
                "single": single,
                "cluster3": cluster,
                "cluster_over_single": ratios,
            }
        )
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
