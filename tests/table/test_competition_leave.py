"""A leaver at a competition's table ends the game and is ranked last (docs/rules.md §10 "At a
competition's table ... leaving is as at a paid table", issue 43), through the table service's
real gRPC API (real NATS, the C engine): a free table created with `leave_ends_game` (as every
competition's MatchFormed makes it) ends at its player's leave, even after the table was rebuilt
from its log (the flag is in the stored create request), the leaver placed 4th, `left_seat` set,
and its record passes `trix verify`'s checks; without the flag a free table's leaver is replaced
by the bot and the game goes on (unchanged)."""

from __future__ import annotations

import json

import pytest
from test_competition_seat import SEATS, TIMERS, act, competition_table, md, stub_of, take, view

from conftest import InProcessTable
from support.table import GatewayClient, read_served, record_of, token
from trix import engine
from trix.runtime.identity import TOKEN_METADATA
from trix.v1 import events_pb2, table_pb2
from trix.verification import verify_record

CREATOR = ((TOKEN_METADATA, token("service", "table")),)
LEAVER = 2


@pytest.mark.parametrize("leave_ends_game", [True, False], ids=["competition", "free"])
async def test_a_leaver_at_a_competition_table_ends_the_game_ranked_last_a_free_tables_gets_a_bot(
    leave_ends_game: bool, table_service: InProcessTable, gateway: GatewayClient
) -> None:
    t = f"comp-leave-{int(leave_ends_game)}"
    request = competition_table(t)  # as a competition's MatchFormed makes it: leave_ends_game set
    request.leave_ends_game = leave_ends_game
    async with stub_of(table_service) as stub:
        await stub.CreateTable(request, metadata=CREATOR)
        start = await view(stub, t, -1)
        assert start.leave_ends_game is leave_ends_game  # what a client tells before a leave
        await stub.ReclaimSeat(take(t, LEAVER, "mine"), metadata=md(SEATS[LEAVER]))
        seed_turn = (await view(stub, t, -1)).turn.turn_seq
        await stub.AutoAct(table_pb2.AutoActRequest(table_id=t, seat=0, turn_seq=seed_turn), metadata=TIMERS)
        for k in range(3):  # he plays his first decisions himself (the bots play in between)
            await act(stub, t, LEAVER, f"a-{k}")

    await table_service.crash()  # rebuilt from its log: the create request's flag with it
    await table_service.start()
    async with stub_of(table_service) as stub:
        before = await view(stub, t, LEAVER)
        assert not before.finished and before.leave_ends_game is leave_ends_game
        header = table_pb2.ActionHeader(table_id=t, seat=LEAVER, action_id="bye", last_seen_sequence=before.sequence)
        leave = table_pb2.LeaveTableRequest(header=header, reason=events_pb2.LEAVE_REASON_EXPLICIT)
        await stub.LeaveTable(leave, metadata=md(SEATS[LEAVER]))
        after = await view(stub, t, -1)

    events = await read_served(gateway.nc.jetstream(), t)
    created = next(e.table_created for e in events if e.HasField("table_created"))
    assert created.leave_ends_game is leave_ends_game and not created.HasField("stake")
    ended = [e.game_ended for e in events if e.HasField("game_ended")]
    record = record_of(events)
    assert after.finished and not after.turn.seats and len(ended) == 1
    if not leave_ends_game:
        # §10 free table: a bot sits in for him and plays the game out (every seat is the bot's
        # now, so at once): all 8 deals of COMPLEX, nobody ranked last for leaving.
        changed = [e.seat_control_changed for e in events if e.HasField("seat_control_changed")]
        assert (changed[-1].seat, changed[-1].bot) == (LEAVER, True) and after.seats[LEAVER].bot
        assert ended[0].left_seat == -1 and record.get("left") is None and len(record["deals"]) == 8
        return
    # §10: the game ends at once, the leaver placed last; the others among themselves by the
    # totals of the deals already finished.
    assert ended[0].left_seat == LEAVER and len(record["deals"]) < 8
    ranking = list(ended[0].ranking)
    assert ranking[LEAVER] == 4 and all(place < 4 for s, place in enumerate(ranking) if s != LEAVER)
    assert record["left"] == LEAVER and record["ranking"] == ranking and record["fairness"]["server_seed"]
    report = verify_record(json.loads(json.dumps(record)), engine.Game, engine.Options)  # `trix verify`
    assert report.ok, report.lines
