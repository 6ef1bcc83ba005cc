"""The competition file and its one digest (issue 43).

Owns: the file a finished (or cancelled) competition publishes, `trix-competition/1`, one
JSON object: its options, the humans at the start (with the ratings rating seating used),
who paid, who left before the start, who was refused (or never accepted), the seating seed
with its commitment, whether it was cancelled, every table of every round (its players by
seat and the SHA-256 of its §12 record), the final ranking (units best first), the ledger
entries, the review period's complaints with their answers (`complaints.as_file`; none until
the final), each table's record, and `digest`: the SHA-256 in lower-case hex of the canonical
JSON (keys sorted, no spaces, UTF-8) of every one of those fields but the records themselves,
which it covers by their hashes. The file, so its digest, is published at the final and again
when the payouts are settled, with every complaint and answer of the review period. Also the
canonical form and a record's hash. Pure: building the file needs the competition's run and
its tables' records (or their hashes), given by the caller.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from typing import Any

from trix.competitions.model import Entrant, Unit
from trix.competitions.money import plan
from trix.competitions.options import CompetitionOptions
from trix.competitions.run import CompetitionRun
from trix.competitions.seating import seating_commitment

FORMAT = "trix-competition/1"
DIGESTED = (
    "format",
    "competition_id",
    "options",
    "humans",
    "paid",
    "left_before_start",
    "refused",
    "seating",
    "cancelled",
    "tables",
    "ranking",
    "ledger",
    "complaints",
)
"""The fields the digest covers, in the file's order; `records` is covered through `tables`."""


def canonical(value: Any) -> bytes:
    """The one byte form of a JSON value that a hash is taken of."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode("utf-8")


def record_hash(record: Any) -> str:
    """SHA-256 (lower-case hex) of a §12 record's canonical form."""
    return hashlib.sha256(canonical(record)).hexdigest()


def competition_digest(document: Mapping[str, Any]) -> str:
    """The digest of a competition file: over its DIGESTED fields (absent ones as null)."""
    return hashlib.sha256(canonical({name: document.get(name) for name in DIGESTED})).hexdigest()


def tables_of(run: CompetitionRun, hashes: Mapping[str, str]) -> list[dict[str, Any]]:
    """Each table of each round with its players and its record's hash (null while it has none)."""
    out = []
    for tables in run.rounds:
        for seating in tables:
            table_id = seating.table_id(run.competition_id)
            out.append(
                {
                    "round": seating.round,
                    "index": seating.index,
                    "table": table_id,
                    "players": list(seating.players),
                    "record_sha256": hashes.get(table_id),
                }
            )
    return out


def build_document(
    competition_id: str,
    options: CompetitionOptions,
    seed: bytes,
    humans: Sequence[Entrant],
    paid: Sequence[str],
    left_before_start: Sequence[str],
    run: CompetitionRun | None,
    records: Mapping[str, Any],
    refused: Sequence[str] = (),
    complaints: Sequence[Mapping[str, Any]] = (),
    hashes: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """The published file of a competition that finished (`run`) or was cancelled (`run` None);
    `hashes`, the records' hashes by table, stand for the records when they are not given (its
    digest only is wanted: the file's `records` are then empty)."""
    ranking: list[Unit] | None = None if run is None else run.ranking()
    ledger = plan(competition_id, options, paid, left_before_start, ranking, refused)
    if hashes is None:
        hashes = {table_id: record_hash(record) for table_id, record in records.items()}
    document: dict[str, Any] = {
        "format": FORMAT,
        "competition_id": competition_id,
        "options": options.as_dict(),
        "humans": [{"player": e.player, "rating": e.rating} for e in humans],
        "paid": list(paid),
        "left_before_start": list(left_before_start),
        "refused": list(refused),
        "seating": {"commitment": seating_commitment(seed), "seed": seed.hex()},
        "cancelled": run is None,
        "tables": [] if run is None else tables_of(run, hashes),
        "ranking": None if ranking is None else [list(unit) for unit in ranking],
        "ledger": [entry.as_dict() for entry in ledger],
        "complaints": [dict(c) for c in complaints],
        "records": {} if run is None else {t: records[t] for t in sorted(records)},
    }
    document["digest"] = competition_digest(document)
    return document
