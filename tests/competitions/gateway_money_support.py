"""Paid competitions through the gateway (docs/adr/0030), for `make test-competitions`: the
embedded platform's scoring ledger reached as its operators reach it (the admin credential,
given to the platform by `start_platform`), to grant coins and read a competition's escrow;
each entrant's own balance and ledger read as his client reads them, through the gateway's
Query; a paid competition's options (a pool prize, the house's share).
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

import grpc
from platform_support import SCORING_ADMIN_TOKEN, Entrant, free_options

from trix.embedded import EmbeddedPlatform
from trix.v1 import competitions_pb2 as cpb
from trix.v1 import gateway_pb2, scoring_pb2, scoring_pb2_grpc

ADMIN = (("x-trix-admin-token", SCORING_ADMIN_TOKEN),)
GRANT = 1000
FEE = 100
SHARES = (60, 30, 10)
HOUSE_FEE_PERCENT = 10
TIMEOUT_S = 30.0
PAID_S = 60.0
"""How long the payouts may take to be confirmed after the competition's review period."""


def paid_options(competition_format: int, capacity: int, rounds: int, lead_ms: int) -> cpb.CompetitionOptions:
    """`free_options` with an entry fee of FEE and the pool shared SHARES, the house keeping
    HOUSE_FEE_PERCENT."""
    options = free_options(competition_format, capacity, rounds, lead_ms)
    options.entry_fee = FEE
    options.pool.shares_percent.extend(SHARES)
    options.pool.house_fee_percent = HOUSE_FEE_PERCENT
    return options


def prizes_of(pool: int) -> list[int]:
    """The pool prize's shares of `pool` (docs/adr/0026: the house's share kept, the odd coins
    to the first place)."""
    shared = pool - pool * HOUSE_FEE_PERCENT // 100
    amounts = [shared * s // 100 for s in SHARES]
    amounts[0] += shared - sum(amounts)
    return amounts


class Ledger:
    """Scoring's gRPC API on the platform, as its operators call it."""

    def __init__(self, platform: EmbeddedPlatform) -> None:
        port = next(c.grpc_port for c in platform.supervisor.services if c.name.startswith("scoring"))
        self.channel = grpc.aio.insecure_channel(f"127.0.0.1:{port}")
        self.stub = scoring_pb2_grpc.ScoringServiceStub(self.channel)

    async def close(self) -> None:
        await self.channel.close()

    async def grant(self, entrants: Sequence[Entrant], coins: int = GRANT) -> None:
        async def one(e: Entrant) -> None:
            grant = scoring_pb2.GrantRequest(player_id=e.player_id, amount=coins, grant_id=f"grant-{e.player_id}")
            await self.stub.Grant(grant, metadata=ADMIN, wait_for_ready=True, timeout=TIMEOUT_S)

        await asyncio.gather(*(one(e) for e in entrants))

    async def account(self, competition_id: str) -> scoring_pb2.GetCompetitionAccountResponse:
        request = scoring_pb2.GetCompetitionAccountRequest(competition_id=competition_id)
        return await self.stub.GetCompetitionAccount(request, metadata=ADMIN, timeout=TIMEOUT_S)  # type: ignore[no-any-return]

    async def totals(self) -> scoring_pb2.GetWalletTotalsResponse:
        request = scoring_pb2.GetWalletTotalsRequest()
        return await self.stub.GetWalletTotals(request, metadata=ADMIN, timeout=TIMEOUT_S)  # type: ignore[no-any-return]

    async def settled(self, competition_id: str) -> scoring_pb2.GetCompetitionAccountResponse:
        """The competition's account once its escrow is empty (every payout confirmed)."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + PAID_S
        while (account := await self.account(competition_id)).escrow or not account.entries:
            assert loop.time() < deadline, f"the escrow still holds {account.escrow} coins"
            await asyncio.sleep(0.2)
        return account


async def balance(entrant: Entrant) -> int:
    """The coins available to the entrant, as his client reads them (the gateway's Query)."""
    request = gateway_pb2.QueryRequest(balance=scoring_pb2.GetBalanceRequest())
    reply = await entrant.client.stub.Query(request, metadata=entrant.metadata, timeout=TIMEOUT_S)
    return int(reply.balance.available)


async def balances(entrants: Sequence[Entrant]) -> list[int]:
    return list(await asyncio.gather(*(balance(e) for e in entrants)))


async def until_balances(entrants: Sequence[Entrant], expected: list[int]) -> None:
    """Waits until the entrants' balances are `expected` (refunds are posted by the owner's ticks)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + PAID_S
    while (seen := await balances(entrants)) != expected:
        assert loop.time() < deadline, f"balances {seen}, not {expected}"
        await asyncio.sleep(0.2)


async def postings(entrant: Entrant) -> list[scoring_pb2.Posting]:
    """The entrant's own ledger, newest first, as his client reads it (the gateway's Query)."""
    request = gateway_pb2.QueryRequest(ledger=scoring_pb2.ListLedgerRequest(page_size=100))
    reply = await entrant.client.stub.Query(request, metadata=entrant.metadata, timeout=TIMEOUT_S)
    return list(reply.ledger.postings)


async def conserved(ledger: Ledger, account: scoring_pb2.GetCompetitionAccountResponse) -> None:
    """Coins conserved (docs/adr/0030): the escrow paid out exactly what it took in, each key
    once, and the wallets still add up to every coin granted."""
    assert account.fees == account.prizes + account.refunds + account.house and account.escrow == 0
    assert len({e.key for e in account.entries}) == len(account.entries)
    t = await ledger.totals()
    assert t.available + t.held + t.pots + t.house + t.escrow == t.granted
