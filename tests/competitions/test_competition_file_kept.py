"""The competition file kept with the review period's complaints and answers whatever fails
after the settlement (issue 43, docs/adr/0026: `trix.competitions.kept_files`), on a real
nats-server with the real table service and C engine. The file is published again after
`PayoutsSettled` is stored; when that publish fails (the NATS server stops answering as the
tables' records are read for it), the owner publishes it on a later tick, and a new owner finds
a stored file older than the settled state (the final's, as an owner SIGKILLed between the
settlement's event and the publish leaves it) and publishes it again: each time the stored
file's digest is the competition's and it holds the answered complaint."""

from __future__ import annotations

import json
import os
import signal
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from competitions_service_support import SEED, Platform, admin, one_table_knockout, player

from support.nats import AuthNats
from support.processes import paused
from support.waiting import eventually
from trix.competitions.adapters import MatchTables
from trix.competitions.config import CompetitionsConfig
from trix.competitions.ports import Digests, EventLog, Tables
from trix.competitions.service import CompetitionsService
from trix.natsio.connection import NatsConnection
from trix.v1 import competitions_pb2 as pb
from trix.v1 import events_pb2

DEADLINE_S = 60.0


class TablesMeetingAnOutage(MatchTables):
    """The real tables' results, read on a connection that waits 1 s for an answer (not 5);
    armed (`server_pid`), the NATS server stops answering when a record is next read (SIGSTOP,
    the read sent once the server has stopped: `paused`) until that read has given up (SIGCONT),
    as a stream whose leader died does."""

    server_pid = 0
    failed = 0
    """Reads that met the outage and failed."""

    async def game_ended(self, table_id: str) -> events_pb2.GameEnded | None:
        pid, self.server_pid = self.server_pid, 0
        if not pid:
            return await super().game_ended(table_id)
        await paused(pid)
        try:
            return await super().game_ended(table_id)
        except Exception:
            self.failed += 1
            raise
        finally:
            os.kill(pid, signal.SIGCONT)  # the server answers again once this read has given up


class OutagePlatform(Platform):
    """The competitions test platform whose competitions service reads the tables through `tables`."""

    def __init__(self, nats: AuthNats, digest_dir: Path, tables: TablesMeetingAnOutage) -> None:
        super().__init__(nats, digest_dir)
        self.outage_tables = tables

    def _new_service(self, config: CompetitionsConfig, events: EventLog, tables: Tables, digests: Digests) -> Any:
        return CompetitionsService(
            config, events, self.outage_tables, digests, clock_ms=self.clock, new_seed=lambda: SEED
        )


@pytest.fixture
async def platform(auth_nats: AuthNats, tmp_path: Path) -> AsyncIterator[OutagePlatform]:
    conn = NatsConnection(auth_nats.url("competitions"), "outage-reader", request_timeout_s=1.0)
    await conn.connect(give_up_after_s=30)
    p = OutagePlatform(auth_nats, tmp_path / "digests", TablesMeetingAnOutage(conn))
    try:
        await p.start()
        yield p
    finally:
        await p.stop()
        await conn.drain()


async def _in_state(p: Platform, cid: str, state: int) -> pb.Competition | None:
    competition = await p.competition(cid)
    return competition if competition.state == state else None


def _stored(p: Platform, cid: str) -> dict[str, Any]:
    document: dict[str, Any] = json.loads((p.digest_dir / f"{cid}.json").read_text(encoding="utf-8"))
    return document


async def test_the_settled_file_is_published_again_after_a_nats_outage_and_by_a_new_owner(
    platform: OutagePlatform,
) -> None:
    p = platform
    cid = await one_table_knockout(p, "kept", ("ann", "bob", "cy"))
    p.clock.ms += 60_000
    review = await eventually(lambda: _in_state(p, cid, pb.COMPETITION_STATE_REVIEW), DEADLINE_S, "the review")
    final_file = (p.digest_dir / f"{cid}.json").read_text(encoding="utf-8")  # published with the final
    assert json.loads(final_file)["digest"] == review.digest
    file = pb.FileComplaintRequest(competition_id=cid, table_id=f"{cid}-r1-t0", text="seat 2 never followed suit")
    filed = (await p.stub.FileComplaint(file, metadata=player("ann"))).complaint
    answer = pb.AnswerComplaintRequest(competition_id=cid, complaint_id=filed.complaint_id, answer="checked: legal")
    await p.stub.AnswerComplaint(answer, metadata=admin())

    # The settlement's file meets an outage: its records are not read, the file not published.
    p.outage_tables.server_pid = p.nats.proc.pid
    p.clock.ms = review.review_ends_at_ms + 1
    finished = await eventually(lambda: _in_state(p, cid, pb.COMPETITION_STATE_FINISHED), DEADLINE_S, "the settlement")
    assert finished.digest != review.digest  # covering the complaint and its answer
    await eventually(lambda: _stored(p, cid)["digest"] == finished.digest, DEADLINE_S, "the file published again")
    assert p.outage_tables.failed == 1  # the first publish failed
    kept = _stored(p, cid)
    assert [(c["id"], c["answer"], c["operator"]) for c in kept["complaints"]] == [
        (filed.complaint_id, "checked: legal", "admin")
    ]
    reply = await p.stub.GetCompetitionFile(pb.GetCompetitionFileRequest(competition_id=cid), metadata=admin())
    assert json.loads(reply.file_json) == kept

    # A new owner after the settled file was lost: the final's file is what is stored.
    await p.stop_competitions()
    (p.digest_dir / f"{cid}.json").write_text(final_file, encoding="utf-8")
    await p.start_competitions()
    await eventually(
        lambda: _stored(p, cid)["digest"] == finished.digest, DEADLINE_S, "the file published by the new owner"
    )
    assert _stored(p, cid) == kept
