"""Competition escrows at scoring's ledger (issue 43, docs/adr/0030, docs/rules.md §13).

Owns the decision of one escrow entry and a competition's account. Each competition has one
account, `escrow:<competition>`: an entry fee moves a player's available coins into it
(refused with `InsufficientBalance` if the player is short, before anything moves); a refund
and a prize move coins out of it to a player who paid a fee into it (so never to a bot, which
pays none), the house's share to the house. The escrow never goes below zero, so the
competitions service can pay out only what players paid in: it mints nothing. Every entry is
idempotent on its key (`competition.<competition>.<kind>.<player>`): the same entry again is a
no-op, another entry under a used key is refused. Pure: the service commits what `decide`
returns. Must not import grpc or nats.
"""

from __future__ import annotations

from typing import Any

from trix.errors import AlreadyExists, IllegalMove, InvalidArgument
from trix.scoring.state import HOUSE, EscrowEntry, Posting, ScoringState, escrow_account, player_account

FEE, REFUND, PRIZE, HOUSE_SHARE = "fee", "refund", "prize", "house"
KINDS = (FEE, REFUND, PRIZE, HOUSE_SHARE)
HOUSE_PLAYER = "house"
"""The `player_id` of the house's share."""


class InsufficientBalance(IllegalMove):
    """docs/rules.md §13: a player whose balance is short of the entry fee cannot enter
    (FAILED_PRECONDITION)."""


class EscrowShort(IllegalMove):
    """A payout larger than what the competition's escrow holds (FAILED_PRECONDITION)."""


def check(entry: EscrowEntry) -> None:
    """InvalidArgument unless the entry is well formed for its competition."""
    if entry.kind not in KINDS:
        raise InvalidArgument(f"kind must be one of {', '.join(KINDS)}")
    if entry.coins <= 0:
        raise InvalidArgument("coins must be > 0")
    if not entry.key.startswith(f"competition.{entry.competition_id}."):
        raise InvalidArgument("an entry's key starts with competition.<competition_id>.")
    if (entry.kind == HOUSE_SHARE) != (entry.player_id == HOUSE_PLAYER):
        raise InvalidArgument("the house's share, and only it, is paid to player_id 'house'")


def account(state: ScoringState, competition_id: str) -> dict[str, int]:
    """The competition's totals by kind and what its escrow still holds."""
    totals = dict.fromkeys(KINDS, 0)
    for e in state.escrows.get(competition_id, ()):
        totals[e.kind] += e.coins
    totals["escrow"] = state.balance(escrow_account(competition_id))
    return totals


def decide(state: ScoringState, entry: EscrowEntry) -> dict[str, Any] | None:
    """The journal entry that posts `entry`, or None if its key was posted before (the same
    entry); AlreadyExists if the key was used for another."""
    done = state.escrow_entries.get(entry.key)
    if done is not None:
        if not done.same(entry):
            raise AlreadyExists(f"competition entry {entry.key} exists with another kind, player or amount")
        return None
    escrow = escrow_account(entry.competition_id)
    if entry.kind == FEE:
        available = state.balance(player_account(entry.player_id))
        if available < entry.coins:
            raise InsufficientBalance(f"your balance of {available} coins is short of the entry fee of {entry.coins}")
        debit, credit = player_account(entry.player_id), escrow
    else:
        held = state.balance(escrow)
        if held < entry.coins:
            raise EscrowShort(f"the competition's escrow holds {held} coins, not {entry.coins}")
        paid = any(
            e.kind == FEE and e.player_id == entry.player_id for e in state.escrows.get(entry.competition_id, ())
        )
        if entry.kind != HOUSE_SHARE and not paid:
            raise IllegalMove(f"{entry.player_id} paid no entry fee to this competition: no refund or prize")
        debit, credit = escrow, HOUSE if entry.kind == HOUSE_SHARE else player_account(entry.player_id)
    posting = Posting(f"escrow:{entry.key}", debit, credit, entry.coins, f"competition_{entry.kind}", "", entry.time_ms)
    return {
        "id": f"escrow:{entry.key}",
        "kind": "escrow",
        "competition": entry.competition_id,
        "key": entry.key,
        "entry_kind": entry.kind,
        "player": entry.player_id,
        "amount": entry.coins,
        "time_ms": entry.time_ms,
        "postings": [posting.to_json()],
    }
