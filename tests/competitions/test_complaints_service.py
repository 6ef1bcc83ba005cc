"""The review period's complaints in the service (issue 43, docs/adr/0026), on a real
nats-server with the real table service: an entrant complains against a table during the
review period; the prizes (the payouts' settlement) are held past the period's end until an
operator has answered every complaint; who may complain or answer, and when, is enforced with
the right status; a restarted service keeps the complaints."""

from __future__ import annotations

import asyncio

import grpc
import pytest
from competitions_service_support import Platform, admin, free_knockout, player

from trix.competitions.complaints import MAX_PER_ENTRANT, Complaints
from trix.v1 import competitions_pb2 as pb

DEADLINE_S = 120.0
HUMANS = ("ann", "bob", "cy")


async def _state(p: Platform, cid: str) -> pb.Competition:
    return (await p.stub.GetCompetition(pb.GetCompetitionRequest(competition_id=cid), metadata=admin())).competition


async def _until(p: Platform, cid: str, state: int) -> pb.Competition:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + DEADLINE_S
    while (competition := await _state(p, cid)).state != state:
        assert loop.time() < deadline, f"competition still in state {competition.state}"
        await asyncio.sleep(0.1)
    return competition


async def _refused(call: object, code: grpc.StatusCode) -> str:
    with pytest.raises(grpc.aio.AioRpcError) as err:
        await call  # type: ignore[misc]
    assert err.value.code() == code, err.value.details()
    return err.value.details() or ""


async def test_the_prizes_wait_for_the_review_period_and_every_complaint_answered(
    competition_platform: Platform,
) -> None:
    platform = competition_platform
    options = free_knockout(platform.clock(), capacity=4, rounds=1)
    response = await platform.stub.CreateCompetition(
        pb.CreateCompetitionRequest(options=options, request_id="reviewed"), metadata=admin()
    )
    cid = response.competition.competition_id
    for name in HUMANS:
        await platform.stub.RegisterEntrant(pb.RegisterEntrantRequest(competition_id=cid), metadata=player(name))
    file = pb.FileComplaintRequest(competition_id=cid, table_id=f"{cid}-r1-t0", text="seat 2 never followed suit")
    await _refused(platform.stub.FileComplaint(file, metadata=player("ann")), grpc.StatusCode.FAILED_PRECONDITION)
    platform.clock.ms += 60_000
    review = await _until(platform, cid, pb.COMPETITION_STATE_REVIEW)

    filed = (await platform.stub.FileComplaint(file, metadata=player("ann"))).complaint
    assert (filed.player_id, filed.table_id, filed.answer) == ("ann", f"{cid}-r1-t0", "")
    await _refused(platform.stub.FileComplaint(file, metadata=player("zed")), grpc.StatusCode.PERMISSION_DENIED)
    other_table = pb.FileComplaintRequest(competition_id=cid, table_id=f"{cid}-r9-t0", text="?")
    await _refused(platform.stub.FileComplaint(other_table, metadata=player("bob")), grpc.StatusCode.INVALID_ARGUMENT)
    empty = pb.FileComplaintRequest(competition_id=cid, table_id=f"{cid}-r1-t0", text="  ")
    await _refused(platform.stub.FileComplaint(empty, metadata=player("bob")), grpc.StatusCode.INVALID_ARGUMENT)

    platform.clock.ms = review.review_ends_at_ms + 1  # the period is over, one complaint unanswered
    late = await _refused(
        platform.stub.FileComplaint(file, metadata=player("bob")), grpc.StatusCode.FAILED_PRECONDITION
    )
    assert "review period" in late
    await platform.stop_competitions()  # the complaint is rebuilt from its event
    await platform.start_competitions()
    await asyncio.sleep(1.0)  # twenty ticks: the payouts stay held
    assert (await _state(platform, cid)).state == pb.COMPETITION_STATE_REVIEW

    answer = pb.AnswerComplaintRequest(competition_id=cid, complaint_id=filed.complaint_id, answer="checked: legal")
    await _refused(platform.stub.AnswerComplaint(answer, metadata=player("ann")), grpc.StatusCode.PERMISSION_DENIED)
    answered = (await platform.stub.AnswerComplaint(answer, metadata=admin())).complaint
    assert (answered.answer, answered.operator_id) == ("checked: legal", "admin")
    again = await _refused(platform.stub.AnswerComplaint(answer, metadata=admin()), grpc.StatusCode.FAILED_PRECONDITION)
    assert "answered" in again
    await _until(platform, cid, pb.COMPETITION_STATE_FINISHED)


def test_an_answered_complaint_no_longer_holds_the_prizes() -> None:
    complaints = Complaints()
    filed = pb.Complaint(complaint_id="c1-k1", player_id="ann", table_id="c1-r1-t0", text="x")
    complaints.apply(pb.CompetitionEvent(competition_id="c1", complaint_filed=pb.ComplaintFiled(complaint=filed)))
    assert complaints.unanswered("c1") == 1 and complaints.unanswered("c2") == 0
    answered = complaints.answer("c1", "c1-k1", "admin", " fine ")
    assert answered.answer == "fine" and complaints.unanswered("c1") == 1  # not stored yet
    event = pb.CompetitionEvent(competition_id="c1", complaint_answered=pb.ComplaintAnswered(complaint=answered))
    complaints.apply(event)
    assert complaints.unanswered("c1") == 0 and MAX_PER_ENTRANT == 5
