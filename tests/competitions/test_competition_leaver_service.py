"""A player who leaves his competition table is ranked last there and is out (docs/rules.md §10
"At a competition's table ... leaving is as at a paid table", issue 43), in a free knockout on
the real table and competitions services (real nats-server, real gRPC, the C engine).

Every table's server seed is the same here and every seed turn ends with no seed given, so
every round-1 table deals the same cards and, played by the bot, ends the same way: the seat
that goes on at the others is the seat that would have gone on at the leaver's table too. Its
player there takes his seat, and leaves at his first decision: the game ends, he is placed
last (in partnership his partner with him), and the other unit of his table goes on instead;
he (and his partner) is out and ranked after the rest of his table. No timers run here: the
test ends each seed turn with the AutoAct the timers would send."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from functools import partial
from pathlib import Path

import grpc
import pytest
from competition_support import trix_verify_competition
from competitions_service_support import Platform, admin, env, free_knockout, player

from support.nats import AuthNats
from support.table import token
from trix.runtime.identity import TOKEN_METADATA
from trix.table.__main__ import build as build_table
from trix.table.config import TableConfig
from trix.table.service import TableService
from trix.v1 import common_pb2, events_pb2, table_pb2, table_pb2_grpc
from trix.v1 import competitions_pb2 as pb

DEADLINE_S = 120.0
TABLE_SEED = bytes(range(100, 132))
"""Every table's server seed (docs/rules.md §11): the same deals at every table."""
ADMIN = ((TOKEN_METADATA, token("service", "admin")),)
TIMERS = ((TOKEN_METADATA, token("service", "timers")),)


class SameDealsPlatform(Platform):
    """The services of `Platform`, every table's server seed `TABLE_SEED`, the seed turns awaited."""

    async def start_table(self) -> None:
        config = TableConfig.from_env(env(self.nats.url("table")))
        self.table = build_table(config, partial(TableService, new_seed=lambda: TABLE_SEED))
        await self.table.start()


@pytest.fixture
async def platform(auth_nats: AuthNats, tmp_path: Path) -> AsyncIterator[SameDealsPlatform]:
    p = SameDealsPlatform(auth_nats, tmp_path / "digests")
    p.competitions_env = {"TRIX_COMPETITIONS_AWAIT_PLAYERS": "1"}  # the seed turn: he may take his seat
    await p.start()
    try:
        yield p
    finally:
        await p.stop()


async def _seat_view(
    tables: table_pb2_grpc.TableServiceStub, table_id: str, seat: int, who: str = ""
) -> table_pb2.SeatView:
    """The table's view once its MatchFormed has made it (-1: the public view)."""
    metadata = ((TOKEN_METADATA, token("player", who)),) if who else ADMIN
    loop = asyncio.get_running_loop()
    deadline = loop.time() + DEADLINE_S
    while True:
        try:
            request = table_pb2.GetSeatViewRequest(table_id=table_id, seat=seat)
            return (await tables.GetSeatView(request, metadata=metadata)).view
        except grpc.aio.AioRpcError as err:
            assert err.code() == grpc.StatusCode.NOT_FOUND and loop.time() < deadline, err
        await asyncio.sleep(0.05)


async def _end_seed_turn(tables: table_pb2_grpc.TableServiceStub, table_id: str) -> None:
    """The seed turn's AutoAct (docs/rules.md §11: no seed given contributes ""): dealt, the bot plays."""
    turn = (await _seat_view(tables, table_id, -1)).turn
    assert turn.client_seeds, turn
    await tables.AutoAct(
        table_pb2.AutoActRequest(table_id=table_id, seat=turn.seats[0], turn_seq=turn.turn_seq), metadata=TIMERS
    )


async def _bracket(p: Platform, cid: str, tables: int, ended: int) -> pb.GetBracketResponse:
    """The bracket once `tables` tables are seated and `ended` of them have ended."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + DEADLINE_S
    while True:
        bracket = await p.stub.GetBracket(pb.GetBracketRequest(competition_id=cid), metadata=admin())
        if len(bracket.tables) == tables and sum(t.ended for t in bracket.tables) == ended:
            return bracket
        assert loop.time() < deadline, bracket
        await asyncio.sleep(0.05)


async def _review(p: Platform, cid: str) -> pb.Competition:
    """The competition once its final has ended (its review period: the ranking is final)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + DEADLINE_S
    while True:
        competition = (
            await p.stub.GetCompetition(pb.GetCompetitionRequest(competition_id=cid), metadata=admin())
        ).competition
        if competition.state == pb.COMPETITION_STATE_REVIEW:
            return competition
        assert loop.time() < deadline, competition.state
        await asyncio.sleep(0.05)


@pytest.mark.parametrize(
    ("variant", "capacity"),
    [(common_pb2.VARIANT_COMPLEX, 16), (common_pb2.VARIANT_COMPLEX_PARTNERSHIP, 8)],
    ids=["singles", "partnership"],
)
async def test_a_leaver_is_ranked_last_at_his_table_and_is_out_though_his_seat_would_have_won(
    variant: int, capacity: int, platform: SameDealsPlatform
) -> None:
    partnership = variant == common_pb2.VARIANT_COMPLEX_PARTNERSHIP
    options = free_knockout(platform.clock(), capacity=capacity, rounds=2)
    options.variant = variant
    created = await platform.stub.CreateCompetition(pb.CreateCompetitionRequest(options=options), metadata=admin())
    cid = created.competition.competition_id
    for i in range(capacity):  # full: every seat a human's
        await platform.stub.RegisterEntrant(pb.RegisterEntrantRequest(competition_id=cid), metadata=player(f"e{i:02d}"))
    platform.clock.ms += 60_000  # the start time: round 1 seated, its tables made
    n = capacity // 4  # tables of round 1: four players, or two teams of two
    round_1 = (await _bracket(platform, cid, n, 0)).tables
    assert [t.round for t in round_1] == [1] * n
    assert platform.table is not None

    async with grpc.aio.insecure_channel(platform.table.address) as channel:
        tables = table_pb2_grpc.TableServiceStub(channel)
        for t in round_1[1:]:  # the other tables of round 1, played out by the bot
            await _end_seed_turn(tables, t.table_id)
        bracket = await _bracket(platform, cid, n, n - 1)

        # The leaver's table: its first table's player at the seat that goes on elsewhere.
        places = {tuple(t.places) for t in bracket.tables[1:]}
        assert len(places) == 1, places  # the same deals, the same game at every table
        (same,) = places
        first = [s for s in range(4) if same[s] == 1]
        assert len(first) == (2 if partnership else 1), same  # one unit won them all
        seat = first[0]
        table = bracket.tables[0]
        leaver = table.players[seat]
        unit = {leaver, table.players[(seat + 2) % 4]} if partnership else {leaver}
        await tables.ReclaimSeat(
            table_pb2.ReclaimSeatRequest(
                header=table_pb2.ActionHeader(table_id=table.table_id, seat=seat, action_id="mine")
            ),
            metadata=((TOKEN_METADATA, token("player", leaver)),),
        )
        await _end_seed_turn(tables, table.table_id)
        mine = await _seat_view(tables, table.table_id, seat, leaver)
        assert not mine.finished and seat in mine.turn.seats  # the game waits for his first decision
        header = table_pb2.ActionHeader(
            table_id=table.table_id, seat=seat, action_id="bye", last_seen_sequence=mine.sequence
        )
        await tables.LeaveTable(
            table_pb2.LeaveTableRequest(header=header, reason=events_pb2.LEAVE_REASON_EXPLICIT),
            metadata=((TOKEN_METADATA, token("player", leaver)),),
        )

        # Round 2 is seated from round 1's ends, without the leaver's unit; it is played out too.
        await _bracket(platform, cid, n + 1, n)
        await _end_seed_turn(tables, f"{cid}-r2-t0")

    finished = await _bracket(platform, cid, n + 1, n + 1)
    done = finished.tables
    left_at = done[0]
    assert [left_at.places[s] for s in range(4) if left_at.players[s] in unit] == [2 if partnership else 4] * len(unit)
    round_2 = set(done[-1].players)
    assert not unit & round_2  # out, his partner with him
    assert all(t.players[seat] in round_2 for t in done[1:n])  # where nobody left, that seat went on
    assert set(left_at.players) & round_2  # his table still sent a unit on: one that did not leave
    competition = await _review(platform, cid)
    states = {e.player_id: e.state for e in competition.entrants}
    assert all(states[p] == pb.ENTRANT_STATE_OUT for p in unit)
    bracket = await platform.stub.GetBracket(pb.GetBracketRequest(competition_id=cid), metadata=admin())
    ranking = [p for entry in bracket.ranking for p in entry.split("+")]
    assert len(ranking) == capacity
    table_mates = set(left_at.players) - unit
    assert all(ranking.index(p) > ranking.index(q) for p in unit for q in table_mates)  # last at his table
    # The competition file, the leaver's record in it, checks (`trix verify-competition`).
    checked = trix_verify_competition(platform.digest_dir / f"{cid}.json")
    assert checked.returncode == 0, checked.stdout + checked.stderr
