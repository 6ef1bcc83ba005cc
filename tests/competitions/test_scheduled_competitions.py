"""Scheduled competitions in the service (issue 43, docs/adr/0026), on a real nats-server: a due
slot of the schedule is created once by the system organiser; a restarted service does not
create it again, and a second writer that has not seen it is fenced by the event log."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from competitions_service_support import Platform, admin, env, running

from support.nats import AuthNats
from trix.competitions.adapters import FolderDigests, MatchTables, StreamEventLog
from trix.competitions.config import SCHEDULE_ENV, CompetitionsConfig
from trix.competitions.schedule import SCHEMA, SYSTEM_ORGANISER, competition_id_of, load_schedule
from trix.competitions.service import CompetitionsService
from trix.natsio.connection import NatsConnection
from trix.v1 import competitions_pb2 as pb

DEADLINE_S = 60.0
MINUTE = 60_000
TEMPLATE = {
    "name": "free-16",
    "every": "every 10m",
    "ahead": "20m",
    "close_before": "1m",
    "options": {"variant": "VARIANT_COMPLEX", "format": "COMPETITION_FORMAT_KNOCKOUT", "rounds": 2, "capacity": 16},
}


@pytest.fixture
async def platform(auth_nats: AuthNats, tmp_path: Path) -> AsyncIterator[Platform]:
    schedule = tmp_path / "schedule.json"
    schedule.write_text(json.dumps({"schema": SCHEMA, "templates": [TEMPLATE]}))
    async with running(auth_nats, tmp_path / "digests", **{SCHEDULE_ENV: str(schedule)}) as p:
        yield p


async def _created(p: Platform) -> list[pb.CompetitionEvent]:
    conn = NatsConnection(p.nats.url("competitions"), "schedule-reader", streams=[], buckets=[])
    await conn.connect()
    try:
        return [e async for _, e in StreamEventLog(conn).read_all() if e.HasField("created")]
    finally:
        await conn.drain()


async def test_a_due_slot_is_created_once_and_a_restart_does_not_create_it_again(
    platform: Platform, tmp_path: Path
) -> None:
    (template,) = load_schedule(tmp_path / "schedule.json")
    slots = template.due(platform.clock())  # the clock stands still: one or two slots, 10 min apart
    assert 1 <= len(slots) <= 2
    ids = [competition_id_of(SYSTEM_ORGANISER, f"schedule.free-16.{s.starts_at_ms}") for s in slots]
    loop = asyncio.get_running_loop()
    deadline = loop.time() + DEADLINE_S
    while len(await _created(platform)) < len(slots):
        assert loop.time() < deadline, "the due slots were not created"
        await asyncio.sleep(0.1)
    for cid, slot in zip(ids, slots, strict=True):
        response = await platform.stub.GetCompetition(pb.GetCompetitionRequest(competition_id=cid), metadata=admin())
        competition = response.competition
        assert competition.organiser_id == SYSTEM_ORGANISER
        assert competition.state == pb.COMPETITION_STATE_REGISTRATION
        assert competition.options.starts_at_ms == slot.starts_at_ms
        assert competition.options.registration_closes_at_ms == slot.starts_at_ms - MINUTE

    await platform.stop_competitions()
    await platform.start_competitions()
    await asyncio.sleep(1.0)  # twenty ticks of the restarted service
    assert sorted(e.competition_id for e in await _created(platform)) == sorted(ids)


async def test_a_second_replica_that_has_not_seen_the_slot_is_fenced(platform: Platform, tmp_path: Path) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + DEADLINE_S
    while not await _created(platform):
        assert loop.time() < deadline, "the due slot was not created"
        await asyncio.sleep(0.1)
    await asyncio.sleep(0.5)  # ten more ticks: every due slot created
    created = len(await _created(platform))
    conn = NatsConnection(platform.nats.url("competitions"), "second-replica", streams=[], buckets=[])
    await conn.connect()
    try:
        config = CompetitionsConfig.from_env(env(platform.nats.url("competitions"), "competitions"))
        other = CompetitionsService(
            config, StreamEventLog(conn), MatchTables(conn), FolderDigests(tmp_path / "other"), clock_ms=platform.clock
        )
        other.schedule.templates = load_schedule(tmp_path / "schedule.json")
        await other.schedule.tick(other, platform.clock())  # it knows nothing: it tries, and is fenced
        assert len(other.schedule.done) == created == len(other.competitions)  # fenced, then rebuilt from the log
    finally:
        await conn.drain()
    assert len(await _created(platform)) == created
