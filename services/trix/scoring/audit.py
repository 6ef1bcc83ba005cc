"""Scoring's check of a GameEnded before it pays or rates: the event's results must be
what the game's own record replays to.

Owns `dispute(view, event)`: None when a started game's GameEnded agrees with its record,
else one line saying why not. The record (docs/rules.md §12) must parse; its commitment
must be SHA-256 of its revealed server seed and every listed hand the one the seeds deal
(§11, `trix.records.verify`); it must name the seats and the variant the table was created
with, and the commitment the TableCreated announced; replayed through the C engine
(`trix.records.replay`) it must follow the rules, and its recomputed totals, ranking and
leaver must be the event's. A game no deal was dealt in (refunded, never rated: §13) is
only checked for its seats; one left before its first card is checked whole (it is paid).
Pure: no I/O; the engine is `trix.engine`.
"""

from __future__ import annotations

from typing import Any

from trix import engine
from trix.records import RecordError, load_record, replay, verify
from trix.scoring.state import TableView, deals_dealt


def dispute(view: TableView, event: dict[str, Any]) -> str | None:
    """Why the GameEnded `event` of the table `view` must not be settled, or None."""
    try:
        record = load_record(str(event.get("record_json", "")))
    except RecordError as err:
        return f"the record does not parse ({err.message})"
    if not isinstance(record, dict):
        return "the record is not an object"
    players = record.get("players")
    if not isinstance(players, list) or len(players) != len(view.players):
        return "the record names no four players"
    if any(p and p != players[seat] for seat, p in enumerate(view.players)):  # bot seats: "bot-<s>"
        return "the record's players are not the table's"
    if view.variant and record.get("variant") != view.variant:
        return "the record's variant is not the table's"
    if deals_dealt(record) == 0:
        return None  # could not start: refunds only (docs/rules.md §13)
    try:
        report = verify(record)
        if not report.ok:
            return "the record's fairness does not verify: " + "; ".join(
                line for line in report.lines if "MISMATCH" in line or "missing" in line or "not revealed" in line
            )
        fairness = record.get("fairness")
        commitment = fairness.get("commitment") if isinstance(fairness, dict) else None
        if view.commitment and commitment != view.commitment:
            return "the record's commitment is not the one the table announced"
        result = replay(record, engine.Game, engine.Options)
    except RecordError as err:
        return f"the record does not replay ({err.message})"
    if result.differences:
        return "the record does not replay to its own results: " + "; ".join(result.differences)
    totals = [int(t) for t in event.get("totals", [])]
    if totals != result.record["totals"]:
        return f"totals {totals} in the event, {result.record['totals']} replayed"
    ranking = [int(p) for p in event.get("ranking", [])]
    if ranking != (result.record["ranking"] or []):
        return f"ranking {ranking} in the event, {result.record['ranking']} replayed"
    left = int(event.get("left_seat", -1))
    if left >= 0 and left != record.get("left"):
        return "the event's leaver is not the record's"
    if not result.finished:
        return "the record ends before the game does"
    return None
