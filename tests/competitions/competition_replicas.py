"""Helpers of the competitions replicas' tests and fault run (docs/adr/0026): competitions and
table replicas as real processes on one real nats-server (`Replicas`), the owner of a
competition read from the `competition_leases` bucket, a competition's stored events and its
tables' stored results, and the audit every run ends with (`audit`: no round started twice, no
entrant seated twice in a round, no entrant lost, no table created twice)."""

from __future__ import annotations

import asyncio
import contextlib
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import grpc
import nats
import nats.js.errors
from nats.aio.client import Client

from support.nats import AuthNats
from support.ports import wait_port
from support.table import TableProcess, table_env
from trix.competitions.config import DIGEST_DIR_ENV
from trix.natsio import names, subjects
from trix.natsio.permissions import inbox_prefix
from trix.v1 import competitions_pb2, competitions_pb2_grpc, events_pb2


@dataclass
class Replicas:
    """`count` processes of `module` (instances `<prefix>-r0`, ...) on one AuthNats, each on its own
    gRPC port; a restart is a new replica id (the instance plus a fresh suffix)."""

    server: AuthNats
    workdir: Path
    user: str
    module: str
    count: int
    env: dict[str, str] = field(default_factory=dict)
    procs: list[TableProcess] = field(default_factory=list)
    kills: int = 0

    def __post_init__(self) -> None:
        for i in range(self.count):
            env = table_env(
                self.server.url(self.user),
                self.user,
                TRIX_INSTANCE=f"{self.user}-r{i}",
                TRIX_LOG_LEVEL="info",
                **self.env,
            )
            self.procs.append(TableProcess(env, self.workdir / f"{self.user}-r{i}.log", self.module))

    def port(self, i: int) -> int:
        return int(self.procs[i].env["TRIX_GRPC_PORT"])

    def start(self, i: int) -> None:
        self.procs[i].start()

    def start_all(self) -> None:
        for i in range(self.count):
            self.start(i)
        for i in range(self.count):
            wait_port(self.port(i), 60)

    def kill(self, i: int) -> None:
        self.kills += 1
        self.procs[i].kill()

    def restart(self, i: int) -> None:
        """SIGKILL, then started again at once (a new replica id)."""
        self.kill(i)
        self.start(i)

    def stop_all(self) -> None:
        for p in self.procs:
            p.stop()

    def index_of(self, replica: str) -> int | None:
        """`<user>-r<i>-<suffix>` -> i."""
        prefix = f"{self.user}-r"
        if not replica.startswith(prefix):
            return None
        with contextlib.suppress(ValueError):
            return int(replica[len(prefix) :].rsplit("-", 1)[0])
        return None


def competitions_replicas(server: AuthNats, workdir: Path, digests: Path, tick_s: float, **extra: str) -> Replicas:
    """Two competitions replicas publishing their files to one folder, the review period 0."""
    env = {DIGEST_DIR_ENV: str(digests), "TRIX_COMPETITIONS_TICK_S": str(tick_s), "TRIX_COMPETITIONS_REVIEW_S": "0"}
    env["TRIX_COMPETITIONS_AWAIT_PLAYERS"] = "0"  # no timers here to end a table's seed turn (docs/rules.md §10)
    return Replicas(server, workdir, "competitions", "trix.competitions", 2, {**env, **extra})


def stub(port: int) -> tuple[grpc.aio.Channel, Any]:
    channel = grpc.aio.insecure_channel(f"127.0.0.1:{port}")
    return channel, competitions_pb2_grpc.CompetitionsServiceStub(channel)


async def reader(server: AuthNats) -> Client:
    """A connection as the competitions user: it may read COMPETITIONS, TABLE_RESULTS and its leases."""
    return await nats.connect(
        server.url("competitions"), inbox_prefix=inbox_prefix("competitions").encode(), max_reconnect_attempts=-1
    )


async def owner(nc: Client, competition_id: str) -> str | None:
    """The replica holding the competition's shard lease now (None: free)."""
    kv = await nc.jetstream().key_value(names.COMPETITION_LEASES_BUCKET)
    try:
        entry = await kv.get(str(subjects.competition_shard(competition_id)))
    except nats.js.errors.KeyNotFoundError:
        return None
    return (entry.value or b"").decode() or None


async def _subject_messages(nc: Client, stream: str, subject: str) -> list[bytes]:
    js = nc.jetstream()
    out, seq = [], 1
    while True:
        try:
            msg = await js.get_msg(stream, seq=seq, subject=subject, next=True)
        except nats.js.errors.NotFoundError:
            return out
        out.append(msg.data or b"")
        seq = int(msg.seq or 0) + 1


async def competition_events(nc: Client, competition_id: str) -> list[competitions_pb2.CompetitionEvent]:
    data = await _subject_messages(nc, names.COMPETITIONS_STREAM, subjects.competition_events(competition_id))
    return [competitions_pb2.CompetitionEvent.FromString(d) for d in data]


async def table_results(nc: Client, table_id: str) -> list[events_pb2.Event]:
    data = await _subject_messages(nc, names.TABLE_RESULTS_STREAM, subjects.table_results(table_id))
    return [events_pb2.Event.FromString(d) for d in data]


async def audit(nc: Client, competition_id: str) -> dict[str, Any]:
    """What the stored events and tables say of the competition: rounds started twice,
    entrants seated twice in a round (in its RoundStarted or at the tables really created),
    entrants lost (accepted at the start, not in the final ranking), tables created twice."""
    events = await competition_events(nc, competition_id)
    started = Counter(e.round_started.round for e in events if e.HasField("round_started"))
    accepted = set()
    for e in events:
        if e.HasField("registered"):
            accepted.add(e.registered.entrant.player_id)
        elif e.HasField("left") or (e.HasField("approved") and not e.approved.accept):
            accepted.discard(e.left.player_id or e.approved.player_id)
    rounds: dict[int, list[competitions_pb2.CompetitionTable]] = {}
    for e in events:
        if e.HasField("round_started"):
            rounds.setdefault(e.round_started.round, []).extend(e.round_started.tables)
    seated_twice = 0
    created_twice = 0
    tables = [t for r in sorted(rounds) for t in rounds[r]]
    results = await asyncio.gather(*(table_results(nc, t.table_id) for t in tables))
    real: dict[int, Counter[str]] = {}
    for table, stored in zip(tables, results, strict=True):
        creates = [r.table_created for r in stored if r.HasField("table_created")]
        created_twice += max(0, len(creates) - 1)
        seats = real.setdefault(table.round, Counter())
        for create in creates[:1]:
            seats.update(s.player_id for s in create.seats)
    for r, round_tables in rounds.items():
        listed = Counter(p for t in round_tables for p in t.players)
        seated_twice += sum(1 for n in listed.values() if n > 1)
        seated_twice += sum(1 for n in real.get(r, Counter()).values() if n > 1)
    finished = [e.finished for e in events if e.HasField("finished")]
    ranked = {p for unit in finished[-1].ranking for p in unit.split("+")} if finished else set()
    return {
        "events": events,
        "rounds_started_twice": sum(n - 1 for n in started.values() if n > 1),
        "entrants_seated_twice": seated_twice,
        "entrants_lost": len(accepted - ranked),
        "tables_created_twice": created_twice,
        "tables": len(tables),
        "tables_ended": sum(1 for e in events if e.HasField("table_ended")),
        "finished": bool(finished),
        "settled": any(e.HasField("payouts_settled") for e in events),
    }
