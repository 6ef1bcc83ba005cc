"""docs/rules.md §9 through the service: a seat's view (and a spectator's) carries the current
turn's deadline, the very one the TurnStarted event gave the timers (contract 15 s, doubling
8 s, card 12 s by default, or the table's options), plus the server's time, so a client shows
a live countdown; a restarted table service serves the same deadline (entries keep their time)."""

from __future__ import annotations

import time
from datetime import timedelta

from conftest import InProcessTable
from support.table import GatewayClient, create_request, header, read_served, token
from trix.v1 import common_pb2, events_pb2, table_pb2

PLAYERS = ("vic", "wes", "xan", "yul")
ADMIN = token("service", "admin")


async def last_turn(gateway: GatewayClient, table_id: str, seat: int) -> events_pb2.Event:
    events = await read_served(gateway.nc.jetstream(), table_id)
    return [e for e in events if e.HasField("turn_started") and seat in e.turn_started.seats][-1]


def timeout_of(event: events_pb2.Event) -> timedelta:
    return event.turn_started.deadline.ToDatetime() - event.time.ToDatetime()


async def test_seat_view_carries_the_turn_deadline_of_rule_9(
    table_service: InProcessTable, gateway: GatewayClient
) -> None:
    t = "deadline"
    options = common_pb2.TableOptions(card_timeout_ms=2500)  # a table option overrides the 12 s
    request = create_request(t, common_pb2.VARIANT_COMPLEX, PLAYERS, options=options)
    await gateway.request(t, table_pb2.TableCommand(create_table=request), ADMIN)
    expected = {
        common_pb2.DECISION_CONTRACT: timedelta(seconds=15),
        common_pb2.DECISION_DOUBLE: timedelta(seconds=8),
        common_pb2.DECISION_CARD: timedelta(milliseconds=2500),
    }
    seen: list[int] = []
    while True:
        public = await gateway.view(t, -1, ADMIN)
        seat = public.turn.seats[0]
        t0 = time.time()
        view = await gateway.view(t, seat, token("player", PLAYERS[seat]))
        t1 = time.time()
        started = await last_turn(gateway, t, seat)
        assert started.turn_started.turn_seq == view.turn.turn_seq
        # The view's deadline is the TurnStarted's (what the timers act on), for the seat and spectators.
        assert view.turn.HasField("deadline") and view.turn.deadline == started.turn_started.deadline
        assert public.turn.deadline == view.turn.deadline
        assert timeout_of(started) == expected[view.turn.decision]
        assert t0 - 0.01 <= view.server_time.ToMilliseconds() / 1000 <= t1 + 0.01
        seen.append(view.turn.decision)
        tok = token("player", PLAYERS[seat])
        h = header(t, seat, f"a{len(seen)}", view.sequence)
        if view.turn.decision == common_pb2.DECISION_CONTRACT:
            command = table_pb2.TableCommand(
                choose_contract=table_pb2.ChooseContractRequest(header=h, contract=common_pb2.CONTRACT_COMPLEX)
            )
        elif view.turn.decision == common_pb2.DECISION_DOUBLE:
            command = table_pb2.TableCommand(answer_double=table_pb2.AnswerDoubleRequest(header=h))
        else:
            break
        await gateway.request(t, command, tok)
    assert seen[0] == common_pb2.DECISION_CONTRACT and common_pb2.DECISION_DOUBLE in seen
    assert seen[-1] == common_pb2.DECISION_CARD

    # A restarted table service rebuilds the same deadline from the log (each entry keeps its time).
    before = view.turn.deadline
    await table_service.crash()
    await table_service.start()
    again = await gateway.view(t, seat, token("player", PLAYERS[seat]))
    assert again.turn.deadline == before and again.turn.turn_seq == view.turn.turn_seq
