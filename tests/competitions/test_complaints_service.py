"""The review period's complaints in the service (issue 43, docs/adr/0026), on a real
nats-server with the real table service: an entrant complains against a table during the
review period; the prizes (the payouts' settlement) are held past the period's end until an
operator has answered every complaint; who may complain or answer, and when, is enforced with
the right status; a restarted service keeps the complaints. The complaints are kept with the
competition: in its file (`GetCompetitionFile`, and the file published when the payouts are
settled) and covered by its digest, which the competition shows as it changes; the file
verifies, and one whose complaint was altered is refused by `trix verify-competition`."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import grpc
import pytest
from competition_support import trix_verify_competition
from competitions_service_support import Platform, admin, one_table_knockout, player

from support.waiting import eventually
from trix.competitions.complaints import MAX_PER_ENTRANT, Complaints
from trix.v1 import competitions_pb2 as pb

DEADLINE_S = 120.0
HUMANS = ("ann", "bob", "cy")


async def _until(p: Platform, cid: str, state: int) -> pb.Competition:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + DEADLINE_S
    while (competition := await p.competition(cid)).state != state:
        assert loop.time() < deadline, f"competition still in state {competition.state}"
        await asyncio.sleep(0.1)
    return competition


async def _refused(call: object, code: grpc.StatusCode) -> str:
    with pytest.raises(grpc.aio.AioRpcError) as err:
        await call  # type: ignore[misc]
    assert err.value.code() == code, err.value.details()
    return err.value.details() or ""


async def _file(p: Platform, cid: str) -> dict[str, object]:
    """The competition file as `GetCompetitionFile` answers it; its digest is the competition's."""
    reply = await p.stub.GetCompetitionFile(pb.GetCompetitionFileRequest(competition_id=cid), metadata=admin())
    document: dict[str, object] = json.loads(reply.file_json)
    assert document["digest"] == reply.digest == (await p.competition(cid)).digest
    return document


def _verified(tmp_path: Path, document: dict[str, object], name: str) -> str:
    path = tmp_path / name
    path.write_text(json.dumps(document, ensure_ascii=False), encoding="utf-8")
    checked = trix_verify_competition(path)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    return checked.stdout


async def test_the_prizes_wait_for_the_review_period_and_every_complaint_answered(
    competition_platform: Platform, tmp_path: Path
) -> None:
    platform = competition_platform
    cid = await one_table_knockout(platform, "reviewed", HUMANS)
    file = pb.FileComplaintRequest(competition_id=cid, table_id=f"{cid}-r1-t0", text="seat 2 never followed suit")
    await _refused(platform.stub.FileComplaint(file, metadata=player("ann")), grpc.StatusCode.FAILED_PRECONDITION)
    platform.clock.ms += 60_000
    review = await _until(platform, cid, pb.COMPETITION_STATE_REVIEW)

    filed = (await platform.stub.FileComplaint(file, metadata=player("ann"))).complaint
    assert (filed.player_id, filed.table_id, filed.answer) == ("ann", f"{cid}-r1-t0", "")
    kept = await _file(platform, cid)  # the complaint is in the file, its digest no longer the final's
    assert kept["complaints"] == [
        {"id": filed.complaint_id, "player": "ann", "table": f"{cid}-r1-t0", "text": file.text}
        | {"answer": None, "operator": None}
    ]
    assert kept["digest"] != review.digest
    assert "complaints: ok, 1 complaint, 0 answered" in _verified(tmp_path, kept, "filed.json")
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
    assert (await platform.competition(cid)).state == pb.COMPETITION_STATE_REVIEW

    answer = pb.AnswerComplaintRequest(competition_id=cid, complaint_id=filed.complaint_id, answer="checked: legal")
    await _refused(platform.stub.AnswerComplaint(answer, metadata=player("ann")), grpc.StatusCode.PERMISSION_DENIED)
    answered = (await platform.stub.AnswerComplaint(answer, metadata=admin())).complaint
    assert (answered.answer, answered.operator_id) == ("checked: legal", "admin")
    again = await _refused(platform.stub.AnswerComplaint(answer, metadata=admin()), grpc.StatusCode.FAILED_PRECONDITION)
    assert "answered" in again
    finished = await _until(platform, cid, pb.COMPETITION_STATE_FINISHED)
    # The file kept after the review period: published again with the answer (after the
    # settlement's event: the tick that stored it publishes it next), the digest the competition
    # shows covering it.
    stored = platform.digest_dir / f"{cid}.json"
    await eventually(
        lambda: json.loads(stored.read_text(encoding="utf-8"))["digest"] == finished.digest,
        DEADLINE_S,
        "the settled file published",
    )
    published = json.loads(stored.read_text(encoding="utf-8"))
    assert published == await _file(platform, cid)
    complaint = published["complaints"][0]
    assert (complaint["answer"], complaint["operator"]) == ("checked: legal", "admin")
    assert "complaints: ok, 1 complaint, 1 answered" in _verified(tmp_path, published, "kept.json")
    complaint["answer"] = "refunded"  # the answer altered after the fact
    path = tmp_path / "altered.json"
    path.write_text(json.dumps(published), encoding="utf-8")
    altered = trix_verify_competition(path)
    assert altered.returncode == 1 and altered.stdout.splitlines()[-1] == "verification FAILED (digest)"


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
