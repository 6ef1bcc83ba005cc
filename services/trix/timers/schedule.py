"""What the timers send and when (pure: no I/O).

Owns `Job` (an AutoAct, Leave or ReclaimSeat due at a time), `all_jobs` and `next_due`
(what a document has still to send), `claim` and `record` (a job taken by a replica, and
what the table answered, written into the document) and `rendezvous` (the replica
preferred for a table among the live ones).
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass

from trix.timers.document import CLAIMED, FIRED, PENDING, REFUSED, Slot, TableDoc
from trix.timers.folding import LEAVE_REASON_TIMEOUTS, start_away
from trix.timers.ports import Outcome
from trix.v1 import common_pb2

AUTO = "auto"
LEAVE = "leave"
RECLAIM = "reclaim"


@dataclass(frozen=True)
class Job:
    """A due slot of a table: what to send, and which slot it is."""

    kind: str
    table_id: str
    seat: int
    due: float
    turn_seq: int = 0
    counts: bool = False
    """AutoAct of a real decision (not the seed turn): counts towards timeouts in a row."""
    reason: int = 0
    action_id: str = ""


def _slot_due(slot: Slot, claim_timeout_s: float) -> float | None:
    if slot.state == PENDING:
        return slot.due
    if slot.state == CLAIMED:
        return slot.claimed_at + claim_timeout_s  # the claimer died: claim again
    return None


def all_jobs(doc: TableDoc, claim_timeout_s: float) -> list[Job]:
    """Every slot still to send, with the time it is due."""
    if doc.finished:
        return []
    jobs: list[Job] = []
    turn = doc.turn
    if turn is not None:
        for seat_text, slot in turn.slots.items():
            due = _slot_due(slot, claim_timeout_s)
            if due is not None:
                counts = not turn.client_seeds and turn.decision != common_pb2.DECISION_UNSPECIFIED
                jobs.append(Job(AUTO, doc.table_id, int(seat_text), due, turn_seq=turn.seq, counts=counts))
    for seat, s in enumerate(doc.seats):
        for kind, other in ((LEAVE, s.away), (RECLAIM, s.reclaim)):
            if other is not None and (due := _slot_due(other, claim_timeout_s)) is not None:
                jobs.append(Job(kind, doc.table_id, seat, due, reason=other.reason, action_id=other.action_id))
    return jobs


def _slot_of(doc: TableDoc, job: Job) -> Slot | None:
    if job.kind == AUTO:
        if doc.turn is None or doc.turn.seq != job.turn_seq:
            return None
        return doc.turn.slots.get(str(job.seat))
    s = doc.seats[job.seat]
    slot = s.away if job.kind == LEAVE else s.reclaim
    return slot if slot is not None and slot.action_id == job.action_id else None


def claim(doc: TableDoc, job: Job, replica: str, now: float, claim_timeout_s: float) -> bool:
    """Take the job if it is still due and nobody holds a live claim on it."""
    slot = _slot_of(doc, job)
    if slot is None or doc.finished:
        return False
    due = _slot_due(slot, claim_timeout_s)
    if due is None or due > now:
        return False
    slot.state, slot.claimed_at, slot.claimed_by = CLAIMED, now, replica
    return True


def record(doc: TableDoc, job: Job, outcome: Outcome, now: float) -> bool:
    """Write down what the table answered."""
    slot = _slot_of(doc, job)
    if outcome is Outcome.UNAVAILABLE:
        # No answer (owner handover, lazy load): release the claim, the job is due again at once.
        # (A replica that dies instead leaves its claim to go stale after claim_timeout_s.)
        if slot is None or slot.state != CLAIMED:
            return False
        slot.state, slot.claimed_at, slot.claimed_by = PENDING, 0.0, ""
        return True
    s = doc.seats[job.seat]
    if job.kind == AUTO:
        if slot is not None:
            slot.state = FIRED if outcome is Outcome.ACCEPTED else REFUSED
        if outcome is Outcome.ACCEPTED and job.counts and job.turn_seq > s.human_seq:
            if job.turn_seq not in s.autos:
                s.autos.append(job.turn_seq)
            # §10 "a connected player who lets that many decisions in a row time out is
            # treated as disconnected": his grace period starts now.
            if s.timeouts_in_a_row() >= doc.max_timeouts:
                start_away(doc, job.seat, LEAVE_REASON_TIMEOUTS, f"leave-{job.seat}-t{job.turn_seq}", now)
        return True
    if slot is None:
        return False
    if outcome is Outcome.ACCEPTED:
        slot.state = FIRED
    elif job.kind == LEAVE:
        s.away = None
    else:
        s.reclaim = None
    return True


def next_due(doc: TableDoc, claim_timeout_s: float) -> float | None:
    """The earliest due time of `all_jobs(doc, claim_timeout_s)` (None: nothing to send),
    without building the jobs: the timers index a table at every turn."""
    if doc.finished:
        return None
    best: float | None = None
    turn = doc.turn
    if turn is not None:
        for slot in turn.slots.values():
            due = _slot_due(slot, claim_timeout_s)
            if due is not None and (best is None or due < best):
                best = due
    for s in doc.seats:
        for other in (s.away, s.reclaim):
            if other is not None:
                due = _slot_due(other, claim_timeout_s)
                if due is not None and (best is None or due < best):
                    best = due
    return best


def rendezvous(table_id: str, replicas: set[str]) -> str:
    """The replica preferred for a table: highest hash of (table, replica)."""
    return max(replicas, key=lambda r: (zlib.crc32(f"{table_id}|{r}".encode()), r))
