"""Run inside the container run's table container, as its NATS user (`make test-containers`):

    podman exec -i table-0-table python -c "$(cat tests/containers/log_check.py)" leader
    podman exec -i table-0-table python -c "$(cat tests/containers/log_check.py)" check < accepted.json

NATS is not published on the host (only the edge is): the check runs where the services run,
with the table's own credentials, CA and URLs (TRIX_NATS_URL, TRIX_TLS_CA_FILE). Self-contained:
only the image's `trix` package and nats-py.

- `leader`: prints {"TABLE_LOG": <server name of its leader>, "KV_table_leases": ...} (the
  NATS pod to kill: server names are the pod names, deploy/k8s/base/nats/nats.conf).
- `check`: stdin is the load test's accepted.json ({table id: [accepted action ids]}); prints
  `verdict`: every accepted action is in its table's TABLE_LOG exactly once, one writer at a
  time (the fault runs' lost / applied-twice / two-writers checks, tests/cluster).
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from typing import Any

TABLE_LOG = "TABLE_LOG"
WRITER_HEADER = "Trix-Writer"
"""trix.table.adapters.WRITER_HEADER: `<replica>/<epoch>` of the entry's writer."""


def verdict(accepted: dict[str, list[str]], logs: dict[str, list[tuple[str, str]]]) -> dict[str, Any]:
    """Accepted action ids against each table's log [(entry id, writer header)]."""
    lost = twice = two_writers = 0
    problems: list[str] = []
    for table_id in sorted(accepted):
        entries = logs.get(table_id, [])
        ids = [i for i, _ in entries]
        twice += len(ids) - len(set(ids))
        missing = set(accepted[table_id]) - set(ids)
        lost += len(missing)
        if missing:
            problems.append(f"{table_id}: {len(missing)} accepted actions not in the log")
        writers = [w.rsplit("/", 1) for _, w in entries if "/" in w]
        epochs = [int(e) if e.isdigit() else 0 for _, e in writers]
        per_epoch: dict[int, set[str]] = {}
        for (name, _), epoch in zip(writers, epochs, strict=True):
            per_epoch.setdefault(epoch, set()).add(name)
        if epochs != sorted(epochs) or any(len(names) > 1 for names in per_epoch.values()):
            two_writers += 1
            problems.append(f"{table_id}: two writers in the log, in turn: {writer_runs(entries)}")
    return {
        "tables_checked": len(accepted),
        "accepted": sum(len(set(ids)) for ids in accepted.values()),
        "lost": lost,
        "applied_twice": twice,
        "two_writers": two_writers,
        "log_problems": problems[:8],
    }


def writer_runs(entries: list[tuple[str, str]]) -> list[str]:
    """The log's writers in turn, `<writer> x<entries>` (what a two-writer problem looked like)."""
    runs: list[list[Any]] = []
    for _, writer in entries:
        if runs and runs[-1][0] == writer:
            runs[-1][1] += 1
        else:
            runs.append([writer, 1])
    return [f"{w or '-'} x{n}" for w, n in runs]


async def _connect() -> Any:
    import nats

    from trix import tls
    from trix.natsio import permissions

    servers = [s.strip() for s in os.environ["TRIX_NATS_URL"].split(",") if s.strip()]
    user = permissions.user_of(servers[0]) or "table"
    return await nats.connect(
        servers=servers,
        tls=tls.client_context(os.environ.get("TRIX_TLS_CA_FILE", "")),
        inbox_prefix=permissions.inbox_prefix(user).encode(),
        max_reconnect_attempts=10,
    )


async def read_log(js: Any, table_id: str) -> list[tuple[str, str]]:
    from nats.js.errors import NotFoundError

    from trix.natsio import subjects

    out: list[tuple[str, str]] = []
    seq = 1
    while True:
        try:
            msg = await js.get_msg(TABLE_LOG, seq=seq, subject=subjects.table_log(table_id), next=True)
        except NotFoundError:
            return out
        out.append((json.loads(msg.data)["id"], (msg.headers or {}).get(WRITER_HEADER, "")))
        seq = msg.seq + 1


async def _main(mode: str) -> dict[str, Any]:
    nc = await _connect()
    try:
        js = nc.jetstream(timeout=10.0)
        if mode == "leader":
            leaders: dict[str, Any] = {}
            for stream in (TABLE_LOG, "KV_table_leases"):
                info = await js.stream_info(stream)
                leaders[stream] = info.cluster.leader if info.cluster is not None else None
                leaders[f"{stream}_replicas"] = info.config.num_replicas
            return leaders
        accepted: dict[str, list[str]] = json.load(sys.stdin)
        logs = {table_id: await read_log(js, table_id) for table_id in sorted(accepted)}
        return verdict(accepted, logs)
    finally:
        await nc.close()


if __name__ == "__main__":
    print(json.dumps(asyncio.run(_main(sys.argv[1] if len(sys.argv) > 1 else "check"))), flush=True)
