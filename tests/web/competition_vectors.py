"""A competition file (`trix-competition/1`, docs/adr/0026) for the browser's competition check
(issue 43): a paid 16-entrant knockout of COMPLEX, every table a whole game of bots dealt by
docs/rules.md §11 (`trix.selfplay.play_record`), one entrant gone before the start, two bots
filling, the pool prize paid without a bot, two complaints of the review period kept (one in
Arabic and answered, one waiting), which the digest covers.

`python tests/web/competition_vectors.py` writes web/test/competition-file.json as the service
publishes it; tests/web/test_competition_vectors.py regenerates it, fails when the committed file
differs, and checks it with `trix verify-competition`'s checks; web/test/competition_check.test.ts
checks the browser's code (web/src/client/competition_check.ts) against the same file: the two
sides cannot drift apart.
"""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path
from typing import Any

from trix.competitions.complaints import as_file
from trix.competitions.digest import build_document
from trix.competitions.model import Entrant, Outcome
from trix.competitions.options import options_from_dict
from trix.competitions.run import CompetitionRun
from trix.competitions.seating import start
from trix.selfplay import play_record
from trix.v1 import competitions_pb2 as pb

FILE = Path(__file__).resolve().parents[2] / "web" / "test" / "competition-file.json"
NOW_MS = 1_700_000_000_000
SEED = hashlib.sha256(b"web competition vectors").digest()
COMPETITION = "webc1"


def document() -> dict[str, Any]:
    """The competition file: 15 paid, one left before the start (half back), bots fill two seats."""
    # As the file states them (`options_from_dict` reads a competition file's options).
    opts = options_from_dict(
        {
            "variant": "COMPLEX",
            "format": "knockout",
            "rounds": 2,
            "capacity": 16,
            "starts_at_ms": NOW_MS + 3_600_000,
            "registration_closes_at_ms": NOW_MS + 3_000_000,
            "entry_fee": 100,
            "prize": {"pool": [60, 40]},
        }
    )
    entrants = [Entrant(f"p{i:02d}", rating=1500.0 + (i * 37) % 400) for i in range(15)]
    left = ["p14"]
    at_start = [e for e in entrants if e.player not in left]
    run = CompetitionRun(COMPETITION, opts, SEED, start(opts, at_start).entrants)
    records: dict[str, Any] = {}
    tables = list(run.rounds[0])
    while tables:
        opened = []
        for seating in tables:
            table_id = seating.table_id(COMPETITION)
            seed = hashlib.sha256(SEED + table_id.encode()).digest()
            record = play_record(opts.variant, seating.players, seed, options=opts.table_options())
            records[table_id] = record
            opened += run.record(seating.round, seating.index, Outcome.from_record(record))
        tables = opened
    paid = [e.player for e in entrants]
    first = pb.Complaint(complaint_id=f"{COMPETITION}-k1", player_id="p03", table_id=f"{COMPETITION}-r1-t1")
    first.text, first.answer, first.operator_id = (
        "اللاعب في المقعد ٢ لم يتبع اللون",
        "checked: every card legal",
        "admin",
    )
    second = pb.Complaint(
        complaint_id=f"{COMPETITION}-k2", player_id="p07", table_id=f"{COMPETITION}-r2-t0", text="slow?"
    )
    complaints = [as_file(first), as_file(second)]
    return build_document(COMPETITION, opts, SEED, at_start, paid, left, run, records, complaints=complaints)


def render() -> str:
    """The file as the service writes it (services/trix/competitions: json.dumps, UTF-8)."""
    return json.dumps(document(), ensure_ascii=False) + "\n"


if __name__ == "__main__":
    FILE.write_text(render(), encoding="utf-8")
    sys.stdout.write(f"wrote {FILE}\n")
