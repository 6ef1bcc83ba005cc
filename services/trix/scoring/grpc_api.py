"""The gRPC adapter of the scoring service: `trix.v1.ScoringService` <-> `ScoringService`.

Owns proto <-> domain translation only. Each RPC not built yet raises
`trix.errors.NotBuilt`, which the runtime answers with UNIMPLEMENTED naming
issue 8, the issue that builds them.
"""

from __future__ import annotations

import grpc

from trix.errors import NotBuilt
from trix.runtime.server import ServiceBinding
from trix.scoring.service import ScoringService
from trix.v1 import scoring_pb2, scoring_pb2_grpc

SERVICE_NAME = "trix.v1.ScoringService"
BUILT_BY_ISSUE = 8


class ScoringApi(scoring_pb2_grpc.ScoringServiceServicer):
    """`trix.v1.ScoringService` over `ScoringService`."""

    def __init__(self, service: ScoringService) -> None:
        self.service = service

    async def GetStandings(
        self,
        request: scoring_pb2.GetStandingsRequest,
        context: grpc.aio.ServicerContext[scoring_pb2.GetStandingsRequest, scoring_pb2.GetStandingsResponse],
    ) -> scoring_pb2.GetStandingsResponse:
        raise NotBuilt("ScoringService.GetStandings", BUILT_BY_ISSUE)

    async def ListHistory(
        self,
        request: scoring_pb2.ListHistoryRequest,
        context: grpc.aio.ServicerContext[scoring_pb2.ListHistoryRequest, scoring_pb2.ListHistoryResponse],
    ) -> scoring_pb2.ListHistoryResponse:
        raise NotBuilt("ScoringService.ListHistory", BUILT_BY_ISSUE)

    async def GetGameRecord(
        self,
        request: scoring_pb2.GetGameRecordRequest,
        context: grpc.aio.ServicerContext[scoring_pb2.GetGameRecordRequest, scoring_pb2.GetGameRecordResponse],
    ) -> scoring_pb2.GetGameRecordResponse:
        raise NotBuilt("ScoringService.GetGameRecord", BUILT_BY_ISSUE)

    async def GetLeaderboard(
        self,
        request: scoring_pb2.GetLeaderboardRequest,
        context: grpc.aio.ServicerContext[scoring_pb2.GetLeaderboardRequest, scoring_pb2.GetLeaderboardResponse],
    ) -> scoring_pb2.GetLeaderboardResponse:
        raise NotBuilt("ScoringService.GetLeaderboard", BUILT_BY_ISSUE)

    async def GetPlayerStats(
        self,
        request: scoring_pb2.GetPlayerStatsRequest,
        context: grpc.aio.ServicerContext[scoring_pb2.GetPlayerStatsRequest, scoring_pb2.GetPlayerStatsResponse],
    ) -> scoring_pb2.GetPlayerStatsResponse:
        raise NotBuilt("ScoringService.GetPlayerStats", BUILT_BY_ISSUE)

    async def GetBalance(
        self,
        request: scoring_pb2.GetBalanceRequest,
        context: grpc.aio.ServicerContext[scoring_pb2.GetBalanceRequest, scoring_pb2.GetBalanceResponse],
    ) -> scoring_pb2.GetBalanceResponse:
        raise NotBuilt("ScoringService.GetBalance", BUILT_BY_ISSUE)

    async def ListLedger(
        self,
        request: scoring_pb2.ListLedgerRequest,
        context: grpc.aio.ServicerContext[scoring_pb2.ListLedgerRequest, scoring_pb2.ListLedgerResponse],
    ) -> scoring_pb2.ListLedgerResponse:
        raise NotBuilt("ScoringService.ListLedger", BUILT_BY_ISSUE)

    async def Grant(
        self,
        request: scoring_pb2.GrantRequest,
        context: grpc.aio.ServicerContext[scoring_pb2.GrantRequest, scoring_pb2.GrantResponse],
    ) -> scoring_pb2.GrantResponse:
        raise NotBuilt("ScoringService.Grant", BUILT_BY_ISSUE)

    async def HoldStake(
        self,
        request: scoring_pb2.HoldStakeRequest,
        context: grpc.aio.ServicerContext[scoring_pb2.HoldStakeRequest, scoring_pb2.HoldStakeResponse],
    ) -> scoring_pb2.HoldStakeResponse:
        raise NotBuilt("ScoringService.HoldStake", BUILT_BY_ISSUE)

    async def ReleaseStake(
        self,
        request: scoring_pb2.ReleaseStakeRequest,
        context: grpc.aio.ServicerContext[scoring_pb2.ReleaseStakeRequest, scoring_pb2.ReleaseStakeResponse],
    ) -> scoring_pb2.ReleaseStakeResponse:
        raise NotBuilt("ScoringService.ReleaseStake", BUILT_BY_ISSUE)


def binding(service: ScoringService) -> ServiceBinding:
    """How the runtime serves this API."""
    api = ScoringApi(service)

    def register(server: grpc.aio.Server) -> None:
        scoring_pb2_grpc.add_ScoringServiceServicer_to_server(api, server)

    return ServiceBinding(SERVICE_NAME, register, unbuilt_issue=BUILT_BY_ISSUE)
