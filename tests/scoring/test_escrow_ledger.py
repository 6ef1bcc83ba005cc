"""A competition's escrow at scoring's ledger (docs/adr/0030, docs/rules.md §13): a fee the
balance does not cover moves nothing and stores nothing; a key posted twice moves coins once,
a key reused for another entry is refused; nothing leaves an escrow that it does not hold, and
no refund or prize goes to a player who paid no fee into it; whatever is posted, fees =
refunds + prizes + house + what the escrow holds, and the projection rebuilt from the journal
is the live one."""

from __future__ import annotations

import contextlib

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scoring_support import ADMIN_TOKEN, memory_service

from trix.errors import AlreadyExists, IllegalMove
from trix.scoring.escrow import FEE, HOUSE_SHARE, KINDS, PRIZE, REFUND, EscrowShort, InsufficientBalance, account
from trix.scoring.service import ScoringService
from trix.scoring.state import EscrowEntry

ADMIN = ADMIN_TOKEN
CID = "c1"


def _entry(kind: str, player: str, coins: int, key: str = "") -> EscrowEntry:
    return EscrowEntry(CID, key or f"competition.{CID}.{kind}.{player}", kind, player, coins)


async def _funded(players: dict[str, int]) -> ScoringService:
    service = memory_service()
    for player, coins in players.items():
        await service.grant(player, coins, f"g-{player}", ADMIN)
    return service


async def test_a_fee_the_balance_does_not_cover_moves_and_stores_nothing() -> None:
    service = await _funded({"a": 99})
    before = service.state.sequence
    with pytest.raises(InsufficientBalance, match="short of the entry fee"):
        await service.post_competition_entry(_entry(FEE, "a", 100))
    assert service.state.sequence == before and service.balance("a") == (99, 0)
    assert service.competition_account(CID) == ([], {FEE: 0, REFUND: 0, PRIZE: 0, HOUSE_SHARE: 0, "escrow": 0})


async def test_a_key_moves_coins_once_and_an_escrow_pays_out_only_what_it_holds_to_who_paid() -> None:
    service = await _funded({"a": 500, "b": 500})
    _, duplicate = await service.post_competition_entry(_entry(FEE, "a", 100))
    assert not duplicate
    _, duplicate = await service.post_competition_entry(_entry(FEE, "a", 100))
    assert duplicate and service.balance("a") == (400, 0)
    with pytest.raises(AlreadyExists):
        await service.post_competition_entry(_entry(FEE, "a", 50))  # the same key, another amount
    with pytest.raises(EscrowShort):
        await service.post_competition_entry(_entry(PRIZE, "a", 101))
    with pytest.raises(IllegalMove, match="paid no entry fee"):
        await service.post_competition_entry(_entry(PRIZE, "b", 10))
    await service.post_competition_entry(_entry(PRIZE, "a", 90))
    await service.post_competition_entry(_entry(HOUSE_SHARE, "house", 10))
    assert service.balance("a") == (490, 0)
    assert service.competition_account(CID)[1] == {FEE: 100, REFUND: 0, PRIZE: 90, HOUSE_SHARE: 10, "escrow": 0}
    assert service.wallet_totals(ADMIN)["escrow"] == 0 and service.wallet_totals(ADMIN)["house"] == 10


posts = st.lists(
    st.tuples(st.sampled_from(KINDS), st.sampled_from(["a", "b", "c"]), st.integers(1, 300), st.integers(0, 2)),
    max_size=25,
)


@settings(max_examples=40, deadline=None)
@given(posts)
async def test_whatever_is_posted_the_escrow_never_goes_below_zero_and_coins_are_conserved(
    steps: list[tuple[str, str, int, int]],
) -> None:
    service = await _funded({"a": 400, "b": 400, "c": 400})
    for kind, player, coins, n in steps:
        who = "house" if kind == HOUSE_SHARE else player
        with contextlib.suppress(IllegalMove, AlreadyExists):
            await service.post_competition_entry(_entry(kind, who, coins, f"competition.{CID}.{kind}.{who}.{n}"))
        totals = account(service.state, CID)
        assert totals["escrow"] >= 0
        assert totals[FEE] == totals[REFUND] + totals[PRIZE] + totals[HOUSE_SHARE] + totals["escrow"]
    wallet = service.wallet_totals(ADMIN)
    assert (
        wallet["available"] + wallet["held"] + wallet["pots"] + wallet["house"] + wallet["escrow"] == wallet["granted"]
    )
    rebuilt = memory_service(service.journal)  # type: ignore[arg-type]
    await rebuilt.load()
    assert rebuilt.state.snapshot() == service.state.snapshot()
