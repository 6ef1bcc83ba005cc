"""The load test's check of every game: each record replayed and verified with the code of
`trix replay` and `trix verify`, saved for the CLI, and scoring's standings equal to the
replayed totals.
"""

from __future__ import annotations

import asyncio
import importlib
import os
from pathlib import Path
from typing import Any


async def verify_games(
    target: str, tables: set[str], games: dict[str, dict[str, Any]], records_dir: Path, ca_file: str | None = None
) -> tuple[int, list[str]]:
    """Replay and verify every record; scoring's standings must equal the replayed totals."""
    from trix.client import wait_for_standings
    from trix.records import load_record, replay, verify

    engine = importlib.import_module("trix.engine")
    os.makedirs(records_dir, exist_ok=True)
    failures: list[str] = []
    to_query: list[tuple[str, str, list[int]]] = []
    for table_id in sorted(tables):
        game = games.get(table_id)
        if game is None:
            failures.append(f"{table_id}: the game did not finish")
            continue
        (records_dir / f"{table_id}.json").write_text(game["record_json"])
        try:
            record = load_record(game["record_json"])
            result = replay(record, engine.Game, engine.Options)
            report = verify(record)
        except Exception as err:  # noqa: BLE001 - a bad record is a failed game, reported, never a crash
            failures.append(f"{table_id}: record rejected: {err}")
            continue
        replayed = list(result.record.get("totals") or [])
        if result.differences or not result.finished:
            failures.append(f"{table_id}: replay differs: {result.differences[:2]}")
        elif not report.ok:
            failures.append(f"{table_id}: verify failed")
        elif replayed != list(game["totals"]):
            failures.append(f"{table_id}: client totals {game['totals']} != replayed {replayed}")
        else:
            to_query.append((table_id, game["token"], replayed))
    sem = asyncio.Semaphore(16)

    async def check(table_id: str, token: str, replayed: list[int]) -> str | None:
        async with sem:
            scored = await wait_for_standings(
                target, token, table_id, replayed, tries=60, interval_s=0.5, timeout_s=10, ca_file=ca_file
            )
        return None if scored == replayed else f"{table_id}: scoring {scored} != replayed {replayed}"

    results = await asyncio.gather(*(check(*item) for item in to_query))
    failures += [r for r in results if r is not None]
    return len(tables) - len(failures), failures
