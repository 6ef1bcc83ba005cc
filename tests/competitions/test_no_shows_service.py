"""Repeated no-shows in the service (issue 43, docs/adr/0026), on a real nats-server with the
real table service: entrants who never take their auto-played seat are recorded with each
table's end; two competitions missed refuse the next registration with FAILED_PRECONDITION
naming when it opens again (an hour after the latest), a restarted service still refuses it,
and a player who missed nothing registers."""

from __future__ import annotations

import asyncio

import grpc
import pytest
from competitions_service_support import Platform, admin, free_knockout, player

from trix.competitions.adapters import StreamEventLog
from trix.competitions.noshows import HOUR_MS
from trix.natsio.connection import NatsConnection
from trix.v1 import competitions_pb2 as pb

DEADLINE_S = 120.0
HUMANS = ("ann", "bob", "cy")


async def _create(p: Platform, request_id: str) -> str:
    options = free_knockout(p.clock(), capacity=4, rounds=1)
    response = await p.stub.CreateCompetition(
        pb.CreateCompetitionRequest(options=options, request_id=request_id), metadata=admin()
    )
    return str(response.competition.competition_id)


async def _register(p: Platform, cid: str, name: str) -> None:
    await p.stub.RegisterEntrant(pb.RegisterEntrantRequest(competition_id=cid), metadata=player(name))


async def _until_review(p: Platform, cid: str) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + DEADLINE_S
    while True:
        response = await p.stub.GetCompetition(pb.GetCompetitionRequest(competition_id=cid), metadata=admin())
        if response.competition.state == pb.COMPETITION_STATE_REVIEW:
            return
        assert loop.time() < deadline, f"competition still in state {response.competition.state}"
        await asyncio.sleep(0.1)


async def _table_ends(p: Platform) -> list[pb.CompetitionTableEnded]:
    conn = NatsConnection(p.nats.url("competitions"), "no-show-reader", streams=[], buckets=[])
    await conn.connect()
    try:
        return [e.table_ended async for _, e in StreamEventLog(conn).read_all() if e.HasField("table_ended")]
    finally:
        await conn.drain()


async def test_two_competitions_missed_make_the_next_registration_wait_an_hour(competition_platform: Platform) -> None:
    platform = competition_platform
    missed = [await _create(platform, f"missed-{i}") for i in range(2)]
    for cid in missed:
        for name in HUMANS:
            await _register(platform, cid, name)
    started_ms = platform.clock.ms + 60_000
    platform.clock.ms = started_ms  # both start; nobody takes his seat: auto-play plays them out
    for cid in missed:
        await _until_review(platform, cid)
    ends = await _table_ends(platform)
    assert len(ends) == 2 and all(sorted(e.no_shows) == sorted(HUMANS) for e in ends)

    third = await _create(platform, "third")
    for attempt in range(2):  # the same before and after a restart (rebuilt from the events)
        with pytest.raises(grpc.aio.AioRpcError) as refused:
            await _register(platform, third, "ann")
        assert refused.value.code() == grpc.StatusCode.FAILED_PRECONDITION, attempt
        assert "you may register again from" in (refused.value.details() or "")
        if attempt == 0:
            await platform.stop_competitions()
            await platform.start_competitions()
    await _register(platform, third, "dee")  # who missed nothing registers

    platform.clock.ms = started_ms + HOUR_MS + 60_000  # past the latest no-show's hour
    later = await _create(platform, "an-hour-later")
    await _register(platform, later, "ann")
