"""Helpers of the replica tests (issue 5): N table replicas as real processes on one real
nats-server, bot games driven through table commands as the gateway sends them, the
owner of a table read from the `table_leases` bucket, and the checks every run ends with
(each acknowledged action in its table's log exactly once, lease epochs only growing
along each log, every game finished with the scores its record replays to, seat and
public streams without gap or duplicate)."""

from __future__ import annotations

import asyncio
import contextlib
import os
import random
import signal
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import nats
import nats.errors
import nats.js.errors
from nats.aio.client import Client

from support.nats import AuthNats
from support.table import (
    CommandError,
    GatewayClient,
    TableProcess,
    choose_move,
    create_request,
    read_events,
    read_log,
    record_of,
    table_env,
    token,
)
from trix import engine, records
from trix.natsio import seatstream
from trix.natsio.balancing import quotas
from trix.natsio.permissions import inbox_prefix
from trix.natsio.subjects import TABLE_SHARDS, table_shard
from trix.v1 import common_pb2, events_pb2, table_pb2

__all__ = [
    "CI_RESUME_BOUND_S",
    "AuthNats",
    "Call",
    "Cluster",
    "Driver",
    "GameStats",
    "check_games",
    "even_table_ids",
    "percentile",
]

CI_RESUME_BOUND_S = float(os.environ.get("TRIX_CI_RESUME_BOUND_S", "12"))
"""Resume bound of the CI tests (kill or pause -> next acknowledged action). The issue's 5 s is
asserted by `make fault-replicas`; the shared 2-core CI box, often loaded far above its cores,
gets this generous bound, and the tests print what they measured."""
RETRYABLE_KINDS = ("Unavailable",)


def percentile(values: list[float], p: float) -> float:
    if not values:
        return 0.0
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(p / 100 * (len(ordered) - 1)))]


def even_table_ids(prefix: str, count: int) -> list[str]:
    """`count` table ids spread evenly over the shards (count // 64 each, one more on a few)."""
    base, extra = divmod(count, TABLE_SHARDS)
    per: dict[int, list[str]] = {s: [] for s in range(TABLE_SHARDS)}
    i = 0
    while any(len(v) < base + 1 for v in per.values()):
        table_id = f"{prefix}{i}"
        i += 1
        bucket = per[table_shard(table_id)]
        if len(bucket) < base + 1:
            bucket.append(table_id)
    return [t for s in range(TABLE_SHARDS) for t in per[s][: base + (1 if s < extra else 0)]]


class Cluster:
    """`replicas` table processes (instances table-r0, table-r1, ...) on one AuthNats."""

    def __init__(self, server: AuthNats, workdir: Path, replicas: int, **env: str) -> None:
        self.server = server
        self.workdir = workdir
        self.env = env
        self.procs: list[TableProcess] = []
        self.starts = [0] * replicas
        for i in range(replicas):
            self.procs.append(self._process(i))
        self.nc: Client | None = None

    def _process(self, i: int) -> TableProcess:
        settings = {"TRIX_TABLE_SNAPSHOT_EVERY": "13", "TRIX_LOG_LEVEL": "info", **self.env}
        env = table_env(self.server.url("table"), TRIX_INSTANCE=f"table-r{i}", **settings)
        return TableProcess(env, self.workdir / f"table-r{i}.log")

    async def connect(self) -> None:
        self.nc = await nats.connect(
            self.server.url("table"), inbox_prefix=inbox_prefix("table").encode(), max_reconnect_attempts=-1
        )

    def add(self) -> int:
        self.procs.append(self._process(len(self.procs)))
        self.starts.append(0)
        return len(self.procs) - 1

    def start(self, i: int) -> None:
        self.starts[i] += 1
        self.procs[i].start()

    def kill(self, i: int) -> None:
        self.procs[i].kill()

    def signal(self, i: int, sig: signal.Signals) -> None:
        proc = self.procs[i].proc
        assert proc is not None
        os.kill(proc.pid, sig)

    def terminate(self, i: int) -> None:
        self.signal(i, signal.SIGTERM)

    def wait_exit(self, i: int, timeout_s: float) -> int:
        proc = self.procs[i].proc
        assert proc is not None
        return proc.wait(timeout_s)

    def stop_all(self) -> None:
        for p in self.procs:
            if p.proc is not None and p.proc.poll() is None:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(p.proc.pid, signal.SIGCONT)
            p.stop()

    async def close(self) -> None:
        if self.nc is not None:
            await self.nc.close()

    # -- leases ------------------------------------------------------------------------

    async def leases(self) -> dict[int, str]:
        """shard -> owner replica id, as stored now."""
        assert self.nc is not None
        try:
            kv = await self.nc.jetstream().key_value("table_leases")
        except nats.js.errors.BucketNotFoundError:
            return {}  # no replica has provisioned it yet

        async def one(shard: int) -> tuple[int, str | None]:
            try:
                entry = await kv.get(str(shard))
            except (nats.js.errors.KeyNotFoundError, nats.js.errors.KeyDeletedError):
                return shard, None
            return shard, (entry.value or b"").decode() or None

        pairs = await asyncio.gather(*(one(s) for s in range(TABLE_SHARDS)))
        return {s: o for s, o in pairs if o is not None}

    async def lease_writes(self) -> int:
        """Writes so far to the `table_leases` and `table_replicas` buckets (renewals, heartbeats, handovers)."""
        assert self.nc is not None
        js = self.nc.jetstream()
        infos = [await js.stream_info(f"KV_{b}") for b in ("table_leases", "table_replicas")]
        return sum(int(i.state.last_seq) for i in infos)

    async def lease_writes_per_s(self, seconds: float) -> float:
        before, t0 = await self.lease_writes(), time.monotonic()
        await asyncio.sleep(seconds)
        return (await self.lease_writes() - before) / (time.monotonic() - t0)

    @staticmethod
    def index_of(replica_id: str) -> int:
        """`table-r2-1a2b3c4d` -> 2."""
        return int(replica_id.split("-")[1][1:])

    async def owner_index(self, table_id: str) -> int | None:
        owner = (await self.leases()).get(table_shard(table_id))
        return None if owner is None else self.index_of(owner)

    async def wait_balanced(self, live: list[int], timeout_s: float = 30.0) -> dict[int, str]:
        """Until every shard is held by one of `live` (their current ids), each at its exact quota."""
        deadline = time.monotonic() + timeout_s
        last: dict[int, str] = {}
        while time.monotonic() < deadline:
            last = await self.leases()
            owners = set(last.values())
            ids = {self.index_of(o) for o in owners}
            if len(last) == TABLE_SHARDS and ids == set(live) and len(owners) == len(live):
                counts = {o: sum(1 for v in last.values() if v == o) for o in owners}
                if counts == quotas(owners):
                    return last
            await asyncio.sleep(0.2)
        raise AssertionError(f"shards not balanced over {live}: {last}")


@dataclass
class Ack:
    table_id: str
    action_id: str
    sent: float
    acked: float
    started: float = 0.0
    """When the command was first sent (retries included until `acked`)."""


@dataclass(frozen=True)
class Call:
    """One answered request of a table (a view or a move): first sent -> answered, retries included."""

    table_id: str
    started: float
    answered: float


@dataclass
class GameStats:
    acks: list[Ack] = field(default_factory=list)
    tables: list[str] = field(default_factory=list)
    finished: set[str] = field(default_factory=set)
    retries: int = 0
    calls: list[Call] | None = None
    """Every answered request, if set to a list (the rebalancing run measures interruptions on it)."""


PLAYER = "hum"


class Driver:
    """Plays bot games: seat 0 a test 'player' choosing random legal moves, seats 1-3 the table's bots.

    Every request is retried with the same bytes (same action id) on no responders, a timeout
    or UNAVAILABLE, as the gateway and the timers do during a handover."""

    def __init__(self, client: GatewayClient, stats: GameStats, seed: int) -> None:
        self.client = client
        self.stats = stats
        self.rng = random.Random(seed)
        self.on_ack: list[Callable[[Ack], None]] = []
        self.deadline_s = 60.0
        self._last_sent = self._last_acked = self._started = 0.0

    async def _call(self, table_id: str, command: table_pb2.TableCommand, tok: str) -> table_pb2.TableCommandReply:
        deadline = time.monotonic() + self.deadline_s
        self._started = time.monotonic()
        while True:
            sent = time.monotonic()
            try:
                reply = await self.client.request(table_id, command, tok)
                self._last_sent, self._last_acked = sent, time.monotonic()
                if self.stats.calls is not None:
                    self.stats.calls.append(Call(table_id, self._started, self._last_acked))
                return reply
            except (nats.errors.NoRespondersError, nats.errors.TimeoutError, TimeoutError):
                pass
            except CommandError as err:
                if err.kind not in RETRYABLE_KINDS:
                    raise
            self.stats.retries += 1
            if time.monotonic() > deadline:
                raise AssertionError(f"table {table_id} did not answer within {self.deadline_s}s")
            await asyncio.sleep(0.1)

    async def create(self, table_id: str, variant: int) -> None:
        request = create_request(table_id, variant, [PLAYER, "", "", ""], bots=(1, 2, 3))
        await self._call(table_id, table_pb2.TableCommand(create_table=request), token("service", "table"))
        self.stats.tables.append(table_id)

    async def look(self, table_id: str) -> table_pb2.SeatView:
        """Seat 0's view (a cheap request: probes whether the table answers)."""
        command = table_pb2.TableCommand(get_seat_view=table_pb2.GetSeatViewRequest(table_id=table_id, seat=0))
        view = (await self._call(table_id, command, token("player", PLAYER))).get_seat_view.view
        if view.finished:
            self.stats.finished.add(table_id)
        return view

    async def play(self, table_id: str, *, max_actions: int | None = None, pace_s: float = 0.0) -> int:
        tok = token("player", PLAYER)
        view_cmd = table_pb2.TableCommand(get_seat_view=table_pb2.GetSeatViewRequest(table_id=table_id, seat=0))
        done = 0
        while max_actions is None or done < max_actions:
            view = (await self._call(table_id, view_cmd, tok)).get_seat_view.view
            if view.finished:
                self.stats.finished.add(table_id)
                break
            command = choose_move(view, self.rng) if 0 in view.turn.seats else None
            if command is None:
                await asyncio.sleep(0.05)
                continue
            action_id = getattr(command, command.WhichOneof("command") or "").header.action_id
            await self._call(table_id, command, tok)
            ack = Ack(table_id, action_id, self._last_sent, self._last_acked, self._started)
            self.stats.acks.append(ack)
            for callback in list(self.on_ack):
                callback(ack)
            done += 1
            if pace_s:
                await asyncio.sleep(pace_s)
        return done


VARIANTS = (common_pb2.VARIANT_COMPLEX, common_pb2.VARIANT_COMPLEX_PARTNERSHIP)


async def read_table_events(nc: Client, table_id: str) -> dict[int | None, list[events_pb2.Event]]:
    """Every event of a table as its owner serves it (issue 16: `read_events`, the way a
    reader's gap is filled), by audience: None the public copies, each seat its own copies."""
    out: dict[int | None, list[events_pb2.Event]] = {None: await read_events(nc, table_id, -1)}
    for seat in range(4):
        mine = await read_events(nc, table_id, seat)
        out[seat] = [e for e in mine if seatstream.has_seat_copies(e, seat)]
    return out


@dataclass
class Verdict:
    actions_acked: int
    lost: int
    applied_twice: int
    games: int
    games_ok: int
    epochs_ok: bool
    problems: list[str]


async def check_games(nc: Client, stats: GameStats, *, finished: bool = True) -> Verdict:
    """The invariants every run ends with (see the module docstring); `finished=False` for
    games stopped midway (no record to replay yet)."""
    js = nc.jetstream()
    problems: list[str] = []
    lost = twice = ok = 0
    epochs_ok = True
    acked: dict[str, set[str]] = {}
    for ack in stats.acks:
        acked.setdefault(ack.table_id, set()).add(ack.action_id)
    for table_id in stats.tables:
        entries = await read_log(js, table_id)
        ids = [i for i, _ in entries]
        twice += len(ids) - len(set(ids))
        missing = acked.get(table_id, set()) - set(ids)
        lost += len(missing)
        epochs = [int(w.rsplit("/", 1)[1]) for _, w in entries if "/" in w]
        if epochs != sorted(epochs):
            epochs_ok = False
            problems.append(f"{table_id}: lease epochs go back along the log: {epochs}")
        stored = await read_table_events(nc, table_id)
        public = stored.get(None, [])
        seqs = [e.sequence for e in public]
        good = seqs == list(range(1, len(seqs) + 1))
        if not good:
            problems.append(f"{table_id}: public stream has a gap or a duplicate")
        for seat in range(4):  # a seat's own copy of each per-seat event, once (ADR 0003 §14, §15)
            per_seat = [e.sequence for e in public if seatstream.has_seat_copies(e, seat)]
            seat_seqs = [e.sequence for e in stored.get(seat, [])]
            if seat_seqs != per_seat:
                good = False
                problems.append(f"{table_id}: seat {seat} own copies differ from the public per-seat events")
        if not finished:
            ok += good
            continue
        try:
            record = record_of(public)
            result = records.replay(record, engine.Game, engine.Options)
            ended = next(e for e in public if e.HasField("game_ended")).game_ended
            if result.differences or list(result.record["totals"]) != list(ended.totals.values):
                good = False
                problems.append(f"{table_id}: record does not replay: {result.differences[:3]}")
        except AssertionError as err:
            good = False
            problems.append(f"{table_id}: {err}")
        ok += good
    return Verdict(
        actions_acked=len(stats.acks),
        lost=lost,
        applied_twice=twice,
        games=len(stats.tables),
        games_ok=ok,
        epochs_ok=epochs_ok,
        problems=problems,
    )


def summary(values: list[float]) -> tuple[float, float]:
    return (round(percentile(values, 95), 3), round(max(values), 3)) if values else (0.0, 0.0)


def mean(values: list[float]) -> float:
    return statistics.fmean(values) if values else 0.0
