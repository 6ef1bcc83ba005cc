"""The gRPC adapter of the gateway service: `trix.v1.GatewayService` <-> `GatewayService`.

Owns proto <-> domain translation only. Each RPC not built yet raises
`trix.errors.NotBuilt`, which the runtime answers with UNIMPLEMENTED naming
issue 9, the issue that builds them.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import grpc

from trix.errors import NotBuilt
from trix.gateway.service import GatewayService
from trix.runtime.server import ServiceBinding
from trix.v1 import gateway_pb2, gateway_pb2_grpc

SERVICE_NAME = "trix.v1.GatewayService"
BUILT_BY_ISSUE = 9


class GatewayApi(gateway_pb2_grpc.GatewayServiceServicer):
    """`trix.v1.GatewayService` over `GatewayService`."""

    def __init__(self, service: GatewayService) -> None:
        self.service = service

    async def SignIn(
        self,
        request: gateway_pb2.SignInRequest,
        context: grpc.aio.ServicerContext[gateway_pb2.SignInRequest, gateway_pb2.SignInResponse],
    ) -> gateway_pb2.SignInResponse:
        raise NotBuilt("GatewayService.SignIn", BUILT_BY_ISSUE)

    def Session(
        self,
        request_iterator: AsyncIterator[gateway_pb2.SessionRequest],
        context: grpc.aio.ServicerContext[gateway_pb2.SessionRequest, gateway_pb2.SessionResponse],
    ) -> AsyncIterator[gateway_pb2.SessionResponse]:
        raise NotBuilt("GatewayService.Session", BUILT_BY_ISSUE)

    async def SubmitAction(
        self,
        request: gateway_pb2.SubmitActionRequest,
        context: grpc.aio.ServicerContext[gateway_pb2.SubmitActionRequest, gateway_pb2.SubmitActionResponse],
    ) -> gateway_pb2.SubmitActionResponse:
        raise NotBuilt("GatewayService.SubmitAction", BUILT_BY_ISSUE)

    def Events(
        self,
        request: gateway_pb2.EventsRequest,
        context: grpc.aio.ServicerContext[gateway_pb2.EventsRequest, gateway_pb2.EventsResponse],
    ) -> AsyncIterator[gateway_pb2.EventsResponse]:
        raise NotBuilt("GatewayService.Events", BUILT_BY_ISSUE)

    async def FindMatch(
        self,
        request: gateway_pb2.FindMatchRequest,
        context: grpc.aio.ServicerContext[gateway_pb2.FindMatchRequest, gateway_pb2.FindMatchResponse],
    ) -> gateway_pb2.FindMatchResponse:
        raise NotBuilt("GatewayService.FindMatch", BUILT_BY_ISSUE)

    async def CancelMatch(
        self,
        request: gateway_pb2.CancelMatchRequest,
        context: grpc.aio.ServicerContext[gateway_pb2.CancelMatchRequest, gateway_pb2.CancelMatchResponse],
    ) -> gateway_pb2.CancelMatchResponse:
        raise NotBuilt("GatewayService.CancelMatch", BUILT_BY_ISSUE)

    async def CreatePrivateGame(
        self,
        request: gateway_pb2.CreatePrivateGameRequest,
        context: grpc.aio.ServicerContext[gateway_pb2.CreatePrivateGameRequest, gateway_pb2.CreatePrivateGameResponse],
    ) -> gateway_pb2.CreatePrivateGameResponse:
        raise NotBuilt("GatewayService.CreatePrivateGame", BUILT_BY_ISSUE)

    async def JoinPrivateGame(
        self,
        request: gateway_pb2.JoinPrivateGameRequest,
        context: grpc.aio.ServicerContext[gateway_pb2.JoinPrivateGameRequest, gateway_pb2.JoinPrivateGameResponse],
    ) -> gateway_pb2.JoinPrivateGameResponse:
        raise NotBuilt("GatewayService.JoinPrivateGame", BUILT_BY_ISSUE)

    async def StartPrivateGame(
        self,
        request: gateway_pb2.StartPrivateGameRequest,
        context: grpc.aio.ServicerContext[gateway_pb2.StartPrivateGameRequest, gateway_pb2.StartPrivateGameResponse],
    ) -> gateway_pb2.StartPrivateGameResponse:
        raise NotBuilt("GatewayService.StartPrivateGame", BUILT_BY_ISSUE)

    def Spectate(
        self,
        request: gateway_pb2.SpectateRequest,
        context: grpc.aio.ServicerContext[gateway_pb2.SpectateRequest, gateway_pb2.SpectateResponse],
    ) -> AsyncIterator[gateway_pb2.SpectateResponse]:
        raise NotBuilt("GatewayService.Spectate", BUILT_BY_ISSUE)

    async def Query(
        self,
        request: gateway_pb2.QueryRequest,
        context: grpc.aio.ServicerContext[gateway_pb2.QueryRequest, gateway_pb2.QueryResponse],
    ) -> gateway_pb2.QueryResponse:
        raise NotBuilt("GatewayService.Query", BUILT_BY_ISSUE)


def binding(service: GatewayService) -> ServiceBinding:
    """How the runtime serves this API."""
    api = GatewayApi(service)

    def register(server: grpc.aio.Server) -> None:
        gateway_pb2_grpc.add_GatewayServiceServicer_to_server(api, server)

    return ServiceBinding(SERVICE_NAME, register, unbuilt_issue=BUILT_BY_ISSUE)
