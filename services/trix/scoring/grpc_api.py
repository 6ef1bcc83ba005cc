"""The gRPC adapter of the scoring service: `trix.v1.ScoringService` <-> `ScoringService`.

Owns proto <-> domain translation only, reading the admin credential from the
`x-trix-admin-token` metadata (never from the request message, so it is not logged), and
checking that a stake call (HoldStake, ReleaseStake) or a wallet read (GetBalance,
ListLedger; or the admin credential) carries an internal identity token
(`x-trix-identity`, `trix.runtime.identity`): the player's own (player-role key) or
matchmaking's service token (service-role key, which the gateway never holds): a player
id is never taken from a request field alone (docs/architecture.md). A private table's standings,
record and history rows are read only with a token of one of its players (or the admin
credential). A competition's escrow (PostCompetitionEntry, GetCompetitionAccount; docs/adr/0030)
is the competitions service's token's only scope (`SCOPES`), a fee posted only with the
player's own token along.
"""

from __future__ import annotations

from typing import Any, cast

import grpc
from google.protobuf.timestamp_pb2 import Timestamp

from trix.declarations import service_token_callers
from trix.errors import InvalidArgument, PermissionDenied
from trix.rules import DEALS_PER_GAME
from trix.runtime.identity import Identity, metadata_token
from trix.runtime.server import ServiceBinding
from trix.scoring import escrow
from trix.scoring.service import ScoringService
from trix.scoring.state import ALL_VIEWERS, EscrowEntry, Posting, SeatName
from trix.v1 import common_pb2, scoring_pb2, scoring_pb2_grpc

SERVICE_NAME = "trix.v1.ScoringService"
ADMIN_TOKEN_HEADER = "x-trix-admin-token"
STAKES, ESCROW = "stakes", "escrow"
SCOPES = {"matchmaking": STAKES, "competitions": ESCROW}
"""What each calling service's token may do here: matchmaking holds and releases stakes and reads
wallets for players; the competitions service posts to its competitions' escrows (docs/adr/0030).
Neither may do the other's, nor Grant (the admin credential's)."""
_KINDS = {
    scoring_pb2.COMPETITION_ENTRY_KIND_FEE: escrow.FEE,
    scoring_pb2.COMPETITION_ENTRY_KIND_REFUND: escrow.REFUND,
    scoring_pb2.COMPETITION_ENTRY_KIND_PRIZE: escrow.PRIZE,
    scoring_pb2.COMPETITION_ENTRY_KIND_HOUSE: escrow.HOUSE_SHARE,
}
_KIND_VALUES = {name: value for value, name in _KINDS.items()}


def _callers(scope: str) -> tuple[str, ...]:
    return tuple(s for s in service_token_callers("scoring") if SCOPES.get(s) == scope)


Context = grpc.aio.ServicerContext[Any, Any]


def _admin_credential(context: Context) -> str | None:
    for key, value in context.invocation_metadata() or ():
        if key == ADMIN_TOKEN_HEADER and isinstance(value, str):
            return value
    return None


def _timestamp(time_ms: int) -> Timestamp:
    stamp = Timestamp()
    stamp.FromMilliseconds(time_ms)
    return stamp


def _variant_name(value: int, *, required: bool) -> str | None:
    if value == common_pb2.VARIANT_UNSPECIFIED or value not in common_pb2.Variant.values():
        if required:
            raise InvalidArgument("variant is required")
        return None
    return common_pb2.Variant.Name(cast(common_pb2.Variant.ValueType, value)).removeprefix("VARIANT_")


def _variant_value(name: str) -> common_pb2.Variant.ValueType:
    full = f"VARIANT_{name}"
    return common_pb2.Variant.Value(full) if full in common_pb2.Variant.keys() else common_pb2.VARIANT_UNSPECIFIED  # noqa: SIM118


def _seats(seats: tuple[SeatName, ...]) -> list[common_pb2.Seat]:
    """The seats as the table announced them (a bot seat with its own name, `bot` true)."""
    return [
        common_pb2.Seat(index=i, player_id=s.player_id, bot=s.bot, display_name=s.name) for i, s in enumerate(seats)
    ]


def _balance(pair: tuple[int, int]) -> scoring_pb2.GetBalanceResponse:
    return scoring_pb2.GetBalanceResponse(available=pair[0], held=pair[1])


def _escrow_entry(e: EscrowEntry) -> scoring_pb2.CompetitionEntry:
    return scoring_pb2.CompetitionEntry(
        key=e.key, kind=_KIND_VALUES[e.kind], player_id=e.player_id, coins=e.coins, time=_timestamp(e.time_ms)
    )


def _posting(p: Posting) -> scoring_pb2.Posting:
    return scoring_pb2.Posting(
        posting_id=p.posting_id,
        debit_account=p.debit,
        credit_account=p.credit,
        amount=p.amount,
        reason=p.reason,
        table_id=p.table_id,
        time=_timestamp(p.time_ms),
    )


class ScoringApi(scoring_pb2_grpc.ScoringServiceServicer):
    """`trix.v1.ScoringService` over `ScoringService`."""

    def __init__(self, service: ScoringService) -> None:
        self.service = service
        self.identity = Identity(service.config.keys, services=_callers(STAKES))
        """Stake calls: a player's own token, or matchmaking's service token acting for one."""
        self.escrow_identity = Identity(service.config.keys, services=_callers(ESCROW))
        """Competition escrows: the competitions service's token (a fee with the player's too)."""

    def _viewer(self, context: Context) -> str:
        """Who reads standings, a record or a history: everyone's with the admin credential
        (ALL_VIEWERS), the player of a player token (the gateway signs one for its caller), else
        "" (anyone: public tables only)."""
        credential = _admin_credential(context)
        if credential is not None:
            self.service._check_admin(credential)
            return ALL_VIEWERS
        if not metadata_token(context):
            return ""
        caller = self.identity.caller(context)
        return "" if caller.is_service else caller.name

    async def GetStandings(
        self, request: scoring_pb2.GetStandingsRequest, context: Context
    ) -> scoring_pb2.GetStandingsResponse:
        view = self.service.standings(request.table_id, self._viewer(context))
        return scoring_pb2.GetStandingsResponse(
            table_id=view.table_id,
            deals=[common_pb2.SeatScores(values=d.points) for d in view.deals],
            totals=common_pb2.SeatScores(values=view.totals),
            team_totals=view.team_totals(),
            sequence=view.sequence,
        )

    async def ListHistory(
        self, request: scoring_pb2.ListHistoryRequest, context: Context
    ) -> scoring_pb2.ListHistoryResponse:
        viewer = self._viewer(context)
        games, token = self.service.history(request.player_id, request.page_size, request.page_token, viewer)
        return scoring_pb2.ListHistoryResponse(
            games=[
                scoring_pb2.GameSummary(
                    table_id=g.table_id,
                    variant=_variant_value(g.variant),
                    seat=g.seat,
                    place=g.place,
                    totals=common_pb2.SeatScores(values=list(g.totals)),
                    ended_at=_timestamp(g.ended_ms),
                    seats=_seats(g.seats),
                )
                for g in games
            ],
            next_page_token=token,
        )

    async def ListLiveTables(
        self, request: scoring_pb2.ListLiveTablesRequest, context: Context
    ) -> scoring_pb2.ListLiveTablesResponse:
        variant = _variant_name(request.variant, required=False)
        views, token = self.service.live_tables(variant, request.page_size, request.page_token)
        return scoring_pb2.ListLiveTablesResponse(
            tables=[
                scoring_pb2.PublicTable(
                    table_id=v.table_id,
                    variant=_variant_value(v.variant),
                    seats=_seats(v.seats()),
                    deal_number=len(v.deals) + 1,
                    deals_total=DEALS_PER_GAME.get(v.variant, 0),
                    totals=common_pb2.SeatScores(values=v.totals),
                    started_at=_timestamp(v.created_ms),
                )
                for v in views
            ],
            next_page_token=token,
        )

    async def GetGameRecord(
        self, request: scoring_pb2.GetGameRecordRequest, context: Context
    ) -> scoring_pb2.GetGameRecordResponse:
        record = self.service.game_record(request.table_id, self._viewer(context))
        return scoring_pb2.GetGameRecordResponse(record_json=record)

    async def GetLeaderboard(
        self, request: scoring_pb2.GetLeaderboardRequest, context: Context
    ) -> scoring_pb2.GetLeaderboardResponse:
        variant = _variant_name(request.variant, required=True)
        assert variant is not None
        rows, token = self.service.leaderboard(variant, request.page_size, request.page_token, request.around_player_id)
        return scoring_pb2.GetLeaderboardResponse(
            entries=[
                scoring_pb2.LeaderboardEntry(
                    rank=rank,
                    player_id=player,
                    rating=rating,
                    games=games,
                    display_name=self.service.state.names.get(player, ""),
                )
                for rank, player, rating, games in rows
            ],
            next_page_token=token,
        )

    async def GetPlayerStats(
        self, request: scoring_pb2.GetPlayerStatsRequest, context: Context
    ) -> scoring_pb2.GetPlayerStatsResponse:
        stats = self.service.player_stats(request.player_id, _variant_name(request.variant, required=False))
        return scoring_pb2.GetPlayerStatsResponse(
            games=stats.games,
            wins=stats.wins,
            average_points=stats.points / stats.games if stats.games else 0.0,
            contract_averages={
                name: stats.contract_points[name] / count for name, count in stats.contract_deals.items() if count
            },
            doubled_card_losses=stats.doubled_card_losses,
        )

    def _owner_or_admin(self, context: Context, player_id: str) -> None:
        """A player's wallet is read by that player (their token, through the gateway),
        matchmaking (its service token) or an operator (the admin credential)."""
        credential = _admin_credential(context)
        if credential is not None:
            self.service._check_admin(credential)
            return
        self.identity.player(context, player_id)

    async def GetBalance(
        self, request: scoring_pb2.GetBalanceRequest, context: Context
    ) -> scoring_pb2.GetBalanceResponse:
        self._owner_or_admin(context, request.player_id)
        return _balance(self.service.balance(request.player_id))

    async def ListLedger(
        self, request: scoring_pb2.ListLedgerRequest, context: Context
    ) -> scoring_pb2.ListLedgerResponse:
        self._owner_or_admin(context, request.player_id)
        postings, token = self.service.ledger(request.player_id, request.page_size, request.page_token)
        return scoring_pb2.ListLedgerResponse(postings=[_posting(p) for p in postings], next_page_token=token)

    async def Grant(self, request: scoring_pb2.GrantRequest, context: Context) -> scoring_pb2.GrantResponse:
        pair = await self.service.grant(request.player_id, request.amount, request.grant_id, _admin_credential(context))
        return scoring_pb2.GrantResponse(balance=_balance(pair))

    async def HoldStake(self, request: scoring_pb2.HoldStakeRequest, context: Context) -> scoring_pb2.HoldStakeResponse:
        self.identity.requested_by(context, request.player_id)
        pair = await self.service.hold_stake(request.player_id, request.ticket_id, request.amount)
        return scoring_pb2.HoldStakeResponse(balance=_balance(pair))

    async def ReleaseStake(
        self, request: scoring_pb2.ReleaseStakeRequest, context: Context
    ) -> scoring_pb2.ReleaseStakeResponse:
        self.identity.player(context, request.player_id)
        pair = await self.service.release_stake(request.player_id, request.ticket_id)
        return scoring_pb2.ReleaseStakeResponse(balance=_balance(pair))

    def _escrow_service(self, context: Context) -> None:
        if not self.escrow_identity.caller(context).is_service:
            raise PermissionDenied("only the competitions service posts competition entries")

    async def PostCompetitionEntry(
        self, request: scoring_pb2.PostCompetitionEntryRequest, context: Context
    ) -> scoring_pb2.PostCompetitionEntryResponse:
        self._escrow_service(context)
        e = request.entry
        kind = _KINDS.get(e.kind)
        if kind is None:
            raise InvalidArgument("entry.kind is required")
        if kind == escrow.FEE:  # a fee is taken only on the player's own signed-in request
            self.escrow_identity.requested_by(context, e.player_id)
        entry = EscrowEntry(request.competition_id, e.key, kind, e.player_id, e.coins)
        posted, duplicate = await self.service.post_competition_entry(entry)
        return scoring_pb2.PostCompetitionEntryResponse(entry=_escrow_entry(posted), duplicate=duplicate)

    async def GetCompetitionAccount(
        self, request: scoring_pb2.GetCompetitionAccountRequest, context: Context
    ) -> scoring_pb2.GetCompetitionAccountResponse:
        credential = _admin_credential(context)
        if credential is not None:
            self.service._check_admin(credential)
        else:
            self._escrow_service(context)
        entries, totals = self.service.competition_account(request.competition_id)
        return scoring_pb2.GetCompetitionAccountResponse(
            entries=[_escrow_entry(e) for e in entries],
            fees=totals[escrow.FEE],
            refunds=totals[escrow.REFUND],
            prizes=totals[escrow.PRIZE],
            house=totals[escrow.HOUSE_SHARE],
            escrow=totals["escrow"],
        )

    async def GetWalletTotals(
        self, request: scoring_pb2.GetWalletTotalsRequest, context: Context
    ) -> scoring_pb2.GetWalletTotalsResponse:
        return scoring_pb2.GetWalletTotalsResponse(**self.service.wallet_totals(_admin_credential(context)))


def binding(service: ScoringService) -> ServiceBinding:
    """How the runtime serves this API."""
    api = ScoringApi(service)

    def register(server: grpc.aio.Server) -> None:
        scoring_pb2_grpc.add_ScoringServiceServicer_to_server(api, server)

    return ServiceBinding(SERVICE_NAME, register)
