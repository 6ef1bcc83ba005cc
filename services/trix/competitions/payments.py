"""A paid competition's coins at scoring's ledger, exactly once (issue 43, docs/adr/0030).

Owns what the competitions service does with `money.plan` at the ledger (`ports.Ledger`):

- an entry fee is posted (held in the competition's escrow at scoring, with its key
  `competition.<id>.hold.<player>`) before the registration is stored: a player short of coins
  is refused (FAILED_PRECONDITION) with nothing held and nothing stored; an owner that dies
  between the hold and the registration leaves a fee scoring holds for a player the
  competition does not know, which `reconcile` finds at the start and refunds in full;
- every other entry is *due* from the stored events alone (`due`): half the fee back to a
  leaver before the start, the full fee to a refused entrant or one still waiting at the start,
  the full fee to everyone of a cancelled competition, and after the review period the prizes,
  the remaining refunds and the house's share of `PayoutsSettled` (never before it ends);
- `drive` posts what is due and not yet confirmed (`pending`), then stores the keys scoring
  confirmed (`LedgerPosted`). A process killed anywhere in between re-drives on its next tick
  after the restart: an entry posted but not yet confirmed is posted again and scoring's key
  dedupes it, so nothing is lost and nothing doubled.

Per competition, fees = refunds + prizes + house fee (`money.check_conserved`; scoring's
`GetCompetitionAccount` shows the same sums).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol

import structlog

from trix.competitions.money import HOLD, REFUND, LedgerEntry, entry_key, plan
from trix.competitions.options import CompetitionOptions, FixedPrize
from trix.competitions.ports import Ledger
from trix.competitions.registration import PENDING, REFUSED
from trix.errors import IllegalMove, Unavailable
from trix.v1 import competitions_pb2 as pb

if TYPE_CHECKING:
    from trix.competitions.state import Competition

log = structlog.get_logger("trix.competitions.payments")


def _entry(e: pb.CompetitionLedgerEntry) -> LedgerEntry:
    return LedgerEntry(e.key, e.kind, e.player_id, int(e.coins))


@dataclass
class MoneyState:
    """What a competition's events say of its coins at the ledger (folded with the rest)."""

    posted: set[str] = field(default_factory=set)
    """Keys scoring confirmed."""
    unregistered: list[LedgerEntry] = field(default_factory=list)
    """Full refunds of fees scoring held for players never registered."""
    payouts: list[LedgerEntry] | None = None
    """The settlement after the review period (`PayoutsSettled`)."""
    quiet: bool = False
    """Nothing was pending when last looked at, and no event came since (in memory only: each
    tick skips such a competition instead of working out its plan again)."""

    def apply(self, event: pb.CompetitionEvent) -> None:
        self.quiet = False
        body = event.WhichOneof("body")
        if body == "ledger_posted":
            self.posted.update(event.ledger_posted.keys)
            for fee in event.ledger_posted.unregistered_fees:
                key = entry_key(event.competition_id, REFUND, fee.player_id)
                self.unregistered.append(LedgerEntry(key, REFUND, fee.player_id, int(fee.coins)))
        elif body == "registered" and event.registered.hold_key:
            self.posted.add(event.registered.hold_key)  # held before it was stored
        elif body == "payouts_settled":
            self.payouts = [_entry(e) for e in event.payouts_settled.entries]


def due(comp: Competition) -> list[LedgerEntry]:
    """Every entry but the fees that the competition's events make due so far."""
    reg, cid, fee = comp.registration, comp.competition_id, comp.options.entry_fee
    out = list(comp.money.unregistered)
    if comp.money.payouts is not None:
        out += comp.money.payouts
    elif comp.cancelled:
        out += plan(cid, comp.options, reg.paid(), reg.left_before_start(), None, reg.refunded_in_full())
    elif fee:
        out += [LedgerEntry(entry_key(cid, REFUND, p), REFUND, p, fee // 2) for p in reg.left_before_start()]
        waiting = (REFUSED, PENDING) if comp.run is not None else (REFUSED,)
        out += [LedgerEntry(entry_key(cid, REFUND, p), REFUND, p, fee) for p, s in reg.states.items() if s in waiting]
    return [e for e in out if e.kind != HOLD and e.coins > 0]


def pending(comp: Competition) -> list[LedgerEntry]:
    return [e for e in due(comp) if e.key not in comp.money.posted]


class Appends(Protocol):
    async def _append(self, comp: Competition | None, event: pb.CompetitionEvent) -> Competition: ...


class Payments:
    """The service's hand at the ledger; without one (no TRIX_SCORING_TARGET) competitions
    with coins are refused at creation."""

    def __init__(self, ledger: Ledger | None = None) -> None:
        self.ledger = ledger

    def check_open(self, options: CompetitionOptions) -> None:
        """IllegalMove unless a competition with these coins can be paid: a ledger, and a
        fixed prize the fees of the fewest entrants it can start with cover (the house pays in
        nothing: `money.plan`'s house share stays >= 0)."""
        prize = sum(options.prize.coins) if isinstance(options.prize, FixedPrize) else 0
        if not options.entry_fee and not prize:
            return
        if self.ledger is None:
            raise IllegalMove("competitions with coins need the ledger, which this deployment does not reach")
        floor = options.entry_fee * options.min_entrants()
        if prize > floor:
            raise IllegalMove(
                f"prize: a fixed prize of {prize} coins is more than the fees of the "
                f"{options.min_entrants()} entrants the competition may start with ({floor})"
            )

    async def hold_fee(self, comp: Competition, player: str) -> None:
        """The entry fee held before the registration is stored (module docstring)."""
        fee = comp.options.entry_fee
        if not fee:
            return
        if self.ledger is None:
            raise Unavailable("the ledger is not reachable; retry")
        cid = comp.competition_id
        await self.ledger.post(cid, LedgerEntry(entry_key(cid, HOLD, player), HOLD, player, fee))

    async def after(self, service: Appends, comp: Competition) -> None:
        """`drive` right after a command's event (a leave, a refusal), at best: whatever fails
        here is logged and driven again by the next tick, and the command stays answered."""
        try:
            await self.drive(service, comp)
        except Exception as exc:  # noqa: BLE001 - the tick re-drives it
            log.warning("ledger entries left to the next tick", competition=comp.competition_id, error=repr(exc))

    async def reconcile(self, service: Appends, comp: Competition) -> Competition:
        """At the start: fees scoring holds for players the competition never registered (an
        owner died between the hold and the registration) stored as due for a full refund."""
        if not comp.options.entry_fee or self.ledger is None:
            return comp
        known = set(comp.registration.states) | {e.player for e in comp.money.unregistered}
        lost = [f for f in await self.ledger.fees(comp.competition_id) if f.player not in known]
        if not lost:
            return comp
        body = pb.LedgerPosted(
            unregistered_fees=[
                pb.CompetitionLedgerEntry(key=f.key, kind=f.kind, player_id=f.player, coins=f.coins) for f in lost
            ]
        )
        log.warning("fees held without a registration refunded", competition=comp.competition_id, players=len(lost))
        return await service._append(comp, pb.CompetitionEvent(competition_id=comp.competition_id, ledger_posted=body))

    async def drive(self, service: Appends, comp: Competition) -> Competition:
        """Posts every pending entry, then stores the keys scoring confirmed (module docstring).
        An entry scoring refuses or cannot take now is logged and tried on the next tick."""
        if comp.money.quiet or self.ledger is None:
            return comp
        todo = pending(comp)
        if not todo:
            comp.money.quiet = True
            return comp
        done = []
        for entry in todo:
            try:
                await self.ledger.post(comp.competition_id, entry)
            except (IllegalMove, Unavailable) as err:
                log.warning(
                    "ledger entry not posted yet", competition=comp.competition_id, key=entry.key, error=str(err)
                )
                break
            done.append(entry.key)
        if not done:
            return comp
        body = pb.LedgerPosted(keys=done)
        return await service._append(comp, pb.CompetitionEvent(competition_id=comp.competition_id, ledger_posted=body))
