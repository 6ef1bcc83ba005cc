"""`trix verify-competition FILE` (issue 43): a competition played with the real C engine (every
table a whole game of bots, dealt by docs/rules.md §11) verifies; a tampered record, digest,
payout or seating is refused with exit 1 and the failing check named; the review period's
complaints kept in the file verify, and an altered one is refused (by the digest; resealed, by
the complaints' own check); a file that is not a competition file is exit 2 with one line and
no traceback."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
from competition_support import humans, options, play_competition
from competition_support import trix_verify_competition as trix

import trix.engine as engine
from trix.competitions.complaints import as_file
from trix.competitions.digest import competition_digest, record_hash
from trix.competitions.options import FixedPrize, PoolPrize
from trix.competitions.verify import verify_competition
from trix.v1 import competitions_pb2 as pb


@pytest.fixture(scope="module")
def knockout_file() -> dict[str, Any]:
    """A paid 16-entrant knockout of 14 humans (two bots fill): one left before the start, one
    was refused by the organiser, one left his first-round table in its third deal."""
    entrants = humans(16)
    return play_competition(
        options(admission="approval"), entrants, left_before_start=["p014"], refused=["p015"], leavers={"p003": 2}
    )


def write(tmp_path: Path, document: Any) -> Path:
    path = tmp_path / "competition.json"
    path.write_text(json.dumps(document, ensure_ascii=False), encoding="utf-8")
    return path


def resealed(document: dict[str, Any]) -> dict[str, Any]:
    """What a forger who recomputes every hash publishes: the records' hashes and the digest redone."""
    for table in document["tables"]:
        table["record_sha256"] = record_hash(document["records"][table["table"]])
    document["digest"] = competition_digest(document)
    return document


def report(document: dict[str, Any]) -> list[str]:
    return verify_competition(document, engine.Game, engine.Options).lines


def test_a_knockout_played_by_the_engine_verifies(knockout_file: dict[str, Any], tmp_path: Path) -> None:
    result = trix(write(tmp_path, knockout_file))
    assert result.returncode == 0, result.stdout + result.stderr
    lines = result.stdout.splitlines()
    assert lines[-1] == "verified: all good"
    for check in ("options", "seating seed", "start", "records", "every record", "bracket", "payouts", "digest"):
        assert any(line.startswith(f"{check}: ok") for line in lines), check
    assert "14 entrants, 2 bots" in result.stdout
    assert "5 tables" in result.stdout
    assert "fees 1600 = prizes" in result.stdout and "refunds 150" in result.stdout  # half of one, all of one


def test_the_file_holds_the_leaver_last_and_no_prize_for_a_bot(knockout_file: dict[str, Any]) -> None:
    record = next(r for r in knockout_file["records"].values() if "p003" in r["players"])
    assert record["left"] == record["players"].index("p003")
    assert record["ranking"][record["left"]] == 4
    prized = [e["player"] for e in knockout_file["ledger"] if e["kind"] == "prize"]
    assert prized and not [p for p in prized if p.startswith("bot-")]
    assert [u[0] for u in knockout_file["ranking"] if not u[0].startswith("bot-")][:3] == prized


def test_a_tampered_record_is_refused_by_its_hash_and_by_trix_verify(
    knockout_file: dict[str, Any], tmp_path: Path
) -> None:
    forged = copy.deepcopy(knockout_file)
    table = forged["tables"][0]["table"]
    plays = forged["records"][table]["deals"][0]["plays"]
    plays[0], plays[1] = plays[1], plays[0]  # two cards swapped: out of turn
    result = trix(write(tmp_path, forged))
    assert result.returncode == 1
    assert f"records: FAILED, {table} hash" in result.stdout
    assert f"record {table}: FAILED, verification FAILED (play)" in result.stdout
    assert result.stdout.splitlines()[-1].startswith("verification FAILED (records, record ")


def test_a_resealed_tampered_record_still_fails_the_whole_record_verification(
    knockout_file: dict[str, Any], tmp_path: Path
) -> None:
    forged = copy.deepcopy(knockout_file)
    table = forged["tables"][-1]["table"]  # the final
    record = forged["records"][table]
    record["totals"] = [t + (40 if s == 0 else 0) for s, t in enumerate(record["totals"])]
    result = trix(write(tmp_path, resealed(forged)))
    assert result.returncode == 1
    assert f"record {table}: FAILED, verification FAILED (totals)" in result.stdout
    assert "records: ok" in result.stdout and "digest: ok" in result.stdout


def test_a_tampered_digest_is_refused(knockout_file: dict[str, Any], tmp_path: Path) -> None:
    forged = copy.deepcopy(knockout_file)
    forged["digest"] = "0" * 64
    result = trix(write(tmp_path, forged))
    assert result.returncode == 1
    assert result.stdout.splitlines()[-1] == "verification FAILED (digest)"


def test_a_tampered_payout_is_refused_even_resealed(knockout_file: dict[str, Any]) -> None:
    forged = copy.deepcopy(knockout_file)
    prizes = [e for e in forged["ledger"] if e["kind"] == "prize"]
    prizes[0]["coins"] -= 10
    prizes[1]["coins"] += 10
    lines = report(resealed(forged))
    assert lines[-1] == "verification FAILED (payouts)"
    assert "payouts: FAILED, the ledger entries are not the ones the ranking and fees give" in lines
    inflated = copy.deepcopy(knockout_file)
    next(e for e in inflated["ledger"] if e["kind"] == "prize")["coins"] += 1
    assert any(line.startswith("payouts: FAILED, coins not conserved") for line in report(resealed(inflated)))


def test_a_changed_ranking_or_seating_seed_is_refused(knockout_file: dict[str, Any]) -> None:
    forged = copy.deepcopy(knockout_file)
    forged["ranking"][0], forged["ranking"][1] = forged["ranking"][1], forged["ranking"][0]
    lines = report(resealed(forged))
    assert "bracket: FAILED, the ranking listed is not the one the results give" in lines
    other = copy.deepcopy(knockout_file)
    other["seating"]["seed"] = "11" * 32
    lines = report(resealed(other))
    assert "seating seed: FAILED, SHA-256 of the seed is not the commitment" in lines
    assert any(line.startswith("bracket: FAILED") for line in lines)


def test_a_points_competition_in_partnership_verifies() -> None:
    opts = options(
        variant="TRIX_PARTNERSHIP", format="points", rounds=2, capacity=8, entry_fee=0, prize=FixedPrize((200,))
    )
    document = play_competition(opts, humans(7), leavers={"p001": 5})
    lines = report(document)
    assert lines[-1] == "verified: all good", lines
    assert any(line.startswith("standings: ok, 2 rounds, 4 tables") for line in lines)


def test_an_underfilled_competition_verifies_as_cancelled_with_full_refunds() -> None:
    document = play_competition(options(prize=PoolPrize((100,))), humans(11), left_before_start=["p010"])
    assert document["cancelled"] and not document["tables"]
    refunds = {e["player"]: e["coins"] for e in document["ledger"] if e["kind"] == "refund"}
    assert refunds["p010"] == 50 and all(refunds[f"p{i:03d}"] == 100 for i in range(10))
    lines = report(document)
    assert lines[-1] == "verified: all good", lines
    assert "start: ok, underfilled: 10 of 16, fewer than 12" in lines


def complained(document: dict[str, Any]) -> dict[str, Any]:
    """The file as the service keeps it after a review period with two complaints, the first
    answered (in Arabic: the digest is taken of UTF-8, not of escapes)."""
    kept = copy.deepcopy(document)
    cid, tables = kept["competition_id"], kept["tables"]
    first = pb.Complaint(complaint_id=f"{cid}-k1", player_id="p000", table_id=tables[0]["table"], text="اللعب بطيء")
    first.answer, first.operator_id = "checked: every card legal", "admin"
    second = pb.Complaint(complaint_id=f"{cid}-k2", player_id="p001", table_id=tables[-1]["table"], text="seat 2?")
    kept["complaints"] = [as_file(first), as_file(second)]
    kept["digest"] = competition_digest(kept)
    return kept


def test_the_complaints_kept_in_the_file_verify_and_an_altered_one_is_refused(
    knockout_file: dict[str, Any], tmp_path: Path
) -> None:
    kept = complained(knockout_file)
    assert kept["digest"] != knockout_file["digest"]  # the digest covers the complaints
    result = trix(write(tmp_path, kept))
    assert result.returncode == 0, result.stdout + result.stderr
    assert "complaints: ok, 2 complaints, 1 answered" in result.stdout
    assert "complaints: ok, none filed" in trix(write(tmp_path, knockout_file)).stdout
    altered = copy.deepcopy(kept)
    altered["complaints"][0]["answer"] = "refunded"
    result = trix(write(tmp_path, altered))
    assert result.returncode == 1 and result.stdout.splitlines()[-1] == "verification FAILED (digest)"
    dropped = copy.deepcopy(kept)
    del dropped["complaints"][1]
    assert report(dropped)[-1] == "verification FAILED (digest)"
    outsider = copy.deepcopy(kept)
    outsider["complaints"][1]["player"] = "bot-1"
    lines = report(resealed(outsider))
    assert lines[-1] == "verification FAILED (complaints)"
    assert f"complaints: FAILED, {kept['competition_id']}-k2 is not an entrant's against a table" in "\n".join(lines)
    unsigned = copy.deepcopy(kept)
    unsigned["complaints"][0]["operator"] = None
    assert "answer and operator" in "\n".join(report(resealed(unsigned)))


@pytest.mark.parametrize(
    ("content", "says"),
    [
        (b"{not json", "not JSON"),
        (json.dumps({"format": "trix-game/1"}).encode(), "not a competition file"),
        (json.dumps({"format": "trix-competition/1", "competition_id": "c"}).encode(), "seating missing"),
    ],
)
def test_a_file_that_is_not_a_competition_file_is_exit_2_with_one_line(
    tmp_path: Path, content: bytes, says: str
) -> None:
    path = tmp_path / "bad.json"
    path.write_bytes(content)
    result = trix(path)
    assert result.returncode == 2
    assert result.stdout == ""
    assert len(result.stderr.splitlines()) == 1 and says in result.stderr
    assert "Traceback" not in result.stderr


@pytest.mark.parametrize(
    ("changes", "entrants", "leavers"),
    [
        ({"variant": "TRIX", "rounds": 3, "capacity": 64, "seating": "rating"}, 60, {"p001": 0, "p010": 4, "p033": 9}),
        ({"format": "points", "rounds": 3, "capacity": 16, "speed": "fast"}, 16, {"p005": 1}),
        (
            {
                "variant": "COMPLEX_PARTNERSHIP",
                "rounds": 4,
                "capacity": 32,
                "doubling_reveal": "SIMULTANEOUS",
                "doubling_self_take": "LEADER",
            },
            30,
            {"p002": 3},
        ),
    ],
)
def test_larger_competitions_of_every_kind_verify(
    changes: dict[str, Any], entrants: int, leavers: dict[str, int]
) -> None:
    opts = options(**changes)
    document = play_competition(opts, humans(entrants), leavers=leavers)
    lines = report(document)
    assert lines[-1] == "verified: all good", lines
    records = document["records"].values()
    assert all(r["options"]["doubling_self_take"] == opts.doubling_self_take for r in records)
    assert sum("left" in r for r in records) == len(leavers)
    prized = [e["player"] for e in document["ledger"] if e["kind"] == "prize"]
    assert prized and not [p for p in prized if p.startswith("bot-")]
