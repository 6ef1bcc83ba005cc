"""Helpers of the paid competitions tests (docs/adr/0030): the competitions test platform
(`competitions_service_support.Platform`: real nats-server, the real table service and C
engine, the competitions service) with the real scoring service beside it on a fixed port (a
restarted scoring is found where it was), the competitions service given its address. Scoring
runs in the test's event loop, or as its own process (`workdir` given), which can be made to
die at a point of its journal (`support.scoring_faults`)."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

import grpc
from competitions_service_support import Platform, admin, free_knockout, player

from support.nats import AuthNats
from support.processes import stop_process
from support.scoring import InProcessScoring, scoring_env
from support.scoring_faults import CRASH_AT_ENV
from support.table import KEYS, REPO
from trix.competitions.money import LedgerEntry
from trix.competitions.ports import Ledger
from trix.competitions.service import CompetitionsService
from trix.processes import free_port
from trix.v1 import competitions_pb2 as pb
from trix.v1 import scoring_pb2, scoring_pb2_grpc

ADMIN_TOKEN = "competition-money-admin-token"
GRANT = 1000
FEE = 100
DEADLINE_S = 120.0
ADMIN = (("x-trix-admin-token", ADMIN_TOKEN),)
"""Scoring's admin credential. The test's calls wait for scoring to be ready: after a restart a
channel to it may still be in its reconnection backoff."""


class ScoringChild:
    """`python -m trix.scoring` as its own process; with `crash_at` (`point:kind:n`), the same
    service that exits abruptly there (`support.scoring_faults`)."""

    def __init__(self, env: dict[str, str], workdir: Path) -> None:
        self.env = {k: v for k, v in os.environ.items() if not k.startswith("TRIX_")}
        self.env["PYTHONPATH"] = os.pathsep.join([str(REPO / "services"), str(REPO / "tests")])
        self.env.update(env)
        self.workdir = workdir
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self, crash_at: str = "") -> None:
        env = {**self.env, CRASH_AT_ENV: crash_at} if crash_at else self.env
        module = "support.scoring_faults" if crash_at else "trix.scoring"
        with open(self.workdir / f"scoring-{'crash' if crash_at else 'run'}.log", "ab") as log:
            self.proc = subprocess.Popen([sys.executable, "-m", module], env=env, stdout=log, stderr=log)

    def stop(self) -> None:
        stop_process(self.proc, grace_s=10)
        self.proc = None


class MoneyPlatform(Platform):
    """The platform with scoring (see the module docstring)."""

    def __init__(self, nats: AuthNats, digest_dir: Path, workdir: Path | None = None, crash_at: str = "") -> None:
        super().__init__(nats, digest_dir)
        self.crash_at = crash_at
        """Where the first scoring process dies (`support.scoring_faults`; a process only)."""
        port = str(free_port())
        env = scoring_env(nats.url("scoring"), admin_token=ADMIN_TOKEN, keys=KEYS, TRIX_GRPC_PORT=port)
        self.scoring: InProcessScoring | ScoringChild = (
            InProcessScoring(env) if workdir is None else ScoringChild(env, workdir)
        )
        self.competitions_env = {"TRIX_SCORING_TARGET": f"127.0.0.1:{port}"}
        self.scoring_channel: grpc.aio.Channel | None = None
        self.scoring_stub: scoring_pb2_grpc.ScoringServiceStub | None = None

    async def start_scoring(self, crash_at: str = "") -> None:
        if isinstance(self.scoring, InProcessScoring):
            await self.scoring.start()
        else:
            self.scoring.start(crash_at)

    async def stop_scoring(self) -> None:
        if isinstance(self.scoring, InProcessScoring):
            await self.scoring.stop()
        else:
            self.scoring.stop()

    async def start(self) -> None:
        self.scoring_channel = grpc.aio.insecure_channel(self.competitions_env["TRIX_SCORING_TARGET"])
        self.scoring_stub = scoring_pb2_grpc.ScoringServiceStub(self.scoring_channel)
        await self.start_scoring(self.crash_at)
        await self.totals()  # up
        await super().start()

    async def stop(self) -> None:
        await super().stop()
        await self.stop_scoring()
        if self.scoring_channel is not None:
            await self.scoring_channel.close()

    @property
    def ledger(self) -> scoring_pb2_grpc.ScoringServiceStub:
        assert self.scoring_stub is not None
        return self.scoring_stub

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
            await self.ledger.Grant(grant, metadata=ADMIN, wait_for_ready=True, timeout=DEADLINE_S)

    async def available(self, p: str) -> int:
        got = await self.ledger.GetBalance(
            scoring_pb2.GetBalanceRequest(player_id=p), metadata=ADMIN, wait_for_ready=True, timeout=DEADLINE_S
        )
        return int(got.available)

    async def account(self, cid: str) -> scoring_pb2.GetCompetitionAccountResponse:
        request = scoring_pb2.GetCompetitionAccountRequest(competition_id=cid)
        return await self.ledger.GetCompetitionAccount(request, metadata=ADMIN, wait_for_ready=True, timeout=DEADLINE_S)

    async def totals(self) -> scoring_pb2.GetWalletTotalsResponse:
        return await self.ledger.GetWalletTotals(
            scoring_pb2.GetWalletTotalsRequest(), metadata=ADMIN, wait_for_ready=True, timeout=DEADLINE_S
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
