"""`trix verify`: the whole record checked, one honest verdict (docs/rules.md §11, §12).

Owns: the list of checks a player sees when he verifies a finished game's record:
the commitment and every deal's hands from the seeds (`trix.records.verify`, §11),
the number of deals for the variant (§2, fewer only when a seat left a paid table,
§10), every deal's play replayed through the rules engine passed in (contract
choice, doubling, turn order, legal cards, the Trix layout: `trix.records.replay`,
the same replay `trix replay` does), every deal's points, the totals and the
ranking. Each check is one line saying what it found. Must not: import the engine
itself (the caller passes it in, as to `replay`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from trix.records import GameFactory, RecordError, VerifyReport, replay, verify
from trix.rules import DEALS_PER_GAME

CHECK_COMMITMENT = "commitment"
CHECK_HANDS = "hands"
CHECK_DEALS = "deals"
CHECK_PLAY = "play"
CHECK_SCORES = "deal scores"
CHECK_TOTALS = "totals"
CHECK_RANKING = "ranking"


def verify_record(record: Any, game_cls: GameFactory, options_cls: Callable[..., Any]) -> VerifyReport:
    """Every check of the record, in order; `ok` only when all of them pass.

    Raises RecordError only for a record that cannot be read at all (malformed)."""
    fair = verify(record)  # §11: commitment and hands; it also checks the record's structure
    lines = [line for line in fair.lines if not line.startswith(("verified:", "verification FAILED"))]
    failed: list[str] = []
    if not fair.ok:
        if any(line.startswith(CHECK_COMMITMENT) and "ok" not in line for line in lines):
            failed.append(CHECK_COMMITMENT)
        if any("MISMATCH" in line and line.startswith("deal ") for line in lines):
            failed.append(CHECK_HANDS)
        if not failed:  # no seed revealed (a running game) or no client seed: nothing more can be checked
            return VerifyReport(False, [*lines, "verification FAILED (fairness)"])
    variant = str(record["variant"])
    deals = record["deals"]
    expected = DEALS_PER_GAME[variant]
    left = record.get("left")
    if len(deals) > expected:
        lines.append(f"deals: FAILED, {len(deals)} deals, a {variant} game has {expected} (docs/rules.md §2)")
        return VerifyReport(False, [*lines, _verdict([*failed, CHECK_DEALS])])
    if CHECK_HANDS in failed:
        lines.append("play: not replayed, the hands are not the ones the seeds give")
        return VerifyReport(False, [*lines, _verdict(failed)])
    try:
        result = replay(record, game_cls, options_cls)
    except RecordError as exc:
        lines.append(_deals_line(len(deals), expected, variant, left, finished=None))
        if len(deals) < expected and left is None:
            failed.append(CHECK_DEALS)
        lines.append(f"play: FAILED, {exc.message}")
        failed.append(CHECK_PLAY)
        return VerifyReport(False, [*lines, _verdict(failed)])
    lines.append(_deals_line(len(deals), expected, variant, left, finished=result.finished))
    if not result.finished:
        failed.append(CHECK_DEALS)
    cards = sum(len(deal.get("plays") or []) for deal in deals)
    answers = sum(len(deal.get("doubles") or []) for deal in deals)
    lines.append(
        f"play: ok, {len(deals)} deals replayed under the rules (contracts, {answers} doubling answers, "
        f"{cards} cards in turn, each one legal)"
    )
    score_diffs = [d for d in result.differences if d.startswith("deal ")]
    total_diffs = [d for d in result.differences if d.startswith("totals:")]
    ranking_diffs = [d for d in result.differences if d.startswith("ranking:")]
    if score_diffs:
        failed.append(CHECK_SCORES)
        lines.append(f"deal scores: MISMATCH, {_deals(len(score_diffs))}; " + "; ".join(score_diffs[:3]))
    else:
        lines.append(f"deal scores: ok, every deal's points as replayed ({len(deals)} deals)")
    if total_diffs:
        failed.append(CHECK_TOTALS)
        lines.append("totals: MISMATCH, " + total_diffs[0].removeprefix("totals: "))
    else:
        lines.append(f"totals: ok, {result.record['totals']}")
    if ranking_diffs:
        failed.append(CHECK_RANKING)
        lines.append("ranking: MISMATCH, " + ranking_diffs[0].removeprefix("ranking: "))
    else:
        lines.append(f"ranking: ok, {result.record['ranking']}")
    return VerifyReport(not failed, [*lines, _verdict(failed)])


def _deals_line(count: int, expected: int, variant: str, left: Any, *, finished: bool | None) -> str:
    if left is not None:
        state = "ok" if finished is not False else "FAILED"
        # docs/rules.md §10: a leave ends the game at a paid table and at a competition's.
        return f"deals: {state}, {count} of {expected}, seat {left} left for good and the game stopped there"
    if count == expected and finished is not False:
        return f"deals: ok, {count} of {expected} for {variant}"
    if count == expected:
        return f"deals: FAILED, {count} of {expected} but the last one is unfinished"
    return f"deals: FAILED, {count} of the {expected} deals of a {variant} game (docs/rules.md §2)"


def _verdict(failed: list[str]) -> str:
    return "verified: all good" if not failed else f"verification FAILED ({', '.join(failed)})"


def _deals(n: int) -> str:
    return "1 deal differs" if n == 1 else f"{n} deals differ"
