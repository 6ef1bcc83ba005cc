"""The gRPC adapter of the timers service: `trix.v1.TimersService` <-> `TimersService`.

Owns proto <-> domain translation only. Each RPC not built yet raises
`trix.errors.NotBuilt`, which the runtime answers with UNIMPLEMENTED naming
issue 7, the issue that builds them.
"""

from __future__ import annotations

import grpc

from trix.errors import NotBuilt
from trix.runtime.server import ServiceBinding
from trix.timers.service import TimersService
from trix.v1 import timers_pb2, timers_pb2_grpc

SERVICE_NAME = "trix.v1.TimersService"
BUILT_BY_ISSUE = 7


class TimersApi(timers_pb2_grpc.TimersServiceServicer):
    """`trix.v1.TimersService` over `TimersService`."""

    def __init__(self, service: TimersService) -> None:
        self.service = service

    async def ListDeadlines(
        self,
        request: timers_pb2.ListDeadlinesRequest,
        context: grpc.aio.ServicerContext[timers_pb2.ListDeadlinesRequest, timers_pb2.ListDeadlinesResponse],
    ) -> timers_pb2.ListDeadlinesResponse:
        raise NotBuilt("TimersService.ListDeadlines", BUILT_BY_ISSUE)

    async def GetPresence(
        self,
        request: timers_pb2.GetPresenceRequest,
        context: grpc.aio.ServicerContext[timers_pb2.GetPresenceRequest, timers_pb2.GetPresenceResponse],
    ) -> timers_pb2.GetPresenceResponse:
        raise NotBuilt("TimersService.GetPresence", BUILT_BY_ISSUE)


def binding(service: TimersService) -> ServiceBinding:
    """How the runtime serves this API."""
    api = TimersApi(service)

    def register(server: grpc.aio.Server) -> None:
        timers_pb2_grpc.add_TimersServiceServicer_to_server(api, server)

    return ServiceBinding(SERVICE_NAME, register, unbuilt_issue=BUILT_BY_ISSUE)
