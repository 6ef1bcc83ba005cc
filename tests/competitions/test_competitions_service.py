"""The competitions service (issue 43, docs/adr/0026) as a process of the platform: a real
nats-server with one user per service, the real table service and C engine, real gRPC. A free
16-entrant knockout is created, registered, started at its start time (the test's clock),
seated by its committed seed, its tables made by MatchFormed and played (seats played by the
bot), its rounds followed to the final, and its file published and checked by
`trix verify-competition`; a restarted service rebuilds from its stored events and finishes;
an underfilled competition is cancelled."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from pathlib import Path

import grpc
import pytest
from competition_support import trix_verify_competition
from competitions_service_support import Platform, admin, free_knockout, player

from support.nats import AuthNats
from trix.competitions.adapters import StreamEventLog
from trix.competitions.ports import Fenced
from trix.competitions.seating import seating_commitment
from trix.natsio.connection import NatsConnection
from trix.v1 import competitions_pb2 as pb

DEADLINE_S = 120.0


@pytest.fixture
async def platform(auth_nats: AuthNats, tmp_path: Path) -> AsyncIterator[Platform]:
    p = Platform(auth_nats, tmp_path / "digests")
    await p.start()
    try:
        yield p
    finally:
        await p.stop()


async def _create_and_register(p: Platform, humans: int) -> str:
    response = await p.stub.CreateCompetition(
        pb.CreateCompetitionRequest(options=free_knockout(p.clock()), request_id="weekly-1"), metadata=admin()
    )
    competition = response.competition
    assert competition.state == pb.COMPETITION_STATE_REGISTRATION
    assert competition.seating_seed == "" and len(competition.seating_commitment) == 64
    for i in range(humans):
        name = f"p{i:02d}"
        await p.stub.RegisterEntrant(
            pb.RegisterEntrantRequest(competition_id=competition.competition_id, display_name=name),
            metadata=player(name),
        )
    return str(competition.competition_id)


async def _until(p: Platform, cid: str, states: set[int]) -> pb.Competition:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + DEADLINE_S
    while True:
        competition = await p.competition(cid)
        if competition.state in states:
            return competition
        assert loop.time() < deadline, f"competition still in state {competition.state}"
        await asyncio.sleep(0.1)


def _check_file(p: Platform, competition: pb.Competition) -> dict[str, object]:
    path = p.digest_dir / f"{competition.competition_id}.json"
    document = json.loads(path.read_text())
    assert document["digest"] == competition.digest
    checked = trix_verify_competition(path)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    return dict(document)


async def test_a_free_16_entrant_knockout_is_played_to_the_end_and_its_file_verifies(platform: Platform) -> None:
    cid = await _create_and_register(platform, humans=12)
    platform.clock.ms += 60_000  # the start time
    competition = await _until(platform, cid, {pb.COMPETITION_STATE_REVIEW})
    assert seating_commitment(bytes.fromhex(competition.seating_seed)) == competition.seating_commitment
    bracket = await platform.stub.GetBracket(pb.GetBracketRequest(competition_id=cid), metadata=admin())
    assert [t.round for t in bracket.tables] == [1, 1, 1, 1, 2]
    assert all(t.ended and len(t.record_sha256) == 64 for t in bracket.tables)
    finalists = set(bracket.tables[-1].players)
    assert len(bracket.ranking) == 16 and set(bracket.ranking[:4]) == finalists  # the final ranks the first four
    assert all(len(finalists & set(t.players)) == 1 for t in bracket.tables[:4])  # one goes on per table
    seated = [p for t in bracket.tables[:4] for p in t.players]
    assert len(set(seated)) == 16 and sum(p.startswith("bot-") for p in seated) == 4
    out = {e.player_id for e in competition.entrants if e.state == pb.ENTRANT_STATE_OUT}
    assert out == {p for p in seated if not p.startswith("bot-")} - finalists  # knocked out in round 1
    document = _check_file(platform, competition)
    assert document["cancelled"] is False and len(document["records"]) == 5  # type: ignore[arg-type]
    platform.clock.ms += 600_000  # the review period ends
    finished = await _until(platform, cid, {pb.COMPETITION_STATE_FINISHED})
    assert finished.digest == competition.digest


async def test_a_restarted_competitions_process_rebuilds_from_its_events_and_finishes(platform: Platform) -> None:
    cid = await _create_and_register(platform, humans=13)
    before = await platform.competition(cid)
    await platform.stop_competitions()
    await platform.start_competitions()
    rebuilt = await platform.competition(cid)
    assert rebuilt == before  # registration rebuilt from the stored events
    await platform.stop_table()  # the first round's MatchFormed wait in their stream meanwhile
    platform.clock.ms += 60_000
    running = await _until(platform, cid, {pb.COMPETITION_STATE_RUNNING})
    await platform.stop_competitions()  # mid-competition: the first round seated, no table ended
    await platform.start_competitions()
    assert await platform.competition(cid) == running
    await platform.start_table()
    competition = await _until(platform, cid, {pb.COMPETITION_STATE_REVIEW})
    bracket = await platform.stub.GetBracket(pb.GetBracketRequest(competition_id=cid), metadata=admin())
    assert [t.round for t in bracket.tables] == [1, 1, 1, 1, 2]  # no round started twice
    _check_file(platform, competition)


async def test_an_underfilled_competition_is_cancelled_and_its_file_says_so(platform: Platform) -> None:
    cid = await _create_and_register(platform, humans=11)  # 75 % of 16 is 12
    platform.clock.ms += 60_000
    competition = await _until(platform, cid, {pb.COMPETITION_STATE_CANCELLED})
    document = _check_file(platform, competition)
    assert document["cancelled"] is True and document["tables"] == []


async def test_bad_requests_get_the_right_status(platform: Platform) -> None:
    options = free_knockout(platform.clock())
    options.rounds = 7
    with pytest.raises(grpc.aio.AioRpcError) as bad:
        await platform.stub.CreateCompetition(pb.CreateCompetitionRequest(options=options), metadata=admin())
    assert bad.value.code() == grpc.StatusCode.INVALID_ARGUMENT and "round" in (bad.value.details() or "")
    options = free_knockout(platform.clock())
    options.entry_fee = 100
    with pytest.raises(grpc.aio.AioRpcError) as paid:
        await platform.stub.CreateCompetition(pb.CreateCompetitionRequest(options=options), metadata=admin())
    assert paid.value.code() == grpc.StatusCode.FAILED_PRECONDITION
    cid = await _create_and_register(platform, humans=1)
    with pytest.raises(grpc.aio.AioRpcError) as twice:
        await platform.stub.RegisterEntrant(pb.RegisterEntrantRequest(competition_id=cid), metadata=player("p00"))
    assert twice.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    with pytest.raises(grpc.aio.AioRpcError) as anonymous:
        await platform.stub.RegisterEntrant(pb.RegisterEntrantRequest(competition_id=cid))
    assert anonymous.value.code() == grpc.StatusCode.UNAUTHENTICATED
    with pytest.raises(grpc.aio.AioRpcError) as unknown:
        await platform.stub.GetCompetition(pb.GetCompetitionRequest(competition_id="nope"), metadata=admin())
    assert unknown.value.code() == grpc.StatusCode.NOT_FOUND


async def test_a_second_writer_is_fenced_by_the_competitions_expected_last_sequence(platform: Platform) -> None:
    """Never two writers: an append after an event the writer has not seen is refused; the
    service folds the other writer's event before its own next append (as a replica does with
    the others' appends, docs/adr/0026) and goes on. A stale owner's own append refused:
    tests/competitions/test_competitions_leases.py."""
    cid = await _create_and_register(platform, humans=1)
    other = NatsConnection(platform.nats.url("competitions"), "second-writer", streams=[], buckets=[])
    await other.connect()
    try:
        log = StreamEventLog(other)
        stale = pb.CompetitionEvent(competition_id=cid, sequence=2, left=pb.EntrantLeft(player_id="p00"))
        with pytest.raises(Fenced):
            await log.append(stale, expected_last=0)  # it has not seen the creation
        events = [e async for _, e in log.read_all() if e.competition_id == cid]
        assert [e.WhichOneof("body") for e in events] == ["created", "registered"]
        seq = [s async for s, e in log.read_all() if e.competition_id == cid][-1]
        sneaked = pb.CompetitionEvent(competition_id=cid, sequence=3, left=pb.EntrantLeft(player_id="p00"))
        await log.append(sneaked, expected_last=seq)  # a writer that has seen everything may
    finally:
        await other.drain()
    await platform.stub.RegisterEntrant(pb.RegisterEntrantRequest(competition_id=cid), metadata=player("p01"))
    entrants = {e.player_id: e.state for e in (await platform.competition(cid)).entrants}
    assert entrants == {"p00": pb.ENTRANT_STATE_LEFT_BEFORE_START, "p01": pb.ENTRANT_STATE_ACCEPTED}


async def test_a_player_organises_approves_entrants_and_an_entrant_leaves_before_the_start(platform: Platform) -> None:
    options = free_knockout(platform.clock())
    options.admission = pb.ADMISSION_APPROVAL
    created = await platform.stub.CreateCompetition(
        pb.CreateCompetitionRequest(options=options, request_id="mine"), metadata=player("org")
    )
    cid = created.competition.competition_id
    assert created.competition.organiser_id == "org"
    again = await platform.stub.CreateCompetition(  # a repeat of the request: the same competition
        pb.CreateCompetitionRequest(options=options, request_id="mine"), metadata=player("org")
    )
    assert again.competition.competition_id == cid
    waiting = await platform.stub.RegisterEntrant(pb.RegisterEntrantRequest(competition_id=cid), metadata=player("p1"))
    assert waiting.entrant.state == pb.ENTRANT_STATE_PENDING
    approve = pb.ApproveEntrantRequest(competition_id=cid, player_id="p1", accept=True)
    with pytest.raises(grpc.aio.AioRpcError) as not_organiser:
        await platform.stub.ApproveEntrant(approve, metadata=player("p2"))
    assert not_organiser.value.code() == grpc.StatusCode.PERMISSION_DENIED
    approved = await platform.stub.ApproveEntrant(approve, metadata=player("org"))
    assert approved.entrant.state == pb.ENTRANT_STATE_ACCEPTED
    left = await platform.stub.LeaveCompetition(pb.LeaveCompetitionRequest(competition_id=cid), metadata=player("p1"))
    assert left.refund == 0  # free: half of nothing
    entrants = {e.player_id: e.state for e in (await platform.competition(cid)).entrants}
    assert entrants == {"p1": pb.ENTRANT_STATE_LEFT_BEFORE_START}
    with pytest.raises(grpc.aio.AioRpcError) as gone:
        await platform.stub.LeaveCompetition(pb.LeaveCompetitionRequest(competition_id=cid), metadata=player("p1"))
    assert gone.value.code() == grpc.StatusCode.INVALID_ARGUMENT


async def test_a_free_points_competition_plays_every_round_and_its_file_verifies(platform: Platform) -> None:
    options = free_knockout(platform.clock(), capacity=8, rounds=2)
    options.format = pb.COMPETITION_FORMAT_POINTS
    created = await platform.stub.CreateCompetition(pb.CreateCompetitionRequest(options=options), metadata=admin())
    cid = created.competition.competition_id
    for i in range(6):
        await platform.stub.RegisterEntrant(pb.RegisterEntrantRequest(competition_id=cid), metadata=player(f"q{i}"))
    platform.clock.ms += 60_000
    competition = await _until(platform, cid, {pb.COMPETITION_STATE_REVIEW})
    bracket = await platform.stub.GetBracket(pb.GetBracketRequest(competition_id=cid), metadata=admin())
    assert [t.round for t in bracket.tables] == [1, 1, 2, 2]  # everyone plays every round
    assert len(bracket.ranking) == 8
    standings = await platform.stub.GetCompetitionStandings(
        pb.GetCompetitionStandingsRequest(competition_id=cid), metadata=admin()
    )
    assert ["+".join(row.players) for row in standings.rows] == list(bracket.ranking)  # the standings decide
    assert sum(row.wins for row in standings.rows) >= 4 and len(standings.tables) == 4
    _check_file(platform, competition)
