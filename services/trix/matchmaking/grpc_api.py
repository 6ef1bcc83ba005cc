"""The gRPC adapter of the matchmaking service: `trix.v1.MatchmakingService` <-> `MatchmakingService`.

Owns proto <-> domain translation only. Each RPC not built yet raises
`trix.errors.NotBuilt`, which the runtime answers with UNIMPLEMENTED naming
issue 6, the issue that builds them.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import grpc

from trix.errors import NotBuilt
from trix.matchmaking.service import MatchmakingService
from trix.runtime.server import ServiceBinding
from trix.v1 import matchmaking_pb2, matchmaking_pb2_grpc

SERVICE_NAME = "trix.v1.MatchmakingService"
BUILT_BY_ISSUE = 6


class MatchmakingApi(matchmaking_pb2_grpc.MatchmakingServiceServicer):
    """`trix.v1.MatchmakingService` over `MatchmakingService`."""

    def __init__(self, service: MatchmakingService) -> None:
        self.service = service

    async def EnqueueTicket(
        self,
        request: matchmaking_pb2.EnqueueTicketRequest,
        context: grpc.aio.ServicerContext[matchmaking_pb2.EnqueueTicketRequest, matchmaking_pb2.EnqueueTicketResponse],
    ) -> matchmaking_pb2.EnqueueTicketResponse:
        raise NotBuilt("MatchmakingService.EnqueueTicket", BUILT_BY_ISSUE)

    async def CancelTicket(
        self,
        request: matchmaking_pb2.CancelTicketRequest,
        context: grpc.aio.ServicerContext[matchmaking_pb2.CancelTicketRequest, matchmaking_pb2.CancelTicketResponse],
    ) -> matchmaking_pb2.CancelTicketResponse:
        raise NotBuilt("MatchmakingService.CancelTicket", BUILT_BY_ISSUE)

    def WatchTicket(
        self,
        request: matchmaking_pb2.WatchTicketRequest,
        context: grpc.aio.ServicerContext[matchmaking_pb2.WatchTicketRequest, matchmaking_pb2.WatchTicketResponse],
    ) -> AsyncIterator[matchmaking_pb2.WatchTicketResponse]:
        raise NotBuilt("MatchmakingService.WatchTicket", BUILT_BY_ISSUE)

    async def CreatePrivateTable(
        self,
        request: matchmaking_pb2.CreatePrivateTableRequest,
        context: grpc.aio.ServicerContext[
            matchmaking_pb2.CreatePrivateTableRequest, matchmaking_pb2.CreatePrivateTableResponse
        ],
    ) -> matchmaking_pb2.CreatePrivateTableResponse:
        raise NotBuilt("MatchmakingService.CreatePrivateTable", BUILT_BY_ISSUE)

    async def JoinPrivateTable(
        self,
        request: matchmaking_pb2.JoinPrivateTableRequest,
        context: grpc.aio.ServicerContext[
            matchmaking_pb2.JoinPrivateTableRequest, matchmaking_pb2.JoinPrivateTableResponse
        ],
    ) -> matchmaking_pb2.JoinPrivateTableResponse:
        raise NotBuilt("MatchmakingService.JoinPrivateTable", BUILT_BY_ISSUE)

    async def StartPrivateTable(
        self,
        request: matchmaking_pb2.StartPrivateTableRequest,
        context: grpc.aio.ServicerContext[
            matchmaking_pb2.StartPrivateTableRequest, matchmaking_pb2.StartPrivateTableResponse
        ],
    ) -> matchmaking_pb2.StartPrivateTableResponse:
        raise NotBuilt("MatchmakingService.StartPrivateTable", BUILT_BY_ISSUE)

    async def Rematch(
        self,
        request: matchmaking_pb2.RematchRequest,
        context: grpc.aio.ServicerContext[matchmaking_pb2.RematchRequest, matchmaking_pb2.RematchResponse],
    ) -> matchmaking_pb2.RematchResponse:
        raise NotBuilt("MatchmakingService.Rematch", BUILT_BY_ISSUE)


def binding(service: MatchmakingService) -> ServiceBinding:
    """How the runtime serves this API."""
    api = MatchmakingApi(service)

    def register(server: grpc.aio.Server) -> None:
        matchmaking_pb2_grpc.add_MatchmakingServiceServicer_to_server(api, server)

    return ServiceBinding(SERVICE_NAME, register, unbuilt_issue=BUILT_BY_ISSUE)
