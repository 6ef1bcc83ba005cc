"""Helpers of the NATS cluster tests (issue 19): the platform of `trix up --nats-cluster 3`
(trix.embedded.EmbeddedPlatform on three real nats-server nodes, every stream and bucket R3),
the node leading a stream read from JetStream, node faults (SIGKILL, SIGSTOP/SIGCONT, a
restart on the same store), bot clients playing through the gateway's Session stream
(`trix demo`'s bot) that note every acceptance, and the checks every run ends with.

Checks (`check_games`): every action a client saw accepted is in its table's log exactly
once, the writer epochs of each log never go back (one writer at a time), every game
finished and its record passes `trix replay` and `trix verify`, and scoring's standings
equal the replayed totals.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import socket
import time
from collections import deque
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import grpc
import nats
import nats.errors
import nats.js.errors
from nats.aio.client import Client
from netns import Hosts

from support.table import read_log
from trix import engine
from trix.client import wait_for_standings
from trix.demo import Bot
from trix.embedded import EmbeddedPlatform
from trix.natsio import names, permissions, serverconf, subjects
from trix.processes import Child
from trix.records import load_record, replay, verify
from trix.v1 import events_pb2


@dataclass
class Accepted:
    table_id: str
    action_id: str
    sent: float
    accepted: float


@dataclass
class Run:
    """What the clients saw: every accepted action, every finished game."""

    accepted: list[Accepted] = field(default_factory=list)
    records: dict[str, str] = field(default_factory=dict)
    """table id -> record JSON (game_ended) as a client received it."""
    tables: set[str] = field(default_factory=set)
    errors: list[str] = field(default_factory=list)
    token: str = ""
    retried_sign_ins: int = 0
    """A signed-in client's token (scoring's standings are asked through the gateway with it)."""
    client_errors: list[tuple[float, str, str, str]] = field(default_factory=list)
    """(when, table id, code, message) of every error a client got on its Session stream."""
    bots: dict[str, list[WatchedBot]] = field(default_factory=dict)
    """table id -> the clients seated there (what each last sent and got: `diagnose`)."""


class WatchedBot(Bot):
    """`trix demo`'s bot, noting when each of its actions was sent and accepted."""

    def __init__(self, target: str, index: int, seed: int, variant: int, run: Run, think_s: float = 0.05) -> None:
        super().__init__(target, index, seed, variant, say=False, think_s=think_s)
        self.run_stats = run
        self.sent: dict[str, float] = {}
        self.seen: deque[str] = deque(maxlen=8)
        """The last messages this client got and sent (`diagnose`)."""
        self.t0 = time.monotonic()
        self.heard = self.t0
        """When this client last got anything on its Session stream (a stalled game: none for long)."""
        sign_in = self.client.sign_in

        async def retried(device_secret: str, name: str) -> str:
            """A real client signs in again after UNAVAILABLE (NATS electing a leader)."""
            for attempt in range(60):
                try:
                    return await sign_in(device_secret, name)
                except grpc.aio.AioRpcError as err:
                    if err.code() != grpc.StatusCode.UNAVAILABLE or attempt == 59:
                        raise
                    run.retried_sign_ins += 1
                    await asyncio.sleep(0.5)
            raise AssertionError("unreachable")

        self.client.sign_in = retried  # type: ignore[method-assign]

    def _act(self) -> None:
        before = set(self.sent_at)
        super()._act()
        for action_id in set(self.sent_at) - before:
            self.sent[action_id] = time.monotonic()
            self.seen.append(f"+{time.monotonic() - self.t0:.1f}s sent action {action_id[-8:]}")

    def _view(self) -> None:
        super()._view()
        self.seen.append(f"+{time.monotonic() - self.t0:.1f}s sent view")

    async def _loop(self, stream: Any) -> None:
        self.run_stats.token = self.run_stats.token or self.client.token

        async def watched() -> AsyncIterator[Any]:
            async for m in stream:
                kind = m.WhichOneof("kind")
                self.heard = time.monotonic()
                self.seen.append(f"+{self.heard - self.t0:.1f}s got {_brief(m)}")
                if kind == "ticket" and m.ticket.table_id:
                    self.run_stats.bots.setdefault(m.ticket.table_id, [])
                    if self not in self.run_stats.bots[m.ticket.table_id]:
                        self.run_stats.bots[m.ticket.table_id].append(self)
                if kind == "accepted" and m.accepted.action_id in self.sent:
                    sent = self.sent.pop(m.accepted.action_id)
                    self.run_stats.accepted.append(
                        Accepted(self.state.table_id, m.accepted.action_id, sent, time.monotonic())
                    )
                elif kind == "ticket" and m.ticket.table_id:
                    self.run_stats.tables.add(m.ticket.table_id)
                elif kind == "event" and m.event.WhichOneof("body") == "game_ended":
                    self.run_stats.records[self.state.table_id] = m.event.game_ended.record_json
                elif kind == "error":
                    self.run_stats.client_errors.append(
                        (time.monotonic(), self.state.table_id, m.error.code, m.error.message)
                    )
                yield m

        await super()._loop(watched())


def _brief(m: Any) -> str:
    """One Session message in a few words (`diagnose`)."""
    kind = m.WhichOneof("kind")
    if kind == "event":
        body = m.event.WhichOneof("body")
        extra = f" seats {list(m.event.turn_started.seats)}" if body == "turn_started" else ""
        return f"event {m.event.sequence} {body}{extra}"
    if kind == "snapshot":
        return f"snapshot {m.snapshot.sequence} turn {m.snapshot.turn.turn_seq} seats {list(m.snapshot.turn.seats)}"
    if kind == "accepted":
        return f"accepted {m.accepted.action_id[-8:]} seq {m.accepted.sequence}"
    if kind == "error":
        return f"error {m.error.code}: {m.error.message[:70]}"
    if kind == "ticket":
        return f"ticket {m.ticket.state} {m.ticket.table_id[:8]}"
    return str(kind)


class NatsCluster:
    """The platform on a 3-node NATS cluster: `table` and `gateway` replicas as asked."""

    def __init__(
        self, state_dir: Path, *, nodes: int = 3, tables: int = 1, gateways: int = 1, env: dict[str, str] | None = None
    ) -> None:
        self.state_dir, self.nodes_asked, self.env = state_dir, nodes, env or {}
        self.replicas = {"table": tables, "gateway": gateways}
        self.platform = EmbeddedPlatform(
            state_dir, fresh=True, env=self.env, nats_cluster=nodes, replicas=self.replicas
        )
        self.sup = self.platform.supervisor
        self.nc: Client | None = None
        """A `table` user connection: reads the logs (TABLE_LOG is private to the table)."""
        self.admin: Client | None = None
        """A `provisioner` connection: asks JetStream which node leads what."""
        self.stopped: set[int] = set()
        self.held: set[str] = set()
        self.hosts: Hosts | None = None
        self.extra: list[Child] = []
        """Processes started outside the platform (`start_table_host`)."""

    def place_in(self, hosts: Hosts) -> None:
        """Before `start`: NATS node i runs inside host i (netns.py) and listens on its address,
        so cutting that host is a real partition of the node."""
        self.hosts = hosts

        def inside(node: serverconf.LocalNode, argv: list[str]) -> list[str]:
            return hosts.argv(node.index - 1, argv)

        self.platform = EmbeddedPlatform(
            self.state_dir,
            fresh=True,
            env=self.env,
            nats_cluster=self.nodes_asked,
            replicas=self.replicas,
            nats_hosts=hosts.ips[: self.nodes_asked],
            nats_launcher=inside,
        )
        self.sup = self.platform.supervisor

    def start_table_host(self, host: int) -> Child:
        """One more table replica, alone inside `host` (a machine that can be cut off); not
        health-checked by the platform (its gRPC port is the host's), stopped by `stop`."""
        assert self.hosts is not None
        template = next(c for c in self.sup.services if c.name.startswith("table"))
        env = dict(template.env)
        env.update(
            TRIX_INSTANCE="table-h", TRIX_GRPC_HOST=self.hosts.ips[host], TRIX_GRPC_PORT="50051", TRIX_METRICS_PORT="0"
        )
        child = Child(
            name="table-h",
            argv=self.hosts.argv(host, list(template.argv)),
            env=env,
            log_path=self.sup.state_dir / "logs" / "table-h.log",
        )
        child.start(parent_death_signal=False)  # gRPC runs here: no hook between fork and exec
        self.extra.append(child)
        return child

    @property
    def nodes(self) -> list[Child]:
        return self.sup.nats_children

    @property
    def gateways(self) -> list[str]:
        return [f"127.0.0.1:{c.grpc_port}" for c in self.sup.services if c.name.startswith("gateway")]

    async def start(self, timeout_s: float = 90.0) -> None:
        await asyncio.to_thread(self.platform.start, timeout_s)
        self.nc = await self._connect(permissions.SERVICE_USERS[0])
        self.admin = await self._connect(permissions.PROVISIONER)

    async def _connect(self, user: str) -> Client:
        return await nats.connect(
            servers=self.sup.nats_url(user).split(","),
            inbox_prefix=permissions.inbox_prefix(user).encode(),
            max_reconnect_attempts=-1,
            reconnect_time_wait=0.2,
            ping_interval=1,
            max_outstanding_pings=3,
            error_cb=_quiet,  # a killed node's refused reconnects are expected here
        )

    async def stop(self) -> None:
        for i in list(self.stopped):
            self.send(i, signal.SIGCONT)
        for service in list(self.held):
            self.hold(service, signal.SIGCONT)
        if self.hosts is not None:
            for i in list(self.hosts.cut_hosts):
                self.hosts.heal(i)
        if self.extra:
            self.sup.stop_children(self.extra, 5.0)
        for conn in (self.nc, self.admin):
            if conn is not None:
                with contextlib.suppress(Exception):
                    await asyncio.wait_for(conn.close(), 5)
        await asyncio.to_thread(self.platform.stop)

    # -- leaders -----------------------------------------------------------------------

    def index_of(self, server_name: str) -> int:
        """`trix_up_2` -> 1 (the position in `nodes`)."""
        return int(server_name.rsplit("_", 1)[1]) - 1

    async def leader(self, stream: str, timeout_s: float = 30.0) -> int:
        """The node (index into `nodes`) leading `stream` now, waiting for an election."""
        assert self.admin is not None
        js = self.admin.jetstream(timeout=2.0)
        deadline = time.monotonic() + timeout_s
        while True:
            with contextlib.suppress(Exception):
                info = await js.stream_info(stream)
                if info.cluster is not None and info.cluster.leader:
                    return self.index_of(info.cluster.leader)
            if time.monotonic() > deadline:
                raise AssertionError(f"no leader of {stream} within {timeout_s}s")
            await asyncio.sleep(0.2)

    async def replicas_of(self, stream: str) -> int:
        assert self.admin is not None
        info = await self.admin.jetstream(timeout=5.0).stream_info(stream)
        return int(info.config.num_replicas or 1)

    async def current(self, stream: str, timeout_s: float = 60.0) -> None:
        """Until `stream` has a leader and every other node is a follower seen within the
        last 2 s, not offline (after a restart: it rejoined the group)."""
        assert self.admin is not None
        js = self.admin.jetstream(timeout=5.0)
        deadline = time.monotonic() + timeout_s
        last: object = None
        while time.monotonic() < deadline:
            try:
                info = await js.stream_info(stream)
            except Exception as exc:  # noqa: BLE001 - no leader yet: asked again
                last = exc
            else:
                c = last = info.cluster
                if (
                    c is not None
                    and c.leader
                    and len(c.replicas or []) == len(self.nodes) - 1
                    and all(not r.offline and (r.active or 0) < 2_000_000_000 for r in c.replicas or [])
                ):
                    return
            await asyncio.sleep(0.2)
        raise AssertionError(f"{stream} not on every node within {timeout_s}s: {last}")

    # -- faults ------------------------------------------------------------------------

    def send(self, i: int, sig: signal.Signals) -> None:
        proc = self.nodes[i].proc
        assert proc is not None
        with contextlib.suppress(ProcessLookupError):
            os.kill(proc.pid, sig)
        if sig == signal.SIGSTOP:
            self.stopped.add(i)
        elif sig == signal.SIGCONT:
            self.stopped.discard(i)

    def hold(self, service: str, sig: signal.Signals = signal.SIGSTOP) -> None:
        """SIGSTOP (or SIGCONT) every process of `service`. Scoring is held while games play:
        once it stored a record the table purges that game's log (ADR 0003), and the checks
        read the logs first; released, it consumes every result it missed (a durable consumer)."""
        for child in self.sup.services:
            if child.name.split("-")[0] == service and child.proc is not None:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(child.proc.pid, sig)
        if sig == signal.SIGSTOP:
            self.held.add(service)
        else:
            self.held.discard(service)

    def kill(self, i: int) -> None:
        proc = self.nodes[i].proc
        assert proc is not None
        proc.kill()
        proc.wait(10)

    def restart(self, i: int, timeout_s: float = 20.0) -> None:
        """Start node `i` again on its config and store (it catches up from the others);
        raises if it does not listen within `timeout_s`."""
        child = self.nodes[i]
        node = self.sup.nats_nodes[i]
        deadline = time.monotonic() + timeout_s
        child.start(parent_death_signal=False)  # gRPC runs here: no hook between fork and exec
        while time.monotonic() < deadline:
            assert child.proc is not None
            if child.proc.poll() is not None:
                raise AssertionError(f"{child.name} exited with {child.proc.returncode}; see {child.log_path}")
            with contextlib.suppress(OSError), socket.create_connection((node.host, node.client_port), timeout=0.5):
                return
            time.sleep(0.05)
        raise AssertionError(f"{child.name} does not listen on {node.host}:{node.client_port} within {timeout_s}s")


async def _quiet(_exc: Exception) -> None:
    return None


async def play_games(
    targets: list[str], variants: list[int], run: Run, seed: int, timeout_s: float, think_s: float = 0.05
) -> None:
    """One client bot per game (the table's bots take the other seats), round robin over `targets`."""
    bots = [WatchedBot(targets[i % len(targets)], i, seed, v, run, think_s) for i, v in enumerate(variants)]
    run_id = f"{seed}-{time.monotonic_ns()}"

    async def one(bot: WatchedBot) -> None:
        try:
            await bot.run(run_id)
        except Exception as exc:  # noqa: BLE001 - reported by the checks
            run.errors.append(f"bot{bot.index}: {type(exc).__name__}: {exc}")

    await asyncio.wait_for(asyncio.gather(*(one(b) for b in bots)), timeout_s)


@dataclass
class Verdict:
    accepted: int
    lost: int
    applied_twice: int
    games: int
    games_finished: int
    games_ok: int
    two_writers: int
    problems: list[str]


async def check_games(cluster: NatsCluster, run: Run) -> Verdict:
    """The invariants of the module docstring, from the logs and the records."""
    assert cluster.nc is not None
    js = cluster.nc.jetstream(timeout=10.0)
    problems = list(run.errors)
    lost = twice = ok = two_writers = 0
    accepted: dict[str, set[str]] = {}
    for a in run.accepted:
        accepted.setdefault(a.table_id, set()).add(a.action_id)
    for table_id in sorted(run.tables):
        entries = await read_log(js, table_id)
        ids = [i for i, _ in entries]
        twice += len(ids) - len(set(ids))
        missing = accepted.get(table_id, set()) - set(ids)
        lost += len(missing)
        if missing:
            problems.append(f"{table_id}: {len(missing)} accepted actions not in the log")
        epochs = [int(w.rsplit("/", 1)[1]) for _, w in entries if "/" in w]
        writers = [w.rsplit("/", 1)[0] for _, w in entries if "/" in w]
        # One writer at a time: an epoch, once passed, never writes again, and one epoch is one writer.
        per_epoch: dict[int, set[str]] = {}
        for e, w in zip(epochs, writers, strict=True):
            per_epoch.setdefault(e, set()).add(w)
        if epochs != sorted(epochs) or any(len(ws) > 1 for ws in per_epoch.values()):
            two_writers += 1
            runs = [w for i, (_, w) in enumerate(entries) if "/" in w and (i == 0 or entries[i - 1][1] != w)]
            problems.append(f"{table_id}: two writers in the log: writers in turn {runs}")
        record_json = run.records.get(table_id)
        if record_json is None:
            problems.append(f"{table_id}: the game did not finish")
            continue
        record = load_record(record_json)
        result = replay(record, engine.Game, engine.Options)
        report = verify(record)
        if result.differences or not result.finished or not report.ok:
            problems.append(f"{table_id}: replay/verify failed: {result.differences[:3]}")
            continue
        ok += 1
    return Verdict(
        accepted=len(run.accepted),
        lost=lost,
        applied_twice=twice,
        games=len(run.tables),
        games_finished=len(run.records),
        games_ok=ok,
        two_writers=two_writers,
        problems=problems,
    )


async def standings_match(target: str, run: Run) -> int:
    """How many finished games scoring has with exactly the replayed totals (each asked for a
    minute at most: scoring may have been held until just before)."""
    return len(run.records) - len(await standings_mismatches(target, run))


async def standings_mismatches(target: str, run: Run) -> list[dict[str, Any]]:
    """The finished games whose standings (scoring's, asked for a minute at most each) differ
    from the record's replayed totals: table id, replayed totals, scoring's, and by how much."""
    out: list[dict[str, Any]] = []
    for table_id, record_json in run.records.items():
        result = replay(load_record(record_json), engine.Game, engine.Options)
        want = list(result.record.get("totals") or [])
        got = await wait_for_standings(target, run.token, table_id, want, tries=300, interval_s=0.2, timeout_s=5)
        if got != want:
            diff = [g - w for g, w in zip(got, want, strict=False)] if len(got) == len(want) else []
            out.append({"table_id": table_id, "replayed": want, "scoring": got, "difference": diff})
    return out


async def results_of(js: Any, table_id: str) -> list[str]:
    """Every message of a table's results subject in TABLE_RESULTS, one line each: stream
    sequence, message id, the event's sequence, kind and totals (a mismatch's diagnosis)."""
    out: list[str] = []
    seq = 1
    while True:
        try:
            msg = await js.get_msg(
                names.TABLE_RESULTS_STREAM, seq=seq, subject=subjects.table_results(table_id), next=True
            )
        except nats.js.errors.NotFoundError:
            return out
        event = events_pb2.Event.FromString(msg.data)
        body = event.WhichOneof("body")
        totals: list[int] = []
        if body == "deal_scored":
            totals = list(event.deal_scored.totals.values)
        elif body == "game_ended":
            totals = list(event.game_ended.totals.values)
        msg_id = (msg.headers or {}).get("Nats-Msg-Id", "")
        out.append(f"  stream {msg.seq} id {msg_id} sequence {event.sequence} {body} totals {totals}")
        seq = msg.seq + 1


async def journal_of(cluster: NatsCluster, table_id: str) -> list[str]:
    """Scoring's journal entries of a table, one line each (journal sequence, entry id, event
    kind, totals, disputed): read as scoring, the journal's only reader."""
    conn = await cluster._connect("scoring")
    out: list[str] = []
    try:
        js = conn.jetstream(timeout=10.0)
        seq = 1
        while True:
            try:
                msg = await js.get_msg(
                    names.SCORING_JOURNAL_STREAM, seq=seq, subject=subjects.scoring_journal(), next=True
                )
            except nats.js.errors.NotFoundError:
                return out
            seq = msg.seq + 1
            entry = json.loads(msg.data or b"{}")
            if entry.get("table_id") != table_id:
                continue
            event = entry.get("event") or {}
            out.append(
                f"  journal {msg.seq} {entry.get('id')} {event.get('type')} totals {event.get('totals')}"
                f" disputed {entry.get('disputed', '')!r}"
            )
    finally:
        with contextlib.suppress(Exception):
            await asyncio.wait_for(conn.close(), 5)


async def diagnose(cluster: NatsCluster, run: Run, table_id: str) -> list[str]:
    """Where an unfinished game stopped: its log (entries, the last one and its writer), the
    owner of its shard (the lease), the timers' document of it, and what each of its clients
    last sent and got (`WatchedBot.seen`)."""
    assert cluster.nc is not None and cluster.admin is not None
    out = [f"{table_id} did not finish:"]
    try:
        entries = await read_log(cluster.nc.jetstream(timeout=10.0), table_id)
        last = entries[-1] if entries else ("-", "-")
        out.append(f"  log: {len(entries)} entries, last {last[0]} by {last[1]}")
    except Exception as exc:  # noqa: BLE001 - a diagnosis never fails the run
        out.append(f"  log: not read ({exc!r})")
    shard = subjects.table_shard(table_id)
    for user, bucket, key in (("table", "table_leases", str(shard)), ("timers", "timer_deadlines", f"t.{table_id}")):
        conn: Client | None = None
        try:  # as the bucket's own service (each user reads its own buckets only)
            conn = await cluster._connect(user)
            kv = await conn.jetstream(timeout=5.0).key_value(bucket)
            entry = await kv.get(key)
            out.append(f"  {bucket} {key} (rev {entry.revision}): {(entry.value or b'').decode()[:400]}")
        except Exception as exc:  # noqa: BLE001 - a diagnosis never fails the run
            out.append(f"  {bucket} {key}: not read ({exc!r})")
        finally:
            if conn is not None:
                with contextlib.suppress(Exception):
                    await asyncio.wait_for(conn.close(), 5)
    for bot in run.bots.get(table_id, []):
        st = bot.state
        turn = f"turn {st.turn.turn_seq} seats {list(st.turn.seats)}" if st.turn is not None else "no turn"
        out.append(
            f"  client seat {st.seat}: sequence {st.sequence}, {turn}, acted {bot.acted}, "
            f"unanswered {len(bot.sent)}; last: {list(bot.seen)}"
        )
    return out
