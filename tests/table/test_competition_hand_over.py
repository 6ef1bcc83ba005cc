"""A competition's seat handed to auto-play by its player and taken back (docs/rules.md §10,
issue 43: the web table's "let the bot play"), through the table service's real gRPC API (real
NATS, the C engine): HandOverSeat at his turn lets the bot answer it at once, at another's turn
keeps that turn's deadline; only the seat's player hands it over, only a competition's seat, not
twice; ReclaimSeat takes it back and the game waits for him again; a rebuilt table replays both."""

from __future__ import annotations

import grpc
from test_competition_seat import TIMERS, act, competition_table, md, refused, stub_of, take, view

from conftest import InProcessTable
from support.table import token
from trix.runtime.identity import TOKEN_METADATA
from trix.v1 import table_pb2, table_pb2_grpc


def hand_over(table_id: str, seat: int, action_id: str) -> table_pb2.HandOverSeatRequest:
    return table_pb2.HandOverSeatRequest(
        header=table_pb2.ActionHeader(table_id=table_id, seat=seat, action_id=action_id)
    )


async def _two_players_came(stub: table_pb2_grpc.TableServiceStub, t: str) -> table_pb2.SeatView:
    """The competition's table, p0 and p2 in their seats (taken), the seed turn still on."""
    await stub.CreateTable(competition_table(t), metadata=((TOKEN_METADATA, token("service", "table")),))
    for seat in (0, 2):
        await stub.ReclaimSeat(take(t, seat, f"p{seat}-mine"), metadata=md(f"p{seat}"))
    return await view(stub, t, -1)


async def test_a_player_hands_his_competition_seat_to_auto_play_and_takes_it_back(
    table_service: InProcessTable,
) -> None:
    t = "comp-r1-t1"
    async with stub_of(table_service) as stub:
        seeds = await _two_players_came(stub, t)
        await stub.AutoAct(table_pb2.AutoActRequest(table_id=t, seat=3, turn_seq=seeds.turn.turn_seq), metadata=TIMERS)
        # Dealt: the game waits for p0 or p2 only (the others are the bot's).
        while list((v := await view(stub, t, -1)).turn.seats) != [0]:
            await act(stub, t, int(v.turn.seats[0]), f"p2-{v.sequence}")

        # Refused: another's seat, a bot-filled seat (not a competition entrant's), the table unchanged.
        code, details = await refused(stub.HandOverSeat(hand_over(t, 0, "x1"), metadata=md("p2")))
        assert (code, details) == (grpc.StatusCode.PERMISSION_DENIED, "this seat is not yours")
        code, details = await refused(stub.HandOverSeat(hand_over(t, 1, "x2"), metadata=md("bot-1")))
        assert (code, details) == (
            grpc.StatusCode.PERMISSION_DENIED,
            "only a competition's seat is handed to auto-play",
        )
        assert (await view(stub, t, -1)).sequence == v.sequence

        # At his turn: the bot answers it at once and plays on for him until p2 is to act.
        await stub.HandOverSeat(hand_over(t, 0, "p0-bot"), metadata=md("p0"))
        handed = await view(stub, t, -1)
        assert handed.seats[0].bot and handed.seats[0].auto_play and not handed.seats[2].bot
        assert list(handed.turn.seats) == [2] and handed.sequence > v.sequence + 1
        again = await refused(stub.HandOverSeat(hand_over(t, 0, "p0-bot-again"), metadata=md("p0")))
        assert again == (grpc.StatusCode.FAILED_PRECONDITION, "the seat is already played by the bot")

    # Rebuilt from the log: still the bot's; he takes it back at p2's turn, which keeps its deadline.
    await table_service.crash()
    await table_service.start()
    async with stub_of(table_service) as stub:
        rebuilt = await view(stub, t, -1)
        assert rebuilt.sequence == handed.sequence and rebuilt.seats[0].bot
        await stub.ReclaimSeat(take(t, 0, "p0-back"), metadata=md("p0"))
        back = await view(stub, t, -1)
        assert not back.seats[0].bot and back.turn.turn_seq == rebuilt.turn.turn_seq
        assert back.turn.deadline == rebuilt.turn.deadline
        # Handed over again at p2's turn: that turn and its deadline stay (no new TurnStarted).
        await stub.HandOverSeat(hand_over(t, 0, "p0-bot-2"), metadata=md("p0"))
        kept = await view(stub, t, -1)
        assert kept.seats[0].bot and kept.sequence == back.sequence + 1
        assert kept.turn.turn_seq == back.turn.turn_seq and kept.turn.deadline == back.turn.deadline
        await stub.ReclaimSeat(take(t, 0, "p0-back-2"), metadata=md("p0"))
        # His again: the game waits for him at his next decision (p2 plays on till then).
        while list((v := await view(stub, t, -1)).turn.seats) != [0]:
            await act(stub, t, 2, f"p2-{v.sequence}")
        assert not v.finished and not v.seats[0].bot
