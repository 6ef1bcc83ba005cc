"""Several competitions replicas, one owner per competition (docs/adr/0026: the table's shard
leases over the competitions): the owner SIGKILLed mid-competition, the other replica takes the
competition over when the lease expires, rebuilds it from its events and finishes it with no
round started twice, no entrant seated twice and none lost; a stale owner (its lease taken
without its knowing) has its append refused by the competition's fence. Real nats-server with
one user per service, real processes and gRPC, the real table service and C engine."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path

import pytest
from competition_replicas import audit, competition_events, competitions_replicas, owner, reader, stub
from competition_support import trix_verify_competition
from competitions_service_support import NO_TIMERS, SEED, Clock, admin, env, free_knockout, player

from support.nats import AuthNats
from trix.competitions.adapters import FolderDigests, MatchTables, StreamEventLog
from trix.competitions.config import DIGEST_DIR_ENV, CompetitionsConfig
from trix.competitions.ports import Fenced
from trix.competitions.service import SYSTEM_ORGANISER, CompetitionsService
from trix.natsio.connection import NatsConnection
from trix.runtime.server import Runtime
from trix.table.__main__ import build as build_table
from trix.table.config import TableConfig
from trix.v1 import competitions_pb2 as pb

DEADLINE_S = 180.0


async def _until(check: Callable[[], Awaitable[bool]], what: str, timeout_s: float = DEADLINE_S) -> None:
    deadline = time.monotonic() + timeout_s
    while not await check():
        assert time.monotonic() < deadline, f"still not {what}"
        await asyncio.sleep(0.1)


@pytest.fixture
async def table(auth_nats: AuthNats) -> AsyncIterator[list[Runtime]]:
    """The table service in the test's loop (stopped and started again by the test)."""
    runtimes = [build_table(TableConfig.from_env(env(auth_nats.url("table"))))]
    await runtimes[0].start()
    try:
        yield runtimes
    finally:
        for runtime in runtimes:
            await runtime.stop()


async def test_the_owner_killed_mid_competition_another_replica_takes_it_over_and_finishes_it(
    auth_nats: AuthNats, table: list[Runtime], tmp_path: Path
) -> None:
    digests = tmp_path / "digests"
    replicas = competitions_replicas(auth_nats, tmp_path, digests, tick_s=0.1)
    replicas.start_all()
    nc = await reader(auth_nats)
    channels, stubs = zip(*(stub(replicas.port(i)) for i in range(2)), strict=True)
    try:
        now = time.time_ns() // 1_000_000
        options = free_knockout(now)
        options.registration_closes_at_ms, options.starts_at_ms = now + 6_000, now + 7_000
        created = await stubs[0].CreateCompetition(
            pb.CreateCompetitionRequest(options=options, request_id="leases-1"), metadata=admin()
        )
        cid = created.competition.competition_id
        for i in range(14):  # every command answered by either replica, owner or not
            await stubs[i % 2].RegisterEntrant(
                pb.RegisterEntrantRequest(competition_id=cid, display_name=f"p{i}"), metadata=player(f"p{i:02d}")
            )
        await table[0].stop()  # the first round's MatchFormed wait in their stream meanwhile
        table.clear()

        async def round_started() -> bool:
            return any(e.HasField("round_started") for e in await competition_events(nc, cid))

        await _until(round_started, "started")
        first = await owner(nc, cid)
        assert first is not None
        killed = replicas.index_of(first)
        assert killed is not None
        replicas.kill(killed)  # mid-competition: round 1 seated, no table ended
        table.append(build_table(TableConfig.from_env(env(auth_nats.url("table")))))
        await table[0].start()

        async def settled() -> bool:
            return bool((await audit(nc, cid))["settled"])

        await _until(settled, "settled")
        result = await audit(nc, cid)
        assert result["rounds_started_twice"] == 0
        assert result["entrants_seated_twice"] == 0
        assert result["entrants_lost"] == 0
        assert result["tables_created_twice"] == 0
        assert (result["tables"], result["tables_ended"]) == (5, 5)
        taker = await owner(nc, cid)
        assert taker is not None and replicas.index_of(taker) == 1 - killed  # the survivor took it over
        finished = next(e.finished for e in result["events"] if e.HasField("finished"))
        path = digests / f"{cid}.json"
        assert path.exists() and finished.digest in path.read_text()
        checked = trix_verify_competition(path)
        assert checked.returncode == 0, checked.stdout + checked.stderr
    finally:
        for channel in channels:
            await channel.close()
        await nc.close()
        replicas.stop_all()


class PausedBeforeAppend:
    """The stale owner's own event log: its next append waits for `meanwhile` (the new owner
    moving the competition on) before it is sent, as an owner paused between its read and its
    write (SIGSTOP, a long GC) would."""

    def __init__(self, inner: StreamEventLog) -> None:
        self.inner = inner
        self.meanwhile: Callable[[], Awaitable[None]] | None = None
        self.refused: list[Fenced] = []

    async def append(self, event: pb.CompetitionEvent, expected_last: int) -> int:
        if self.meanwhile is not None:
            meanwhile, self.meanwhile = self.meanwhile, None
            await meanwhile()
        try:
            return await self.inner.append(event, expected_last)
        except Fenced as err:
            self.refused.append(err)
            raise

    def read_all(self, after: int = 0, competition_id: str = "") -> AsyncIterator[tuple[int, pb.CompetitionEvent]]:
        return self.inner.read_all(after, competition_id)


@dataclass
class TwoOwners:
    """Two competitions services in the test's loop on their own NATS connections (real event
    logs and tables), on one clock; the first one's event log wrapped by the test."""

    first: CompetitionsService
    second: CompetitionsService
    clock: Clock
    log: StreamEventLog
    """An event log of the second's connection, to read what is stored."""

    async def created(self, request_id: str) -> str:
        """A free 16-seat knockout made by the first, 12 entrants registered, the second
        rebuilt from the events."""
        await self.first.recover()
        cid = (await self.first.create(SYSTEM_ORGANISER, free_knockout(self.clock()), request_id)).competition_id
        for i in range(12):
            await self.first.register(f"p{i:02d}", cid, "", f"p{i}")
        await self.second.recover()
        return str(cid)


@contextlib.asynccontextmanager
async def two_owners(
    auth_nats: AuthNats, tmp_path: Path, wrap: Callable[[StreamEventLog], PausedBeforeAppend]
) -> AsyncIterator[tuple[TwoOwners, PausedBeforeAppend]]:
    config = CompetitionsConfig.from_env(
        env(auth_nats.url("competitions"), "competitions", **{DIGEST_DIR_ENV: str(tmp_path)}, **NO_TIMERS)
    )
    clock = Clock()
    connections = [NatsConnection(auth_nats.url("competitions"), f"c{i}", streams=[], buckets=[]) for i in range(2)]
    for c in connections:
        await c.connect()
    try:
        wrapped = wrap(StreamEventLog(connections[0]))
        first, second = (
            CompetitionsService(
                config, log, MatchTables(c), FolderDigests(tmp_path), clock_ms=clock, new_seed=lambda: SEED
            )
            for log, c in ((wrapped, connections[0]), (StreamEventLog(connections[1]), connections[1]))
        )
        yield TwoOwners(first, second, clock, StreamEventLog(connections[1])), wrapped
    finally:
        for c in connections:
            await c.drain()


async def test_a_stale_owners_append_is_refused_by_the_fence(auth_nats: AuthNats, tmp_path: Path) -> None:
    async with two_owners(auth_nats, tmp_path, PausedBeforeAppend) as (owners, stale_log):
        stale, new = owners.first, owners.second
        cid = await owners.created("fenced-1")  # the new owner rebuilt the competition from its events
        owners.clock.ms += 60_000  # the start time
        stale_log.meanwhile = new.tick  # it seats round 1 first
        await stale.tick()  # the stale owner, paused before its append, appends after it
        assert len(stale_log.refused) == 1  # its RoundStarted refused by the fence
        events = [e async for _, e in owners.log.read_all(competition_id=cid)]
        assert [e.round_started.round for e in events if e.HasField("round_started")] == [1]
        assert stale.get(cid, SYSTEM_ORGANISER) == new.get(cid, SYSTEM_ORGANISER)  # it folded the new owner's


class KilledBeforeRoundTwo(PausedBeforeAppend):
    """An owner killed between the last table of round 1 (stored) and round 2's RoundStarted."""

    async def append(self, event: pb.CompetitionEvent, expected_last: int) -> int:
        if event.round_started.round == 2:
            raise ConnectionAbortedError("SIGKILL")
        return await super().append(event, expected_last)


async def test_a_round_opened_by_a_killed_owner_is_started_once_by_the_next(
    auth_nats: AuthNats, table: list[Runtime], tmp_path: Path
) -> None:
    async with two_owners(auth_nats, tmp_path, KilledBeforeRoundTwo) as (owners, _):
        killed, taker = owners.first, owners.second
        cid = await owners.created("killed-1")
        owners.clock.ms += 60_000

        async def round_one_over() -> bool:
            await killed.tick()
            run = killed.competitions[cid].run
            return run is not None and run.current_round == 2  # its last table's event stored

        await _until(round_one_over, "round 1 over")
        await taker.recover()  # the next owner, from the events

        async def finished() -> bool:
            await taker.tick()
            return taker.competitions[cid].finished is not None

        await _until(finished, "finished")
        events = [e async for _, e in owners.log.read_all(competition_id=cid)]
        assert [e.round_started.round for e in events if e.HasField("round_started")] == [1, 2]
        assert [len(e.round_started.tables) for e in events if e.HasField("round_started")] == [4, 1]
