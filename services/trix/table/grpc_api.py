"""The gRPC adapter of the table service: `trix.v1.TableService` <-> `TableService`.

Owns proto <-> domain translation only. Each RPC not built yet raises
`trix.errors.NotBuilt`, which the runtime answers with UNIMPLEMENTED naming
issue 4, the issue that builds them.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import grpc

from trix.errors import NotBuilt
from trix.runtime.server import ServiceBinding
from trix.table.service import TableService
from trix.v1 import table_pb2, table_pb2_grpc

SERVICE_NAME = "trix.v1.TableService"
BUILT_BY_ISSUE = 4


class TableApi(table_pb2_grpc.TableServiceServicer):
    """`trix.v1.TableService` over `TableService`."""

    def __init__(self, service: TableService) -> None:
        self.service = service

    async def CreateTable(
        self,
        request: table_pb2.CreateTableRequest,
        context: grpc.aio.ServicerContext[table_pb2.CreateTableRequest, table_pb2.CreateTableResponse],
    ) -> table_pb2.CreateTableResponse:
        raise NotBuilt("TableService.CreateTable", BUILT_BY_ISSUE)

    async def GetSeatView(
        self,
        request: table_pb2.GetSeatViewRequest,
        context: grpc.aio.ServicerContext[table_pb2.GetSeatViewRequest, table_pb2.GetSeatViewResponse],
    ) -> table_pb2.GetSeatViewResponse:
        raise NotBuilt("TableService.GetSeatView", BUILT_BY_ISSUE)

    async def SetClientSeed(
        self,
        request: table_pb2.SetClientSeedRequest,
        context: grpc.aio.ServicerContext[table_pb2.SetClientSeedRequest, table_pb2.SetClientSeedResponse],
    ) -> table_pb2.SetClientSeedResponse:
        raise NotBuilt("TableService.SetClientSeed", BUILT_BY_ISSUE)

    async def ChooseContract(
        self,
        request: table_pb2.ChooseContractRequest,
        context: grpc.aio.ServicerContext[table_pb2.ChooseContractRequest, table_pb2.ChooseContractResponse],
    ) -> table_pb2.ChooseContractResponse:
        raise NotBuilt("TableService.ChooseContract", BUILT_BY_ISSUE)

    async def AnswerDouble(
        self,
        request: table_pb2.AnswerDoubleRequest,
        context: grpc.aio.ServicerContext[table_pb2.AnswerDoubleRequest, table_pb2.AnswerDoubleResponse],
    ) -> table_pb2.AnswerDoubleResponse:
        raise NotBuilt("TableService.AnswerDouble", BUILT_BY_ISSUE)

    async def PlayCard(
        self,
        request: table_pb2.PlayCardRequest,
        context: grpc.aio.ServicerContext[table_pb2.PlayCardRequest, table_pb2.PlayCardResponse],
    ) -> table_pb2.PlayCardResponse:
        raise NotBuilt("TableService.PlayCard", BUILT_BY_ISSUE)

    async def LeaveTable(
        self,
        request: table_pb2.LeaveTableRequest,
        context: grpc.aio.ServicerContext[table_pb2.LeaveTableRequest, table_pb2.LeaveTableResponse],
    ) -> table_pb2.LeaveTableResponse:
        raise NotBuilt("TableService.LeaveTable", BUILT_BY_ISSUE)

    async def AutoAct(
        self,
        request: table_pb2.AutoActRequest,
        context: grpc.aio.ServicerContext[table_pb2.AutoActRequest, table_pb2.AutoActResponse],
    ) -> table_pb2.AutoActResponse:
        raise NotBuilt("TableService.AutoAct", BUILT_BY_ISSUE)

    def StreamSeatEvents(
        self,
        request: table_pb2.StreamSeatEventsRequest,
        context: grpc.aio.ServicerContext[table_pb2.StreamSeatEventsRequest, table_pb2.StreamSeatEventsResponse],
    ) -> AsyncIterator[table_pb2.StreamSeatEventsResponse]:
        raise NotBuilt("TableService.StreamSeatEvents", BUILT_BY_ISSUE)

    def StreamPublicEvents(
        self,
        request: table_pb2.StreamPublicEventsRequest,
        context: grpc.aio.ServicerContext[table_pb2.StreamPublicEventsRequest, table_pb2.StreamPublicEventsResponse],
    ) -> AsyncIterator[table_pb2.StreamPublicEventsResponse]:
        raise NotBuilt("TableService.StreamPublicEvents", BUILT_BY_ISSUE)


def binding(service: TableService) -> ServiceBinding:
    """How the runtime serves this API."""
    api = TableApi(service)

    def register(server: grpc.aio.Server) -> None:
        table_pb2_grpc.add_TableServiceServicer_to_server(api, server)

    return ServiceBinding(SERVICE_NAME, register, unbuilt_issue=BUILT_BY_ISSUE)
