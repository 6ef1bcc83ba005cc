"""The gRPC adapter of the competitions service: `trix.v1.CompetitionsService` <->
`CompetitionsService`. Owns proto translation and who the caller is: a player by his own
token (passed on by the gateway), never by a request field; an operator's tool (service role,
`admin`) creates system competitions and answers complaints."""

from __future__ import annotations

import grpc

from trix.competitions import listing
from trix.competitions.config import SERVICE
from trix.competitions.service import SYSTEM_ORGANISER, CompetitionsService
from trix.declarations import service_token_callers
from trix.errors import PermissionDenied
from trix.natsio.subjects import token
from trix.runtime.identity import ADMIN, Identity
from trix.runtime.server import ServiceBinding
from trix.v1 import competitions_pb2 as pb
from trix.v1 import competitions_pb2_grpc

SERVICE_NAME = "trix.v1.CompetitionsService"
Context = grpc.aio.ServicerContext


class CompetitionsApi(competitions_pb2_grpc.CompetitionsServiceServicer):
    def __init__(self, service: CompetitionsService) -> None:
        self.service = service
        self.identity = Identity(service.config.keys, services=service_token_callers(SERVICE))

    def _player(self, context: Context[object, object]) -> str:
        caller = self.identity.caller(context)
        if caller.is_service:
            raise PermissionDenied("a player's own token is needed")
        return caller.name

    def _caller(self, context: Context[object, object]) -> str:
        caller = self.identity.caller(context)
        return SYSTEM_ORGANISER if caller.is_service else caller.name

    async def CreateCompetition(
        self, request: pb.CreateCompetitionRequest, context: Context[object, object]
    ) -> pb.CreateCompetitionResponse:
        competition = await self.service.create(self._caller(context), request.options, request.request_id)
        return pb.CreateCompetitionResponse(competition=competition)

    async def RegisterEntrant(
        self, request: pb.RegisterEntrantRequest, context: Context[object, object]
    ) -> pb.RegisterEntrantResponse:
        player = self._player(context)
        cid = token(request.competition_id, "competition id")
        entrant = await self.service.register(player, cid, request.code, request.display_name)
        return pb.RegisterEntrantResponse(entrant=entrant)

    async def LeaveCompetition(
        self, request: pb.LeaveCompetitionRequest, context: Context[object, object]
    ) -> pb.LeaveCompetitionResponse:
        refund = await self.service.leave(self._player(context), token(request.competition_id, "competition id"))
        return pb.LeaveCompetitionResponse(refund=refund)

    async def ApproveEntrant(
        self, request: pb.ApproveEntrantRequest, context: Context[object, object]
    ) -> pb.ApproveEntrantResponse:
        cid = token(request.competition_id, "competition id")
        entrant = await self.service.approve(self._caller(context), cid, request.player_id, request.accept)
        return pb.ApproveEntrantResponse(entrant=entrant)

    async def GetCompetition(
        self, request: pb.GetCompetitionRequest, context: Context[object, object]
    ) -> pb.GetCompetitionResponse:
        caller = self._caller(context)
        cid = token(request.competition_id, "competition id")
        return pb.GetCompetitionResponse(
            competition=self.service.get(cid, caller), payouts=listing.payouts(self.service, cid)
        )

    async def GetBracket(
        self, request: pb.GetBracketRequest, context: Context[object, object]
    ) -> pb.GetBracketResponse:
        self._caller(context)
        return self.service.bracket(token(request.competition_id, "competition id"))

    async def GetCompetitionStandings(
        self, request: pb.GetCompetitionStandingsRequest, context: Context[object, object]
    ) -> pb.GetCompetitionStandingsResponse:
        self._caller(context)
        return self.service.standings(token(request.competition_id, "competition id"))

    async def FileComplaint(
        self, request: pb.FileComplaintRequest, context: Context[object, object]
    ) -> pb.FileComplaintResponse:
        player = self._player(context)
        cid = token(request.competition_id, "competition id")
        complaint = await self.service.file_complaint(player, cid, request.table_id, request.text)
        return pb.FileComplaintResponse(complaint=complaint)

    async def AnswerComplaint(
        self, request: pb.AnswerComplaintRequest, context: Context[object, object]
    ) -> pb.AnswerComplaintResponse:
        caller = self.identity.caller(context)
        if not (caller.is_service and caller.name == ADMIN):
            raise PermissionDenied("complaints are answered by the operators only")
        cid = token(request.competition_id, "competition id")
        complaint = await self.service.answer_complaint(ADMIN, cid, request.complaint_id, request.answer)
        return pb.AnswerComplaintResponse(complaint=complaint)

    async def FindCompetitions(
        self, request: pb.FindCompetitionsRequest, context: Context[object, object]
    ) -> pb.FindCompetitionsResponse:
        self._caller(context)
        return pb.FindCompetitionsResponse(competitions=listing.find(self.service, request.listing, request.limit))

    async def GetCompetitionFile(
        self, request: pb.GetCompetitionFileRequest, context: Context[object, object]
    ) -> pb.GetCompetitionFileResponse:
        self._caller(context)
        cid = token(request.competition_id, "competition id")
        text, digest = await listing.competition_file(self.service, cid)
        return pb.GetCompetitionFileResponse(file_json=text, digest=digest)


def binding(service: CompetitionsService) -> ServiceBinding:
    api = CompetitionsApi(service)

    def register(server: grpc.aio.Server) -> None:
        competitions_pb2_grpc.add_CompetitionsServiceServicer_to_server(api, server)

    return ServiceBinding(SERVICE_NAME, register)
