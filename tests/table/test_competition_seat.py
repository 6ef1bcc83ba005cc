"""A competition's seat played by auto-play until its player takes it (docs/rules.md §10, issue
43), through the table service's real gRPC API (real NATS, the C engine): the seats' seeds are
awaited before the first deal (§11's seed turn), the player takes his own seat with ReclaimSeat
and plays it from its next decision on while the current turn keeps its deadline; another player
or a spectator is refused, a bot-filled seat is nobody's, and a rebuilt table (the process
crashed, the table replayed from its log) still knows whose seat it is."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import grpc
import pytest

from conftest import InProcessTable
from support.table import token
from trix.runtime.identity import TOKEN_METADATA
from trix.v1 import common_pb2, table_pb2, table_pb2_grpc

SEATS = ("p0", "bot-1", "p2", "p3")
"""Seat 1 is a bot filling an empty seat (a competition names it `bot-N`); the others are
entrants who have not come yet."""
TIMERS = (((TOKEN_METADATA, token("service", "timers"))),)


def md(player: str) -> tuple[tuple[str, str], ...]:
    return ((TOKEN_METADATA, token("player", player)),)


def competition_table(table_id: str) -> table_pb2.CreateTableRequest:
    """A competition's table as its MatchFormed makes it (`trix.competitions.protos`)."""
    return table_pb2.CreateTableRequest(
        table_id=table_id,
        variant=common_pb2.VARIANT_COMPLEX,
        seats=[
            common_pb2.Seat(index=i, player_id=p, bot=True, auto_play=not p.startswith("bot-"))
            for i, p in enumerate(SEATS)
        ],
        await_client_seeds=True,
        leave_ends_game=True,  # docs/rules.md §10: a leaver ends the game (tests/table/test_competition_leave.py)
    )


@asynccontextmanager
async def stub_of(table: InProcessTable) -> AsyncIterator[table_pb2_grpc.TableServiceStub]:
    async with grpc.aio.insecure_channel(table.address) as channel:
        yield table_pb2_grpc.TableServiceStub(channel)


async def view(stub: table_pb2_grpc.TableServiceStub, table_id: str, seat: int) -> table_pb2.SeatView:
    who = md(SEATS[seat]) if seat >= 0 else ((TOKEN_METADATA, token("service", "admin")),)
    return (await stub.GetSeatView(table_pb2.GetSeatViewRequest(table_id=table_id, seat=seat), metadata=who)).view


def take(table_id: str, seat: int, action_id: str) -> table_pb2.ReclaimSeatRequest:
    return table_pb2.ReclaimSeatRequest(
        header=table_pb2.ActionHeader(table_id=table_id, seat=seat, action_id=action_id)
    )


async def refused(call: object) -> tuple[grpc.StatusCode, str]:
    with pytest.raises(grpc.aio.AioRpcError) as info:
        await call  # type: ignore[misc]
    return info.value.code(), info.value.details() or ""


async def act(stub: table_pb2_grpc.TableServiceStub, table_id: str, seat: int, action_id: str) -> int:
    """The seat's player answers his turn (the first legal contract or card, no double)."""
    v = await view(stub, table_id, seat)
    assert list(v.turn.seats) == [seat], f"not seat {seat}'s turn: {v.turn}"
    header = table_pb2.ActionHeader(table_id=table_id, seat=seat, action_id=action_id, last_seen_sequence=v.sequence)
    if v.turn.decision == common_pb2.DECISION_CONTRACT:
        request = table_pb2.ChooseContractRequest(header=header, contract=v.legal_contracts[0])
        return (await stub.ChooseContract(request, metadata=md(SEATS[seat]))).sequence
    if v.turn.decision == common_pb2.DECISION_DOUBLE:
        answer = table_pb2.AnswerDoubleRequest(header=header)
        return (await stub.AnswerDouble(answer, metadata=md(SEATS[seat]))).sequence
    card = table_pb2.PlayCardRequest(header=header, card=v.legal_cards[0])
    return (await stub.PlayCard(card, metadata=md(SEATS[seat]))).sequence


async def test_an_entrant_takes_his_own_auto_played_seat_and_keeps_it_after_a_rebuild(
    table_service: InProcessTable,
) -> None:
    t = "comp-r1-t0"
    async with stub_of(table_service) as stub:
        await stub.CreateTable(competition_table(t), metadata=((TOKEN_METADATA, token("service", "table")),))
        start = await view(stub, t, -1)
        # §11: nothing is dealt before the seats' seeds (the bot's is given): the players may come.
        assert start.turn.client_seeds and list(start.turn.seats) == [0, 2, 3]
        assert [s.bot for s in start.seats] == [True] * 4 and [s.auto_play for s in start.seats] == [
            True,
            False,
            True,
            True,
        ]

        # Only the seat's own player takes it: another entrant, a spectator and anyone at the
        # bot's seat are refused, the table unchanged.
        code, details = await refused(stub.ReclaimSeat(take(t, 0, "x1"), metadata=md("p2")))
        assert (code, details) == (grpc.StatusCode.PERMISSION_DENIED, "this seat is not yours")
        code, details = await refused(stub.ReclaimSeat(take(t, 0, "x2"), metadata=md("watcher")))
        assert (code, details) == (grpc.StatusCode.PERMISSION_DENIED, "this seat is not yours")
        code, details = await refused(stub.ReclaimSeat(take(t, 1, "x3"), metadata=md("p0")))
        assert (code, details) == (grpc.StatusCode.PERMISSION_DENIED, "this seat is not yours")
        code, details = await refused(stub.ReclaimSeat(take(t, 1, "x4"), metadata=md("bot-1")))
        assert (code, details) == (grpc.StatusCode.PERMISSION_DENIED, "a bot's seat is never taken over")
        assert (await view(stub, t, -1)).sequence == start.sequence

        # p0 takes his seat: a SeatControlChanged, and the seed turn goes on with its deadline.
        taken = await stub.ReclaimSeat(take(t, 0, "mine"), metadata=md("p0"))
        after = await view(stub, t, -1)
        assert taken.sequence == start.sequence + 1 == after.sequence
        assert not after.seats[0].bot and after.seats[2].bot and after.seats[1].bot
        assert after.turn.turn_seq == start.turn.turn_seq and after.turn.deadline == start.turn.deadline
        again = await refused(stub.ReclaimSeat(take(t, 0, "again"), metadata=md("p0")))
        assert again == (grpc.StatusCode.FAILED_PRECONDITION, "the seat is already played by its player")

        # The seed turn runs out (the timers' AutoAct): dealt, the auto-played seats are the
        # bot's at once, and the game waits for p0 at his every decision.
        await stub.AutoAct(table_pb2.AutoActRequest(table_id=t, seat=2, turn_seq=after.turn.turn_seq), metadata=TIMERS)
        for k in range(3):
            await act(stub, t, 0, f"p0-{k}")
        playing = await view(stub, t, 0)
        assert list(playing.turn.seats) == [0] and not playing.finished and len(playing.hand) > 0

    # The process dies; the table is rebuilt from its log: the seat is still p0's.
    await table_service.crash()
    await table_service.start()
    async with stub_of(table_service) as stub:
        rebuilt = await view(stub, t, 0)
        assert rebuilt.sequence == playing.sequence and not rebuilt.seats[0].bot
        assert list(rebuilt.turn.seats) == [0]
        await act(stub, t, 0, "p0-after")
        # Another entrant comes mid-game: his seat is his from its next decision on.
        await stub.ReclaimSeat(take(t, 2, "p2-mine"), metadata=md("p2"))
        assert not (await view(stub, t, -1)).seats[2].bot
        code, _ = await refused(stub.ReclaimSeat(take(t, 1, "x5"), metadata=md("bot-1")))
        assert code == grpc.StatusCode.PERMISSION_DENIED
