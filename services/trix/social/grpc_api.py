"""The gRPC adapter of the social service: `trix.v1.SocialService` <-> `SocialService`.

Owns proto translation and who the caller is: a player by his own token (passed on by the
gateway), never by a request field; an operator's tool (service role, `admin`) for
ListReports only. The gateway may name the player's display name in `DISPLAY_NAME_METADATA`
(`trix.runtime.identity`); it is cleaned and judged by the word filter (`trix.social.names`)
before anyone is shown it, once per name (`SocialGraph.offer_name`). A chat line comes by NATS
instead (`trix.social.chat_requests`); SendChat here serves any other caller.
"""

from __future__ import annotations

import grpc

from trix.declarations import service_token_callers
from trix.errors import InvalidArgument, PermissionDenied
from trix.natsio.subjects import token
from trix.runtime.identity import ADMIN, DISPLAY_NAME_METADATA, Identity, Keys
from trix.runtime.server import ServiceBinding
from trix.social import friends
from trix.social.config import SERVICE
from trix.social.graph import STATES
from trix.social.service import SocialService
from trix.v1 import social_pb2 as pb
from trix.v1 import social_pb2_grpc

SERVICE_NAME = "trix.v1.SocialService"
Context = grpc.aio.ServicerContext


class SocialApi(social_pb2_grpc.SocialServiceServicer):
    def __init__(self, service: SocialService, keys: Keys) -> None:
        self.service = service
        self.graph = service.graph
        self.identity = Identity(keys, services=service_token_callers(SERVICE))

    def _player(self, context: Context[object, object]) -> str:
        caller = self.identity.caller(context)
        if caller.is_service:
            raise PermissionDenied("a player's own token is needed")
        for key, value in context.invocation_metadata() or ():
            if key == DISPLAY_NAME_METADATA and isinstance(value, bytes):
                self.graph.offer_name(caller.name, value.decode("utf-8", "replace"))
        return caller.name

    async def SendChat(self, request: pb.SendChatRequest, context: Context[object, object]) -> pb.SendChatResponse:
        player = self._player(context)
        which = request.WhichOneof("content")
        delivered, line_id = await self.service.send_chat(
            player,
            request.channel,
            request.text if which == "text" else None,
            request.phrase_id if which == "phrase_id" else None,
            request.client_line_id,
        )
        return pb.SendChatResponse(delivered=delivered, line_id=line_id)

    async def ListChatHistory(
        self, request: pb.ListChatHistoryRequest, context: Context[object, object]
    ) -> pb.ListChatHistoryResponse:
        lines, next_token = await self.service.history(
            self._player(context), request.channel, request.page_size, request.page_token
        )
        return pb.ListChatHistoryResponse(lines=lines, next_page_token=next_token)

    async def RequestFriend(
        self, request: pb.RequestFriendRequest, context: Context[object, object]
    ) -> pb.RequestFriendResponse:
        view = await self.graph.change(self._player(context), _other(request.player_id), friends.request)
        return pb.RequestFriendResponse(state=STATES[view])

    async def AnswerFriendRequest(
        self, request: pb.AnswerFriendRequestRequest, context: Context[object, object]
    ) -> pb.AnswerFriendRequestResponse:
        move = friends.accept if request.accept else friends.decline
        view = await self.graph.change(self._player(context), _other(request.player_id), move)
        return pb.AnswerFriendRequestResponse(state=STATES[view])

    async def RemoveFriend(
        self, request: pb.RemoveFriendRequest, context: Context[object, object]
    ) -> pb.RemoveFriendResponse:
        await self.graph.change(self._player(context), _other(request.player_id), friends.remove)
        return pb.RemoveFriendResponse()

    async def SetBlocked(
        self, request: pb.SetBlockedRequest, context: Context[object, object]
    ) -> pb.SetBlockedResponse:
        move = friends.block if request.blocked else friends.unblock
        await self.graph.change(self._player(context), _other(request.player_id), move)
        return pb.SetBlockedResponse()

    async def ListFriends(
        self, request: pb.ListFriendsRequest, context: Context[object, object]
    ) -> pb.ListFriendsResponse:
        if request.page_size < 0:
            raise InvalidArgument("page_size: 0 or more")
        me = self._player(context)
        found, next_token = self.graph.list_friends(me, request.page_size, request.page_token)
        muted = [] if request.page_token else self.graph.muted_by(me)  # all on the first page
        return pb.ListFriendsResponse(friends=found, next_page_token=next_token, muted_player_ids=muted)

    async def SendInvite(
        self, request: pb.SendInviteRequest, context: Context[object, object]
    ) -> pb.SendInviteResponse:
        target = token(request.target, "target")
        invite = await self.graph.invite(self._player(context), _other(request.player_id), int(request.kind), target)
        response = pb.SendInviteResponse(link=invite.link)
        response.expires_at.FromMilliseconds(invite.expires_at_ms)
        return response

    async def SetMuted(self, request: pb.SetMutedRequest, context: Context[object, object]) -> pb.SetMutedResponse:
        await self.graph.set_muted(self._player(context), _other(request.player_id), request.muted)
        return pb.SetMutedResponse()

    async def ReportLine(
        self, request: pb.ReportLineRequest, context: Context[object, object]
    ) -> pb.ReportLineResponse:
        report_id = await self.service.report(self._player(context), request.channel, request.line_id, request.reason)
        return pb.ReportLineResponse(report_id=report_id)

    async def ListReports(
        self, request: pb.ListReportsRequest, context: Context[object, object]
    ) -> pb.ListReportsResponse:
        caller = self.identity.caller(context)
        if not caller.is_service or caller.name != ADMIN:
            raise PermissionDenied("reports are for the operators (an admin credential)")
        reports, next_token = await self.service.reports(request.page_size, request.page_token)
        return pb.ListReportsResponse(reports=reports, next_page_token=next_token)


def _other(player_id: str) -> str:
    return token(player_id, "player_id")


def binding(service: SocialService, keys: Keys) -> ServiceBinding:
    api = SocialApi(service, keys)

    def register(server: grpc.aio.Server) -> None:
        social_pb2_grpc.add_SocialServiceServicer_to_server(api, server)

    return ServiceBinding(SERVICE_NAME, register)
