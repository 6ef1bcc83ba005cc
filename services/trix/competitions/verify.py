"""`trix verify-competition`: a competition file checked, one honest verdict (issue 43).

Owns: the checks an entrant runs on a published competition file (`trix.competitions.digest`),
each one line saying what it found, in order: `options` (allowed, docs/adr/0026), `seating
seed` (its commitment, docs/rules.md §11's convention), `start` (cancelled or not, and the
bots that filled, as the rules of `trix.competitions.seating` give them), `records` (every
table has a record whose hash is the one listed and whose players are the table's),
`record <table>` (the whole-record verification of `trix verify`, `trix.verification`, on every
record), `bracket` or `standings` (the whole competition re-run from the seed and the records'
outcomes gives the tables and the ranking listed), `payouts` (the ledger entries recomputed,
coins conserved, no prize to a bot), `complaints` (the review period's, as the service keeps
them: `trix.competitions.complaints.check_file`), `digest` (which covers the complaints too).
Must not import the engine (the caller passes it, as to `trix.verification.verify_record`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from trix.competitions.complaints import check_file
from trix.competitions.digest import FORMAT, competition_digest, record_hash, tables_of
from trix.competitions.model import Entrant, Outcome, Unit
from trix.competitions.money import LedgerEntry, check_conserved, plan
from trix.competitions.options import CompetitionError, options_from_dict, validate_options
from trix.competitions.run import CompetitionRun
from trix.competitions.seating import seating_commitment, start
from trix.records import GameFactory, VerifyReport
from trix.verification import verify_record

MAX_FAILED_SHOWN = 3


def read_document(document: Any) -> dict[str, Any]:
    """The file's top level, or CompetitionError when it is not a competition file at all."""
    if not isinstance(document, dict) or document.get("format") != FORMAT:
        raise CompetitionError(f"not a competition file (format must be {FORMAT!r})", "format")
    kinds: dict[str, type] = {"competition_id": str, "seating": dict, "records": dict}
    kinds.update(
        dict.fromkeys(("humans", "paid", "left_before_start", "refused", "tables", "ledger", "complaints"), list)
    )
    for name, kind in kinds.items():
        if not isinstance(document.get(name), kind):
            raise CompetitionError(f"competition file: {name} missing or of the wrong type", name)
    return document


def verify_competition(document: Any, game_cls: GameFactory, options_cls: Callable[..., Any]) -> VerifyReport:
    """Every check of the file, in order; `ok` only when all pass. CompetitionError: unreadable."""
    doc = read_document(document)
    lines: list[str] = []
    failed: list[str] = []

    def check(name: str, problem: str, good: str) -> None:
        lines.append(f"{name}: FAILED, {problem}" if problem else f"{name}: ok, {good}")
        if problem:
            failed.append(name)

    options = options_from_dict(doc.get("options"))
    try:
        validate_options(options, now_ms=options.registration_closes_at_ms - 1)
        check(
            "options", "", f"{options.format}, {options.rounds} rounds, {options.variant}, capacity {options.capacity}"
        )
    except CompetitionError as exc:
        check("options", exc.message, "")
    seating = doc["seating"]
    try:
        seed = bytes.fromhex(str(seating.get("seed")))
    except ValueError as exc:
        raise CompetitionError("competition file: the seating seed is not hex", "seating") from exc
    committed = seating_commitment(seed) == seating.get("commitment")
    check(
        "seating seed", "" if committed else "SHA-256 of the seed is not the commitment", "SHA-256(seed) = commitment"
    )
    try:
        humans = [Entrant(str(h["player"]), float(h.get("rating", 0.0))) for h in doc["humans"]]
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise CompetitionError("competition file: an entrant is not {player, rating}", "humans") from exc
    began = start(options, humans)
    cancelled = bool(began.cancelled)
    check(
        "start",
        "" if cancelled == doc.get("cancelled") else f"the file says cancelled={doc.get('cancelled')}",
        began.cancelled or f"{len(humans)} entrants, {_count(len(began.entrants) - len(humans), 'bot')}",
    )
    ranking: list[Unit] | None = None
    records: dict[str, Any] = doc["records"]
    if not cancelled:
        run = CompetitionRun(doc["competition_id"], options, seed, began.entrants)
        ranking = _rerun(run, records, doc, check)
        _check_records(doc, records, game_cls, options_cls, lines, failed)
    elif doc["tables"] or doc.get("ranking") is not None:
        check("bracket", "a cancelled competition has tables or a ranking", "")
    try:
        expected = [
            e.as_dict()
            for e in plan(
                doc["competition_id"], options, doc["paid"], doc["left_before_start"], ranking, doc["refused"]
            )
        ]
        listed = [LedgerEntry(str(e["key"]), str(e["kind"]), str(e["player"]), int(e["coins"])) for e in doc["ledger"]]
        check_conserved(listed)
        same = [e.as_dict() for e in listed] == expected
        check("payouts", "" if same else "the ledger entries are not the ones the ranking and fees give", _paid(listed))
    except (CompetitionError, KeyError, TypeError, ValueError) as exc:
        check("payouts", exc.message if isinstance(exc, CompetitionError) else "a ledger entry is malformed", "")
    tables = [t["table"] for t in doc["tables"] if isinstance(t, dict) and isinstance(t.get("table"), str)]
    problem = check_file(doc["competition_id"], doc["complaints"], [h.player for h in humans], tables)
    check("complaints", problem, _complaints(doc["complaints"]))
    digest = competition_digest(doc)
    check("digest", "" if digest == doc.get("digest") else f"the file's fields hash to {digest}", digest)
    verdict = "verified: all good" if not failed else f"verification FAILED ({', '.join(failed)})"
    return VerifyReport(not failed, [*lines, verdict])


def _rerun(
    run: CompetitionRun, records: dict[str, Any], doc: dict[str, Any], check: Callable[[str, str, str], None]
) -> Any:
    """The competition re-run from the seed and the records' outcomes; the ranking it gives (or None)."""
    name = "bracket" if run.options.format == "knockout" else "standings"
    try:
        while not run.finished:
            for seating in list(run.rounds[-1]):
                record = records.get(seating.table_id(run.competition_id))
                if record is None:
                    raise CompetitionError(f"no record of table {seating.table_id(run.competition_id)}", "records")
                run.record(seating.round, seating.index, Outcome.from_record(record))
        ranking = run.ranking()
    except CompetitionError as exc:
        check(name, exc.message, "")
        return None
    listed = [{k: t.get(k) for k in ("round", "index", "table", "players")} for t in doc["tables"]]
    rerun = [{k: t[k] for k in ("round", "index", "table", "players")} for t in tables_of(run, {})]
    if listed != rerun:
        check(name, "the tables listed are not the ones the seed and the results give", "")
    elif doc.get("ranking") != [list(u) for u in ranking]:
        check(name, "the ranking listed is not the one the results give", "")
    else:
        check(name, "", f"{run.current_round} rounds, {len(rerun)} tables, winner {'+'.join(ranking[0])}")
    return ranking


def _check_records(
    doc: dict[str, Any],
    records: dict[str, Any],
    game_cls: GameFactory,
    options_cls: Callable[..., Any],
    lines: list[str],
    failed: list[str],
) -> None:
    wrong = []
    for table in doc["tables"]:
        record = records.get(table.get("table"))
        if record is None or record_hash(record) != table.get("record_sha256"):
            wrong.append(f"{table.get('table')} hash")
        elif not isinstance(record, dict) or record.get("players") != table.get("players"):
            wrong.append(f"{table.get('table')} players")
    if set(records) - {t.get("table") for t in doc["tables"]}:
        wrong.append("a record of no table")
    shown = "; ".join(wrong[:MAX_FAILED_SHOWN])
    lines.append(f"records: FAILED, {shown}" if wrong else f"records: ok, {len(records)} records as listed")
    if wrong:
        failed.append("records")
    for table_id in sorted(records):
        try:
            report = verify_record(records[table_id], game_cls, options_cls)
            verdict = report.lines[-1]
        except Exception as exc:  # noqa: BLE001 - a malformed record fails its check, never the tool
            report, verdict = VerifyReport(False, []), f"unreadable ({getattr(exc, 'message', type(exc).__name__)})"
        if not report.ok:
            lines.append(f"record {table_id}: FAILED, {verdict}")
            failed.append(f"record {table_id}")
    if not any(f.startswith("record ") for f in failed):
        lines.append(f"every record: ok, {len(records)} records verified (trix verify's checks)")


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


def _complaints(complaints: list[Any]) -> str:
    answered = sum(1 for c in complaints if c.get("answer") is not None)
    return f"{_count(len(complaints), 'complaint')}, {answered} answered" if complaints else "none filed"


def _paid(entries: list[LedgerEntry]) -> str:
    held = sum(e.coins for e in entries if e.kind == "hold")
    prizes = sum(e.coins for e in entries if e.kind == "prize")
    refunds = sum(e.coins for e in entries if e.kind == "refund")
    house = sum(e.coins for e in entries if e.kind == "house")
    return f"fees {held} = prizes {prizes} + refunds {refunds} + house {house}"
