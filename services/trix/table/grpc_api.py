"""The gRPC adapter of the table service: `trix.v1.TableService` for tools and admin.

Owns proto <-> command translation only: every unary RPC becomes a `TableCommand`
forwarded over NATS to the table's owner (docs/architecture.md: "its gRPC API forwards
the same way, so any replica accepts any table's call"), carrying the caller token
from the `x-trix-caller` metadata unchanged; the owner checks it. Streams first ask
the owner for the seat's view (the same permission check), then follow the seat's (or
the public) events: live on core NATS, what was missed asked of the owner with the
caller's token (`TableBus.events`).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import grpc

from trix.natsio import subjects
from trix.runtime.identity import TOKEN_METADATA
from trix.runtime.server import ServiceBinding
from trix.table.adapters import TableBus
from trix.table.service import TableService
from trix.v1 import table_pb2, table_pb2_grpc

SERVICE_NAME = "trix.v1.TableService"

Ctx = grpc.aio.ServicerContext[Any, Any]


def _token(context: Ctx) -> str | None:
    for key, value in context.invocation_metadata() or ():
        if key == TOKEN_METADATA and isinstance(value, str):
            return value
    return None


class TableApi(table_pb2_grpc.TableServiceServicer):
    """`trix.v1.TableService` over the NATS command protocol."""

    def __init__(self, service: TableService, bus: TableBus) -> None:
        self.service = service
        self.bus = bus

    async def _send(self, table_id: str, context: Ctx, **command: Any) -> table_pb2.TableCommandReply:
        return await self.bus.forward(table_id, table_pb2.TableCommand(**command), _token(context))

    async def CreateTable(self, request: table_pb2.CreateTableRequest, context: Ctx) -> table_pb2.CreateTableResponse:
        subjects.token(request.table_id, "table id")
        reply = await self._send(request.table_id, context, create_table=request)
        return reply.create_table

    async def GetSeatView(self, request: table_pb2.GetSeatViewRequest, context: Ctx) -> table_pb2.GetSeatViewResponse:
        subjects.token(request.table_id, "table id")
        reply = await self._send(request.table_id, context, get_seat_view=request)
        return reply.get_seat_view

    async def SetClientSeed(
        self, request: table_pb2.SetClientSeedRequest, context: Ctx
    ) -> table_pb2.SetClientSeedResponse:
        reply = await self._send(subjects.token(request.header.table_id), context, set_client_seed=request)
        return table_pb2.SetClientSeedResponse(sequence=reply.sequence)

    async def ChooseContract(
        self, request: table_pb2.ChooseContractRequest, context: Ctx
    ) -> table_pb2.ChooseContractResponse:
        reply = await self._send(subjects.token(request.header.table_id), context, choose_contract=request)
        return table_pb2.ChooseContractResponse(sequence=reply.sequence)

    async def AnswerDouble(
        self, request: table_pb2.AnswerDoubleRequest, context: Ctx
    ) -> table_pb2.AnswerDoubleResponse:
        reply = await self._send(subjects.token(request.header.table_id), context, answer_double=request)
        return table_pb2.AnswerDoubleResponse(sequence=reply.sequence)

    async def PlayCard(self, request: table_pb2.PlayCardRequest, context: Ctx) -> table_pb2.PlayCardResponse:
        reply = await self._send(subjects.token(request.header.table_id), context, play_card=request)
        return table_pb2.PlayCardResponse(sequence=reply.sequence)

    async def LeaveTable(self, request: table_pb2.LeaveTableRequest, context: Ctx) -> table_pb2.LeaveTableResponse:
        reply = await self._send(subjects.token(request.header.table_id), context, leave_table=request)
        return table_pb2.LeaveTableResponse(sequence=reply.sequence)

    async def ReclaimSeat(self, request: table_pb2.ReclaimSeatRequest, context: Ctx) -> table_pb2.ReclaimSeatResponse:
        reply = await self._send(subjects.token(request.header.table_id), context, reclaim_seat=request)
        return table_pb2.ReclaimSeatResponse(sequence=reply.sequence)

    async def HandOverSeat(
        self, request: table_pb2.HandOverSeatRequest, context: Ctx
    ) -> table_pb2.HandOverSeatResponse:
        reply = await self._send(subjects.token(request.header.table_id), context, hand_over_seat=request)
        return table_pb2.HandOverSeatResponse(sequence=reply.sequence)

    async def AutoAct(self, request: table_pb2.AutoActRequest, context: Ctx) -> table_pb2.AutoActResponse:
        reply = await self._send(subjects.token(request.table_id), context, auto_act=request)
        return table_pb2.AutoActResponse(sequence=reply.sequence)

    async def StreamSeatEvents(
        self, request: table_pb2.StreamSeatEventsRequest, context: Ctx
    ) -> AsyncIterator[table_pb2.StreamSeatEventsResponse]:
        table_id = subjects.token(request.table_id, "table id")
        view = table_pb2.GetSeatViewRequest(table_id=table_id, seat=request.seat)
        await self._send(table_id, context, get_seat_view=view)  # the owner checks the seat is the caller's
        async for event in self.bus.events(table_id, request.seat, request.after_sequence, _token(context)):
            yield table_pb2.StreamSeatEventsResponse(event=event)

    async def StreamPublicEvents(
        self, request: table_pb2.StreamPublicEventsRequest, context: Ctx
    ) -> AsyncIterator[table_pb2.StreamPublicEventsResponse]:
        table_id = subjects.token(request.table_id, "table id")
        view = table_pb2.GetSeatViewRequest(table_id=table_id, seat=-1)
        await self._send(table_id, context, get_seat_view=view)  # the table exists, the caller is known
        async for event in self.bus.events(table_id, None, request.after_sequence, _token(context)):
            yield table_pb2.StreamPublicEventsResponse(event=event)


def binding(service: TableService, bus: TableBus) -> ServiceBinding:
    """How the runtime serves this API."""
    api = TableApi(service, bus)

    def register(server: grpc.aio.Server) -> None:
        table_pb2_grpc.add_TableServiceServicer_to_server(api, server)

    return ServiceBinding(SERVICE_NAME, register)
