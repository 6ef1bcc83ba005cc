"""Competitions through the gateway (issue 43, docs/adr/0029).

Owns, apart from the gateway's other calls:
- `GrpcCompetitions`: the client of `trix.v1.CompetitionsService`; every call carries the
  caller's own player token (`x-trix-identity`, the player-role key, as to matchmaking), so the
  competitions service knows him from the token, never from a field;
- `CompetitionsGateway`: what each RPC checks and asks, and the notices: a player's
  `CompetitionNotice`s (core NATS `trix.competitions.notice.<player>`, one subscription per
  gateway) go to his interactive Session stream as `SessionResponse.competition` and to his
  WatchCompetitions streams on this gateway; a notice for nobody here is dropped;
- `CompetitionsRpcs`: the RPC methods `GatewayApi` takes in.

Nothing here is on the move path: no per-action work, no extra await of an action.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from typing import Any, Protocol

import grpc
import structlog
from nats.aio.msg import Msg

from trix.errors import InvalidArgument, NotBuilt, NotFound, Unavailable
from trix.gateway.upstream import PlayerUpstream, domain_error
from trix.gateway.validation import check_id, clean_display_name
from trix.natsio import subjects
from trix.natsio.connection import NatsConnection
from trix.runtime.identity import IDENTITY_METADATA, ROLE_PLAYER, sign
from trix.runtime.tasks import start_kept
from trix.v1 import competitions_pb2 as cpb
from trix.v1 import competitions_pb2_grpc, gateway_pb2

log = structlog.get_logger("trix.gateway")

ISSUE = 43
BOT_PREFIX = "bot-"
MAX_COMPLAINT = 1000
TABLE_READY_S = 30.0
"""How long a `seated` notice waits for its table to be created before it is dropped."""
WATCH_QUEUE = 256
"""Notices queued for one WatchCompetitions stream; a client that reads none past it loses the
oldest (it reads the competition again)."""


class CompetitionsPort(Protocol):
    async def call(self, method: str, request: Any, player_id: str) -> Any:
        """`CompetitionsService.<method>(request)` as `player_id`; raises the domain error."""
        ...


class GrpcCompetitions(PlayerUpstream):
    """`CompetitionsPort` over `trix.v1.CompetitionsService`."""

    _stub: Any = None

    @property
    def stub(self) -> Any:
        if self._stub is None:
            self._stub = competitions_pb2_grpc.CompetitionsServiceStub(self.opened())
        return self._stub

    async def call(self, method: str, request: Any, player_id: str) -> Any:
        metadata = ((IDENTITY_METADATA, sign(self.key, ROLE_PLAYER, player_id, time.time())),)
        try:
            return await getattr(self.stub, method)(request, timeout=self.timeout_s, metadata=metadata)
        except grpc.aio.AioRpcError as err:
            if err.code() == grpc.StatusCode.UNIMPLEMENTED:
                raise NotBuilt(method, ISSUE) from None
            raise domain_error(err, "competitions") from None


class CompetitionsGateway:
    """The competitions RPCs' checks and calls, and the notices to each player's streams."""

    def __init__(
        self,
        port: CompetitionsPort | None,
        live: Callable[[str], Any],
        table_ready: Callable[[str, str], Awaitable[object]] | None = None,
    ) -> None:
        self.port = port
        self.live = live
        """The player's interactive session on this gateway, or None (`GatewayService.live.get`)."""
        self.table_ready = table_ready
        """Returns once the table answers the player (NotFound before its creation)."""
        self.watchers: dict[str, set[asyncio.Queue[cpb.CompetitionNotice]]] = {}
        self.waiting: set[asyncio.Task[None]] = set()

    def _port(self) -> CompetitionsPort:
        if self.port is None:
            raise Unavailable("competitions is not reachable; retry")
        return self.port

    async def list(self, player_id: str, request: gateway_pb2.ListCompetitionsRequest) -> list[cpb.Competition]:
        if request.limit > 200:
            raise InvalidArgument("limit: at most 200")
        ask = cpb.FindCompetitionsRequest(listing=request.listing, limit=request.limit)
        reply = await self._port().call("FindCompetitions", ask, player_id)
        return list(reply.competitions)

    async def view(self, player_id: str, competition_id: str) -> gateway_pb2.ViewCompetitionResponse:
        cid = check_id(competition_id, "competition id")
        port = self._port()
        got = await port.call("GetCompetition", cpb.GetCompetitionRequest(competition_id=cid), player_id)
        competition = got.competition
        out = gateway_pb2.ViewCompetitionResponse(competition=competition, payouts=got.payouts)
        for entrant in competition.entrants:
            if entrant.player_id == player_id:
                out.me.CopyFrom(entrant)
        if competition.options.format == cpb.COMPETITION_FORMAT_POINTS:
            ask: Any = cpb.GetCompetitionStandingsRequest(competition_id=cid)
            out.standings.CopyFrom(await port.call("GetCompetitionStandings", ask, player_id))
            tables = out.standings.tables
        else:
            out.bracket.CopyFrom(await port.call("GetBracket", cpb.GetBracketRequest(competition_id=cid), player_id))
            tables = out.bracket.tables
        current = max((t.round for t in tables), default=0)
        for table in tables:
            if table.round == current and not table.ended and player_id in table.players:
                seat = list(table.players).index(player_id)
                out.seat.CopyFrom(
                    cpb.CompetitionSeat(competition_id=cid, round=table.round, table_id=table.table_id, seat=seat)
                )
        return out

    async def organise(self, player_id: str, request: gateway_pb2.OrganiseCompetitionRequest) -> cpb.Competition:
        ask = cpb.CreateCompetitionRequest(options=request.options, request_id=request.request_id[:64])
        reply = await self._port().call("CreateCompetition", ask, player_id)
        return reply.competition  # type: ignore[no-any-return]

    async def enter(self, player_id: str, display_name: str, competition_id: str, code: str) -> cpb.Entrant:
        if player_id.startswith(BOT_PREFIX):
            raise InvalidArgument("this account may not enter competitions")
        ask = cpb.RegisterEntrantRequest(
            competition_id=check_id(competition_id, "competition id"),
            code=check_id(code, "code") if code else "",
            display_name=clean_display_name(display_name),
        )
        reply = await self._port().call("RegisterEntrant", ask, player_id)
        return reply.entrant  # type: ignore[no-any-return]

    async def withdraw(self, player_id: str, competition_id: str) -> int:
        ask = cpb.LeaveCompetitionRequest(competition_id=check_id(competition_id, "competition id"))
        reply = await self._port().call("LeaveCompetition", ask, player_id)
        return int(reply.refund)

    async def complain(self, player_id: str, request: gateway_pb2.FileCompetitionComplaintRequest) -> cpb.Complaint:
        if not request.text.strip() or len(request.text) > MAX_COMPLAINT:
            raise InvalidArgument(f"text: 1 to {MAX_COMPLAINT} characters")
        ask = cpb.FileComplaintRequest(
            competition_id=check_id(request.competition_id, "competition id"),
            table_id=check_id(request.table_id, "table id"),
            text=request.text,
        )
        reply = await self._port().call("FileComplaint", ask, player_id)
        return reply.complaint  # type: ignore[no-any-return]

    async def download(self, player_id: str, competition_id: str) -> gateway_pb2.DownloadCompetitionFileResponse:
        ask = cpb.GetCompetitionFileRequest(competition_id=check_id(competition_id, "competition id"))
        reply = await self._port().call("GetCompetitionFile", ask, player_id)
        return gateway_pb2.DownloadCompetitionFileResponse(file_json=reply.file_json, digest=reply.digest)

    # -- notices ----------------------------------------------------------------------------

    def heard(self, notice: cpb.CompetitionNotice) -> None:
        """A notice from the competitions service: passed on at once, a `seated` one once its
        table exists (a round's notices come as its tables are asked for, and the table service
        creates each a moment later), so the player who resumes it at once finds it."""
        if self.live(notice.player_id) is None and notice.player_id not in self.watchers:
            return  # the player has no stream here
        if notice.HasField("seated") and self.table_ready is not None:
            start_kept(self.waiting, self._when_ready(notice))
        else:
            self.deliver(notice)

    async def _when_ready(self, notice: cpb.CompetitionNotice) -> None:
        assert self.table_ready is not None
        loop = asyncio.get_running_loop()
        deadline, delay = loop.time() + TABLE_READY_S, 0.05
        while True:
            try:
                await self.table_ready(notice.seated.table_id, notice.player_id)
                break
            except (NotFound, Unavailable) as exc:  # not created yet, or a loaded table slow to answer
                if loop.time() + delay > deadline:
                    log.warning(
                        "competition table not ready", table_id=notice.seated.table_id, error=type(exc).__name__
                    )
                    return
                await asyncio.sleep(delay)
                delay = min(delay * 2, 0.5)
            except Exception as exc:  # noqa: BLE001 - passed on anyway: the player's resume says why
                log.warning("competition table not checked", error=type(exc).__name__)
                break
        self.deliver(notice)

    def deliver(self, notice: cpb.CompetitionNotice) -> None:
        """One notice to the player's interactive session and his WatchCompetitions streams here."""
        session = self.live(notice.player_id)
        if session is not None:
            session.push(gateway_pb2.SessionResponse(competition=notice))
        for queue in self.watchers.get(notice.player_id, ()):
            if queue.full():
                queue.get_nowait()
            queue.put_nowait(notice)

    @contextlib.contextmanager
    def watching(self, player_id: str) -> Iterator[asyncio.Queue[cpb.CompetitionNotice]]:
        queue: asyncio.Queue[cpb.CompetitionNotice] = asyncio.Queue(WATCH_QUEUE)
        self.watchers.setdefault(player_id, set()).add(queue)
        try:
            yield queue
        finally:
            held = self.watchers.get(player_id, set())
            held.discard(queue)
            if not held:
                self.watchers.pop(player_id, None)


class NoticeSubscription:
    """The gateway's one subscription to every entrant's notices (`Stoppable`)."""

    def __init__(self, nats: NatsConnection, competitions: CompetitionsGateway) -> None:
        self.nats = nats
        self.competitions = competitions
        self.sub: Any = None

    async def start(self) -> NoticeSubscription:
        self.sub = await self.nats.client.subscribe(subjects.all_competition_notices(), cb=self._heard)
        return self

    async def _heard(self, msg: Msg) -> None:
        try:
            notice = cpb.CompetitionNotice.FromString(msg.data)
        except Exception:  # noqa: BLE001 - a notice that does not decode is dropped
            log.warning("competition notice dropped: it did not decode")
            return
        self.competitions.heard(notice)

    async def stop(self) -> None:
        if self.sub is not None:
            with contextlib.suppress(Exception):
                await self.sub.unsubscribe()
            self.sub = None
        for task in list(self.competitions.waiting):
            task.cancel()
        if isinstance(self.competitions.port, GrpcCompetitions):
            await self.competitions.port.close()


class CompetitionsRpcs:
    """The competitions RPCs of `trix.v1.GatewayService`, taken in by `GatewayApi` (which gives
    `_enter`, the token and the rate limit of every plain call, and `_stream_slot`)."""

    competitions: CompetitionsGateway
    _enter: Callable[..., Any]
    _stream_slot: Callable[[str], contextlib.AbstractContextManager[None]]

    async def ListCompetitions(self, request: Any, context: Any) -> gateway_pb2.ListCompetitionsResponse:
        principal, req = self._enter(request, context)
        found = await self.competitions.list(principal.player_id, req)
        return gateway_pb2.ListCompetitionsResponse(competitions=found)

    async def ViewCompetition(self, request: Any, context: Any) -> gateway_pb2.ViewCompetitionResponse:
        principal, req = self._enter(request, context)
        return await self.competitions.view(principal.player_id, req.competition_id)

    async def OrganiseCompetition(self, request: Any, context: Any) -> gateway_pb2.OrganiseCompetitionResponse:
        principal, req = self._enter(request, context)
        competition = await self.competitions.organise(principal.player_id, req)
        return gateway_pb2.OrganiseCompetitionResponse(competition=competition)

    async def EnterCompetition(self, request: Any, context: Any) -> gateway_pb2.EnterCompetitionResponse:
        principal, req = self._enter(request, context)
        entrant = await self.competitions.enter(
            principal.player_id, principal.display_name, req.competition_id, req.code
        )
        return gateway_pb2.EnterCompetitionResponse(entrant=entrant)

    async def WithdrawFromCompetition(self, request: Any, context: Any) -> gateway_pb2.WithdrawFromCompetitionResponse:
        principal, req = self._enter(request, context)
        refund = await self.competitions.withdraw(principal.player_id, req.competition_id)
        return gateway_pb2.WithdrawFromCompetitionResponse(refund=refund)

    async def FileCompetitionComplaint(
        self, request: Any, context: Any
    ) -> gateway_pb2.FileCompetitionComplaintResponse:
        principal, req = self._enter(request, context)
        complaint = await self.competitions.complain(principal.player_id, req)
        return gateway_pb2.FileCompetitionComplaintResponse(complaint=complaint)

    async def DownloadCompetitionFile(self, request: Any, context: Any) -> gateway_pb2.DownloadCompetitionFileResponse:
        principal, req = self._enter(request, context)
        return await self.competitions.download(principal.player_id, req.competition_id)

    async def WatchCompetitions(self, request: Any, context: Any) -> AsyncIterator[Any]:
        principal, _ = self._enter(request, context)
        with self._stream_slot(principal.player_id), self.competitions.watching(principal.player_id) as queue:
            while True:
                yield gateway_pb2.WatchCompetitionsResponse(notice=await queue.get())
