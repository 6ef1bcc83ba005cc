"""docs/rules.md §13 "Joining debits the stake from each player's balance into the table's pot"
for stakes held at matchmaking: a paid table created from a match names each seat's ticket
(CreateTableRequest.ticket_ids, as MatchFormed gives them), its TableCreated carries them,
and scoring moves each ticket's held stake into the pot, so nothing stays held. Before, the
table dropped the tickets: scoring took the stake from the players' available balance a
second time and the held stakes stayed locked for good (found by `make fault-nats`'s coin
check, issue 19). Real nats-server, the table and scoring services in-process."""

from __future__ import annotations

import asyncio
import time

from conftest import SCORING_ADMIN, InProcessScoring, InProcessTable
from support.scoring import balances as admin_balances
from support.scoring import hold_stakes
from support.table import KEYS, GatewayClient, create_request, token
from trix.v1 import common_pb2, scoring_pb2, scoring_pb2_grpc, table_pb2

PLAYERS = ("via", "wes", "xan", "yul")
STAKE = 100
GRANT = 500
ADMIN_MD = (("x-trix-admin-token", SCORING_ADMIN),)


async def balances(stub: scoring_pb2_grpc.ScoringServiceStub) -> list[tuple[int, int]]:
    return await admin_balances(stub, SCORING_ADMIN, PLAYERS)


async def test_a_paid_table_from_a_match_moves_the_held_ticket_stakes_into_its_pot(
    table_service: InProcessTable, scoring: InProcessScoring, gateway: GatewayClient
) -> None:
    stub = await scoring.start()
    for p in PLAYERS:
        await stub.Grant(scoring_pb2.GrantRequest(player_id=p, amount=GRANT, grant_id=f"g-{p}"), metadata=ADMIN_MD)
    tickets = await hold_stakes(stub, KEYS, PLAYERS, STAKE, "ticket")  # what matchmaking does when they queue
    assert await balances(stub) == [(GRANT - STAKE, STAKE)] * 4

    t = "paid-from-match"
    request = create_request(t, common_pb2.VARIANT_TRIX, PLAYERS, stake=STAKE)
    request.ticket_ids.extend(tickets)  # as the table's MatchFormed consumer copies them
    await gateway.request(t, table_pb2.TableCommand(create_table=request), token("service", "table"))

    deadline = time.monotonic() + 30
    while (have := await balances(stub)) != [(GRANT - STAKE, 0)] * 4:
        assert time.monotonic() < deadline, have  # held stakes moved into the pot, not taken twice
        await asyncio.sleep(0.1)
    totals = await stub.GetWalletTotals(scoring_pb2.GetWalletTotalsRequest(), metadata=ADMIN_MD)
    assert (totals.held, totals.pots, totals.running_tables) == (0, 4 * STAKE, 1)
    assert totals.available + totals.held + totals.pots + totals.house == totals.granted == 4 * GRANT
