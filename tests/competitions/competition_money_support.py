"""Helpers of the paid competitions tests (docs/adr/0030): the competitions test platform
(`competitions_service_support.Platform`: real nats-server, the real table service and C
engine, the competitions service) with the real scoring service beside it on a fixed port (a
restarted scoring is found where it was), the competitions service given its address."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from pathlib import Path

from competitions_service_support import Platform, admin, free_knockout, player

from support.nats import AuthNats
from support.scoring import InProcessScoring, scoring_env
from support.table import KEYS
from trix.competitions.money import LedgerEntry
from trix.competitions.ports import Ledger
from trix.competitions.service import CompetitionsService
from trix.processes import free_port
from trix.v1 import competitions_pb2 as pb
from trix.v1 import scoring_pb2

ADMIN_TOKEN = "competition-money-admin-token"
GRANT = 1000
FEE = 100
DEADLINE_S = 120.0
ADMIN = (("x-trix-admin-token", ADMIN_TOKEN),)
"""Scoring's admin credential. The test's calls wait for scoring to be ready: after a restart a
channel to it may still be in its reconnection backoff."""


class MoneyPlatform(Platform):
    """The platform with scoring (see the module docstring)."""

    def __init__(self, nats: AuthNats, digest_dir: Path) -> None:
        super().__init__(nats, digest_dir)
        port = str(free_port())
        env = scoring_env(nats.url("scoring"), admin_token=ADMIN_TOKEN, keys=KEYS, TRIX_GRPC_PORT=port)
        self.scoring = InProcessScoring(env)
        self.competitions_env = {"TRIX_SCORING_TARGET": f"127.0.0.1:{port}"}

    async def start(self) -> None:
        await self.scoring.start()
        await super().start()

    async def stop(self) -> None:
        await super().stop()
        await self.scoring.stop()

    async def __aenter__(self) -> MoneyPlatform:
        try:
            await self.start()
        except BaseException:
            await self.stop()  # what did start
            raise
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()

    @property
    def service(self) -> CompetitionsService:
        assert self.competitions is not None and isinstance(self.competitions.service, CompetitionsService)
        return self.competitions.service

    async def grant(self, players: Sequence[str], coins: int = GRANT) -> None:
        for p in players:
            grant = scoring_pb2.GrantRequest(player_id=p, amount=coins, grant_id=f"grant-{p}")
            await self.scoring.stub.Grant(grant, metadata=ADMIN, wait_for_ready=True)

    async def available(self, p: str) -> int:
        got = await self.scoring.stub.GetBalance(
            scoring_pb2.GetBalanceRequest(player_id=p), metadata=ADMIN, wait_for_ready=True
        )
        return int(got.available)

    async def account(self, cid: str) -> scoring_pb2.GetCompetitionAccountResponse:
        request = scoring_pb2.GetCompetitionAccountRequest(competition_id=cid)
        return await self.scoring.stub.GetCompetitionAccount(request, metadata=ADMIN, wait_for_ready=True)

    async def totals(self) -> scoring_pb2.GetWalletTotalsResponse:
        return await self.scoring.stub.GetWalletTotals(
            scoring_pb2.GetWalletTotalsRequest(), metadata=ADMIN, wait_for_ready=True
        )

    async def create_paid(self, request_id: str, capacity: int = 16, rounds: int = 2) -> str:
        options = free_knockout(self.clock(), capacity, rounds)
        options.entry_fee = FEE
        options.pool.shares_percent.extend([60, 30, 10])
        options.pool.house_fee_percent = 10
        response = await self.stub.CreateCompetition(
            pb.CreateCompetitionRequest(options=options, request_id=request_id), metadata=admin()
        )
        return str(response.competition.competition_id)

    async def register(self, cid: str, players: Sequence[str]) -> None:
        for p in players:
            await self.stub.RegisterEntrant(pb.RegisterEntrantRequest(competition_id=cid), metadata=player(p))

    async def state(self, cid: str) -> pb.Competition:
        response = await self.stub.GetCompetition(pb.GetCompetitionRequest(competition_id=cid), metadata=admin())
        return response.competition

    async def until_state(self, cid: str, states: set[int]) -> pb.Competition:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + DEADLINE_S
        while (competition := await self.state(cid)).state not in states:
            assert loop.time() < deadline, f"competition still in state {competition.state}"
            await asyncio.sleep(0.1)
        return competition

    async def until_account(self, cid: str, escrow: int) -> scoring_pb2.GetCompetitionAccountResponse:
        """The competition's account once its escrow holds `escrow` coins (payouts are posted
        by the owner's ticks)."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + DEADLINE_S
        while (account := await self.account(cid)).escrow != escrow or not account.entries:
            assert loop.time() < deadline, f"escrow still {account.escrow}, not {escrow}"
            await asyncio.sleep(0.1)
        return account


class DiesAfterPosting:
    """Scoring's real ledger, in a competitions process that dies right after its `posts`-th
    successful post, before it can store the confirmation (LedgerPosted): every later call
    hangs as a killed process would, until the test stops the process."""

    def __init__(self, ledger: Ledger, posts: int) -> None:
        self.ledger = ledger
        self.left = posts

    async def post(self, competition_id: str, entry: LedgerEntry) -> None:
        if self.left <= 0:
            await asyncio.Event().wait()
        await self.ledger.post(competition_id, entry)
        self.left -= 1
        if self.left <= 0:
            await asyncio.Event().wait()

    async def fees(self, competition_id: str) -> list[LedgerEntry]:
        return await self.ledger.fees(competition_id)
