"""The gRPC adapter of the timers service: `trix.v1.TimersService` <-> `TimersService`.

Owns proto <-> domain translation only: pending deadlines of a table and a player's
presence as the timers see them (inspection and tools; the work happens on NATS).
"""

from __future__ import annotations

import time
from datetime import UTC, datetime

import grpc

from trix.natsio.subjects import token
from trix.runtime.identity import ROLE_SERVICE, VerifiedTokens, metadata_token
from trix.runtime.server import ServiceBinding
from trix.timers.service import TimersService
from trix.v1 import common_pb2, timers_pb2, timers_pb2_grpc

SERVICE_NAME = "trix.v1.TimersService"


def _stamp(t: float) -> datetime:
    return datetime.fromtimestamp(t, UTC)


class TimersApi(timers_pb2_grpc.TimersServiceServicer):
    """`trix.v1.TimersService` over `TimersService`."""

    def __init__(self, service: TimersService) -> None:
        self.service = service
        self.tokens = VerifiedTokens(service.config.keys)
        """A player's presence is answered only to a token of the signers the timers accept
        (the operators': `trix.declarations.service_token_callers`), each verified once; the
        timers hold no player key, so players ask through their table."""

    async def ListDeadlines(
        self,
        request: timers_pb2.ListDeadlinesRequest,
        context: grpc.aio.ServicerContext[timers_pb2.ListDeadlinesRequest, timers_pb2.ListDeadlinesResponse],
    ) -> timers_pb2.ListDeadlinesResponse:
        table_id = token(request.table_id, "table id")
        out = timers_pb2.ListDeadlinesResponse()
        for seat, decision, turn_seq, deadline in await self.service.pending_deadlines(table_id):
            d = out.deadlines.add(
                table_id=table_id, seat=seat, decision=common_pb2.Decision.ValueType(decision), turn_seq=turn_seq
            )
            d.deadline.FromDatetime(_stamp(deadline))
        return out

    async def GetPresence(
        self,
        request: timers_pb2.GetPresenceRequest,
        context: grpc.aio.ServicerContext[timers_pb2.GetPresenceRequest, timers_pb2.GetPresenceResponse],
    ) -> timers_pb2.GetPresenceResponse:
        self.tokens.verify(metadata_token(context), time.time(), roles=(ROLE_SERVICE,))
        connected, timeouts, leave_at = await self.service.presence(token(request.player_id, "player id"))
        out = timers_pb2.GetPresenceResponse(connected=connected, timeouts_in_a_row=timeouts)
        if leave_at is not None:
            out.leave_at.FromDatetime(_stamp(leave_at))
        return out


def binding(service: TimersService) -> ServiceBinding:
    """How the runtime serves this API."""
    api = TimersApi(service)

    def register(server: grpc.aio.Server) -> None:
        timers_pb2_grpc.add_TimersServiceServicer_to_server(api, server)

    return ServiceBinding(SERVICE_NAME, register)
