"""A competition's coins (issue 43): holds, refunds, prizes and the house fee, conserved.

Owns: the plan of ledger entries a competition makes at scoring's ledger (which alone moves
coins, docs/rules.md §13), each with its idempotency key, and the check that the plan
conserves coins: fees held = prizes + refunds + the house's share. The rules:

- every accepted entrant's fee is held once (`hold`);
- leaving before the start gives half the fee back, rounded down (the other half stays in the
  pool); leaving after the start gives nothing back; an entrant the organiser refused, or
  still waiting for approval at the start, gets the full fee back;
- a cancelled competition (under 75 % full at its start, or not full without bot fill) gives
  every entrant still in it the full fee back, and pays no prize;
- prizes go to the paid places of the final ranking, skipping every unit without a human: a
  place a bot would take goes to the next unit with a human; in partnership a place's prize is
  split between the unit's humans, the odd coin to the first in seat order;
- a fixed prize is paid as declared (the house pays what the fees do not cover, so the house's
  share is negative); a pool prize first keeps floor(pool * house_fee_percent / 100) for the
  house, shares the rest by the percentages (rounded down, the remainder to the first place),
  and a share no human can take goes to the house.

Every amount is paid only after the review period (the service's job); this module is pure.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from trix.competitions.model import Unit, is_bot
from trix.competitions.options import CompetitionError, CompetitionOptions, FixedPrize

HOLD, REFUND, PRIZE, HOUSE = "hold", "refund", "prize", "house"
HOUSE_ACCOUNT = "house"


def entry_key(competition_id: str, kind: str, player: str) -> str:
    """The idempotency key of one ledger entry: one hold, at most one refund and one prize per
    entrant per competition, one house entry per competition."""
    return f"competition.{competition_id}.{kind}.{player}"


@dataclass(frozen=True)
class LedgerEntry:
    """One move at the ledger: a hold takes `coins` from the player; a refund or a prize gives
    them; the house entry gives the house its share (negative: the house pays in)."""

    key: str
    kind: str
    player: str
    coins: int

    def as_dict(self) -> dict[str, object]:
        return {"key": self.key, "kind": self.kind, "player": self.player, "coins": self.coins}


def plan(
    competition_id: str,
    options: CompetitionOptions,
    paid: Sequence[str],
    left_before_start: Sequence[str],
    ranking: Sequence[Unit] | None,
    refused: Sequence[str] = (),
) -> list[LedgerEntry]:
    """Every ledger entry of a competition: `paid` held the fee (registration order),
    `left_before_start` left before the start, `refused` were refused or never accepted,
    `ranking` is the final ranking (None: cancelled)."""
    fee = options.entry_fee
    if len(set(paid)) != len(paid) or not set(left_before_start) | set(refused) <= set(paid):
        raise CompetitionError("every entrant pays once; a leaver or a refused entrant must have paid", "entrants")
    if set(left_before_start) & set(refused):
        raise CompetitionError("an entrant both left and was refused", "entrants")
    if any(is_bot(p) for p in paid):
        raise CompetitionError("a bot pays no fee", "entrants")
    gone, turned_away = set(left_before_start), set(refused)
    entries = [LedgerEntry(entry_key(competition_id, HOLD, p), HOLD, p, fee) for p in paid if fee]
    for player in paid:
        back = fee // 2 if player in gone else fee if ranking is None or player in turned_away else 0
        if back:
            entries.append(LedgerEntry(entry_key(competition_id, REFUND, player), REFUND, player, back))
    pool = sum(e.coins for e in entries if e.kind == HOLD) - sum(e.coins for e in entries if e.kind == REFUND)
    if ranking is not None:
        entries += _prizes(competition_id, options, pool, ranking)
    prizes = sum(e.coins for e in entries if e.kind == PRIZE)
    entries.append(LedgerEntry(entry_key(competition_id, HOUSE, HOUSE_ACCOUNT), HOUSE, HOUSE_ACCOUNT, pool - prizes))
    check_conserved(entries)
    return entries


def _prizes(competition_id: str, options: CompetitionOptions, pool: int, ranking: Sequence[Unit]) -> list[LedgerEntry]:
    prize = options.prize
    if isinstance(prize, FixedPrize):
        amounts = list(prize.coins)
    else:
        shared = pool - pool * prize.house_fee_percent // 100
        amounts = [shared * share // 100 for share in prize.shares_percent]
        if amounts:
            amounts[0] += shared - sum(amounts)
    humans = [[p for p in unit if not is_bot(p)] for unit in ranking]
    winners = [unit for unit in humans if unit][: len(amounts)]
    out = []
    for amount, unit in zip(amounts, winners, strict=False):
        each, odd = divmod(amount, len(unit))
        for i, player in enumerate(unit):
            coins = each + (odd if i == 0 else 0)
            if coins:
                out.append(LedgerEntry(entry_key(competition_id, PRIZE, player), PRIZE, player, coins))
    return out


def check_conserved(entries: Sequence[LedgerEntry]) -> None:
    """CompetitionError unless fees held = refunds + prizes + the house's share, one entry per
    key, no prize to a bot and no negative amount but the house's."""
    keys = [e.key for e in entries]
    if len(keys) != len(set(keys)):
        raise CompetitionError("two ledger entries share an idempotency key", "ledger")
    if any(e.kind == PRIZE and is_bot(e.player) for e in entries):
        raise CompetitionError("a prize is paid to a bot", "ledger")
    if any(e.coins < 0 and e.kind != HOUSE for e in entries):
        raise CompetitionError("a negative amount", "ledger")
    held = sum(e.coins for e in entries if e.kind == HOLD)
    out = sum(e.coins for e in entries if e.kind in (REFUND, PRIZE, HOUSE))
    if held != out:
        raise CompetitionError(f"coins not conserved: {held} held, {out} paid out", "ledger")
