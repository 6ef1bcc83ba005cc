"""What the competition tests share: options as an organiser would set them, synthetic table
outcomes for the property tests (no engine), and whole competitions played with the real C
engine (`trix.selfplay.play_record`: every table a whole game of bots dealt by docs/rules.md
§11) into a competition file (`trix.competitions.digest.build_document`)."""

from __future__ import annotations

import hashlib
import random
import subprocess
import sys
from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from trix.competitions.digest import build_document
from trix.competitions.model import Entrant, Outcome, Seating
from trix.competitions.options import CompetitionOptions, PoolPrize
from trix.competitions.run import CompetitionRun
from trix.competitions.seating import start
from trix.selfplay import play_record

NOW_MS = 1_700_000_000_000
SEED = bytes(range(32))


def trix_verify_competition(path: Path) -> subprocess.CompletedProcess[str]:
    """`trix verify-competition FILE`, as a user runs it."""
    return subprocess.run(
        [sys.executable, "-m", "trix.cli", "verify-competition", str(path)],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def options(**changes: Any) -> CompetitionOptions:
    """A 2-round paid knockout of COMPLEX (8 deals a game: fast) for 16, pool prize 50/30/20."""
    base = CompetitionOptions(
        variant="COMPLEX",
        format="knockout",
        rounds=2,
        capacity=16,
        starts_at_ms=NOW_MS + 3_600_000,
        registration_closes_at_ms=NOW_MS + 3_000_000,
        entry_fee=100,
        prize=PoolPrize((50, 30, 20)),
    )
    return replace(base, **changes)


def humans(n: int) -> list[Entrant]:
    return [Entrant(f"p{i:03d}", rating=1500.0 + (i * 37) % 400) for i in range(n)]


def synthetic_outcome(seating: Seating, rng: random.Random, leaver: int | None, partnership: bool) -> Outcome:
    """A table's outcome as a record would state it: places by total (docs/rules.md §8, shared
    on equal totals; partnership by team total), the leaver's seat (and his partner) last (§10)."""
    totals = [rng.choice([-300, -120, -50, 0, 35, 100]) for _ in range(4)]
    if partnership:
        teams = [totals[0] + totals[2], totals[1] + totals[3]]
        if leaver is not None:
            teams[leaver % 2] = -(10**9)
        ranks = [1 if teams[s % 2] >= teams[1 - s % 2] else 2 for s in range(4)]
    else:
        key = [(-(10**9) if s == leaver else totals[s]) for s in range(4)]
        ranks = [1 + sum(k > key[s] for k in key) for s in range(4)]
    return Outcome((ranks[0], ranks[1], ranks[2], ranks[3]), (totals[0], totals[1], totals[2], totals[3]), leaver)


def table_seed(seed: bytes, table_id: str) -> bytes:
    """Each table's own server seed (the table service draws its own; here fixed for the test)."""
    return hashlib.sha256(seed + table_id.encode()).digest()


def play_competition(
    opts: CompetitionOptions,
    entrants: Sequence[Entrant],
    seed: bytes = SEED,
    *,
    left_before_start: Sequence[str] = (),
    refused: Sequence[str] = (),
    leavers: Mapping[str, int] | None = None,
    competition_id: str = "c1",
) -> dict[str, Any]:
    """The competition file of a competition whose every table is a real game of bots.

    `entrants` all paid; those in `left_before_start` left before the start, those in `refused`
    were refused by the organiser; a player in `leavers` leaves his first table for good once
    deal `leavers[player]` is dealt."""
    gone = set(left_before_start) | set(refused)
    at_start = [e for e in entrants if e.player not in gone]
    paid = [e.player for e in entrants]
    began = start(opts, at_start)
    if began.cancelled:
        return build_document(competition_id, opts, seed, at_start, paid, list(left_before_start), None, {}, refused)
    run = CompetitionRun(competition_id, opts, seed, began.entrants)
    records: dict[str, Any] = {}
    tables = list(run.rounds[0])
    leaving = dict(leavers or {})
    while tables:
        opened: list[Seating] = []
        for seating in tables:
            table_id = seating.table_id(competition_id)
            leaver = next(((leaving.pop(p), s) for s, p in enumerate(seating.players) if p in leaving), None)
            record = play_record(
                opts.variant, seating.players, table_seed(seed, table_id), options=opts.table_options(), leaver=leaver
            )
            records[table_id] = record
            opened += run.record(seating.round, seating.index, Outcome.from_record(record))
        tables = opened
    return build_document(competition_id, opts, seed, at_start, paid, list(left_before_start), run, records, refused)
