"""What a paid competition's stored events make due at scoring's ledger (docs/adr/0030,
`trix.competitions.payments`), folded as the owner folds them: a leaver's half at once, a
refused entrant's full fee at once, a waiting one's at the start, nothing else before the
review period ends, the settlement after it, a fee scoring holds for a player never registered
refunded in full; and an entry confirmed by `LedgerPosted` is not due again."""

from __future__ import annotations

import time

from competitions_service_support import free_knockout

from trix.competitions.money import LedgerEntry, entry_key
from trix.competitions.payments import due, pending
from trix.competitions.state import Competition
from trix.v1 import competitions_pb2 as pb

FEE = 100
CID = "cpaid"


def _competition(approval: bool = False) -> Competition:
    options = free_knockout(time.time_ns() // 1_000_000)
    options.entry_fee = FEE
    options.pool.shares_percent.append(100)
    if approval:
        options.admission = pb.ADMISSION_APPROVAL
    created = pb.Competition(competition_id=CID, options=options, seating_seed=bytes(32).hex())
    return Competition.from_created(
        pb.CompetitionEvent(competition_id=CID, sequence=1, created=pb.CompetitionCreated(competition=created)), 1
    )


def _apply(comp: Competition, **body: object) -> None:
    comp.apply(pb.CompetitionEvent(competition_id=CID, sequence=comp.events + 1, **body), comp.last_seq + 1)  # type: ignore[arg-type]


def _register(comp: Competition, player: str, pending_: bool = False) -> None:
    state = pb.ENTRANT_STATE_PENDING if pending_ else pb.ENTRANT_STATE_ACCEPTED
    entrant = pb.Entrant(player_id=player, state=state)
    _apply(comp, registered=pb.EntrantRegistered(entrant=entrant, hold_key=entry_key(CID, "hold", player)))


def _refund(player: str, coins: int) -> LedgerEntry:
    return LedgerEntry(entry_key(CID, "refund", player), "refund", player, coins)


def test_a_leaver_gets_half_at_once_and_a_confirmed_entry_is_not_due_again() -> None:
    comp = _competition()
    _register(comp, "a")
    _register(comp, "b")
    assert due(comp) == [] and comp.money.posted == {entry_key(CID, "hold", p) for p in "ab"}  # fees held first
    _apply(comp, left=pb.EntrantLeft(player_id="a", before_start=True))
    assert pending(comp) == [_refund("a", FEE // 2)]
    _apply(comp, ledger_posted=pb.LedgerPosted(keys=[_refund("a", FEE // 2).key]))
    assert pending(comp) == [] and due(comp) == [_refund("a", FEE // 2)]


def test_a_refused_entrant_is_refunded_at_once_a_waiting_one_at_the_start_no_prize_before_the_review_ends() -> None:
    comp = _competition(approval=True)
    for p in ("a", "b", *(f"p{i}" for i in range(12))):
        _register(comp, p, pending_=True)
    _apply(comp, approved=pb.EntrantApproved(player_id="a", accept=False))
    assert pending(comp) == [_refund("a", FEE)]
    for i in range(12):
        _apply(comp, approved=pb.EntrantApproved(player_id=f"p{i}", accept=True))
    _apply(comp, cancelled=pb.CompetitionCancelled(reason="test"))  # b still waiting: the full fee
    assert sorted(e.player for e in pending(comp) if e.kind == "refund") == sorted(
        ["a", "b", *(f"p{i}" for i in range(12))]
    )
    assert all(e.coins == FEE for e in pending(comp) if e.kind == "refund") and not any(
        e.kind == "prize" for e in pending(comp)
    )


def test_the_settlement_is_due_only_once_stored_and_an_unregistered_fee_comes_back_in_full() -> None:
    comp = _competition()
    _register(comp, "a")
    lost = pb.CompetitionLedgerEntry(key=entry_key(CID, "hold", "ghost"), kind="hold", player_id="ghost", coins=FEE)
    _apply(comp, ledger_posted=pb.LedgerPosted(unregistered_fees=[lost]))
    assert pending(comp) == [_refund("ghost", FEE)]
    prize = pb.CompetitionLedgerEntry(key=entry_key(CID, "prize", "a"), kind="prize", player_id="a", coins=FEE)
    house = pb.CompetitionLedgerEntry(key=entry_key(CID, "house", "house"), kind="house", player_id="house", coins=0)
    _apply(comp, payouts_settled=pb.PayoutsSettled(entries=[prize, house]))
    assert pending(comp) == [_refund("ghost", FEE), LedgerEntry(prize.key, "prize", "a", FEE)]  # no 0-coin entry
