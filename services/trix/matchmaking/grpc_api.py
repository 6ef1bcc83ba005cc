"""The gRPC adapter of the matchmaking service: `trix.v1.MatchmakingService` <-> `MatchmakingService`.

Owns proto <-> domain translation and the caller's identity: the player is the one named
by the gateway's `x-trix-identity` player token (`trix.runtime.identity`, verified with
TRIX_PLAYER_TOKEN_KEY), and a request naming another player is refused.
Domain errors become statuses in the runtime's interceptor.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import grpc
from google.protobuf.timestamp_pb2 import Timestamp

from trix.errors import InvalidArgument
from trix.matchmaking.lobbies import private_team
from trix.matchmaking.queue_status import QueueView
from trix.matchmaking.records import OPEN, Ticket, public_state
from trix.matchmaking.service import MatchmakingService
from trix.matchmaking.wishes import OPTIONS, Wish, resolve_wish
from trix.runtime.identity import Identity
from trix.runtime.server import ServiceBinding
from trix.v1 import common_pb2, matchmaking_pb2, matchmaking_pb2_grpc

SERVICE_NAME = "trix.v1.MatchmakingService"

_ENUM_OPTIONS = ("doubling_reveal", "doubling_self_take", "team_tiebreak", "partner_chat")


def wish_from_proto(wish: matchmaking_pb2.GameWish) -> tuple[Wish, str]:
    """The domain wish (validated, options resolved) and the preset name."""
    options: dict[str, int] = {}
    if not wish.preset:
        for name in OPTIONS:
            if name in _ENUM_OPTIONS:
                value = int(getattr(wish.options, name))
                if value != 0:
                    options[name] = value
            elif wish.options.HasField(name):  # type: ignore[arg-type]
                options[name] = int(getattr(wish.options, name))
        unknown = [f.name for f, _ in wish.options.ListFields() if f.name not in OPTIONS]
        if unknown:
            raise InvalidArgument(f"unknown table option {unknown[0]}")
    stake = wish.stake.coins if wish.HasField("stake") else None
    return resolve_wish(int(wish.variant), options, wish.preset, stake), wish.preset


def wish_to_proto(wish: Wish, preset: str = "") -> matchmaking_pb2.GameWish:
    options = common_pb2.TableOptions()
    for name, value in wish.options:
        if name in _ENUM_OPTIONS:
            setattr(options, name, value)
        elif name in ("doubling", "partnership_trix_early_end"):
            setattr(options, name, bool(value))
        else:
            setattr(options, name, value)
    out = matchmaking_pb2.GameWish(variant=wish.variant, options=options, preset=preset)  # type: ignore[arg-type]
    if wish.paid:
        out.stake.coins = wish.stake
    return out


def ticket_to_proto(ticket: Ticket) -> matchmaking_pb2.Ticket:
    state = getattr(matchmaking_pb2, f"TICKET_STATE_{public_state(ticket)}")
    return matchmaking_pb2.Ticket(
        ticket_id=ticket.ticket_id,
        player_id=ticket.player_id,
        wish=wish_to_proto(ticket.wish, ticket.preset),
        state=state,
        table_id=ticket.table_id,
        seat=max(ticket.seat, 0) if ticket.table_id else -1,  # -1 = no seat yet (0 is a seat)
    )


def _timestamp(seconds: float) -> Timestamp:
    ts = Timestamp()
    ts.FromNanoseconds(int(seconds * 1e9))
    return ts


def queue_status_to_proto(view: QueueView) -> matchmaking_pb2.QueueStatus:
    status = matchmaking_pb2.QueueStatus(
        ticket_id=view.ticket_id, players_waiting=view.players, server_time=_timestamp(view.now)
    )
    if view.bots_at is not None:
        status.bots_fill_at.CopyFrom(_timestamp(view.bots_at))
    return status


class MatchmakingApi(matchmaking_pb2_grpc.MatchmakingServiceServicer):
    """`trix.v1.MatchmakingService` over `MatchmakingService`."""

    def __init__(self, service: MatchmakingService) -> None:
        self.service = service
        self.identity = Identity(service.config.keys)

    async def EnqueueTicket(
        self,
        request: matchmaking_pb2.EnqueueTicketRequest,
        context: grpc.aio.ServicerContext[matchmaking_pb2.EnqueueTicketRequest, matchmaking_pb2.EnqueueTicketResponse],
    ) -> matchmaking_pb2.EnqueueTicketResponse:
        player = self.identity.player(context, request.player_id)
        wish, preset = wish_from_proto(request.wish)
        ticket = await self.service.enqueue(
            player,
            wish,
            partner_id=request.partner_id,
            client_seed=request.client_seed,
            request_id=request.request_id,
            preset=preset,
            display_name=request.display_name,
        )
        return matchmaking_pb2.EnqueueTicketResponse(ticket=ticket_to_proto(ticket))

    async def CancelTicket(
        self,
        request: matchmaking_pb2.CancelTicketRequest,
        context: grpc.aio.ServicerContext[matchmaking_pb2.CancelTicketRequest, matchmaking_pb2.CancelTicketResponse],
    ) -> matchmaking_pb2.CancelTicketResponse:
        player = self.identity.player(context, request.player_id)
        ticket = await self.service.cancel(player, request.ticket_id)
        return matchmaking_pb2.CancelTicketResponse(ticket=ticket_to_proto(ticket))

    async def WatchTicket(
        self,
        request: matchmaking_pb2.WatchTicketRequest,
        context: grpc.aio.ServicerContext[matchmaking_pb2.WatchTicketRequest, matchmaking_pb2.WatchTicketResponse],
    ) -> AsyncIterator[matchmaking_pb2.WatchTicketResponse]:
        player = self.identity.player(context, request.player_id)
        async for item in self.service.watch(player, request.ticket_id, queue=request.queue_status):
            if isinstance(item, QueueView):
                yield matchmaking_pb2.WatchTicketResponse(queue=queue_status_to_proto(item))
            else:
                yield matchmaking_pb2.WatchTicketResponse(ticket=ticket_to_proto(item))

    async def CreatePrivateTable(
        self,
        request: matchmaking_pb2.CreatePrivateTableRequest,
        context: grpc.aio.ServicerContext[
            matchmaking_pb2.CreatePrivateTableRequest, matchmaking_pb2.CreatePrivateTableResponse
        ],
    ) -> matchmaking_pb2.CreatePrivateTableResponse:
        player = self.identity.player(context, request.player_id)
        wish, preset = wish_from_proto(request.wish)
        ticket = await self.service.create_private(player, wish, request.client_seed, preset, request.display_name)
        code = ticket.lobby.rsplit(".", 1)[1]
        return matchmaking_pb2.CreatePrivateTableResponse(code=code, ticket=ticket_to_proto(ticket))

    async def JoinPrivateTable(
        self,
        request: matchmaking_pb2.JoinPrivateTableRequest,
        context: grpc.aio.ServicerContext[
            matchmaking_pb2.JoinPrivateTableRequest, matchmaking_pb2.JoinPrivateTableResponse
        ],
    ) -> matchmaking_pb2.JoinPrivateTableResponse:
        player = self.identity.player(context, request.player_id)
        ticket = await self.service.join_private(player, request.code, request.client_seed, request.display_name)
        return matchmaking_pb2.JoinPrivateTableResponse(ticket=ticket_to_proto(ticket))

    async def StartPrivateTable(
        self,
        request: matchmaking_pb2.StartPrivateTableRequest,
        context: grpc.aio.ServicerContext[
            matchmaking_pb2.StartPrivateTableRequest, matchmaking_pb2.StartPrivateTableResponse
        ],
    ) -> matchmaking_pb2.StartPrivateTableResponse:
        player = self.identity.player(context, request.player_id)
        table_id = await self.service.start_private(player, request.code, request.partner)
        return matchmaking_pb2.StartPrivateTableResponse(table_id=table_id)

    async def GetPrivateTable(
        self,
        request: matchmaking_pb2.GetPrivateTableRequest,
        context: grpc.aio.ServicerContext[
            matchmaking_pb2.GetPrivateTableRequest, matchmaking_pb2.GetPrivateTableResponse
        ],
    ) -> matchmaking_pb2.GetPrivateTableResponse:
        player = self.identity.player(context, request.player_id)
        lobby = await self.service.get_private(player, request.code)
        players = [
            matchmaking_pb2.PrivateTablePlayer(
                display_name=m.display_name, host=m.player_id == lobby.host, team=private_team(lobby, i)
            )
            for i, m in enumerate(lobby.members)
        ]
        return matchmaking_pb2.GetPrivateTableResponse(players=players, closed=lobby.state != OPEN)

    async def Rematch(
        self,
        request: matchmaking_pb2.RematchRequest,
        context: grpc.aio.ServicerContext[matchmaking_pb2.RematchRequest, matchmaking_pb2.RematchResponse],
    ) -> matchmaking_pb2.RematchResponse:
        player = self.identity.player(context, request.player_id)
        ticket = await self.service.rematch(player, request.table_id, request.display_name)
        return matchmaking_pb2.RematchResponse(ticket=ticket_to_proto(ticket))


def binding(service: MatchmakingService) -> ServiceBinding:
    """How the runtime serves this API."""
    api = MatchmakingApi(service)

    def register(server: grpc.aio.Server) -> None:
        matchmaking_pb2_grpc.add_MatchmakingServiceServicer_to_server(api, server)

    return ServiceBinding(SERVICE_NAME, register)
