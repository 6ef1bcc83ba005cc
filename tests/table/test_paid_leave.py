"""docs/rules.md §10 and §13 through the service, with the real scoring service: a player who
leaves a paid table before its first card ends the game at once (the leaver ranked last).
Left before its first deal is dealt, the table could not start: scoring refunds every stake,
the leaver's included. Left in the first deal's contract phase (his hand seen), the stakes are
settled from the §10 places: the leaver's is not given back (issue 42). Coins are conserved
and the table settles once."""

from __future__ import annotations

import asyncio
import json
import time

import pytest

from conftest import SCORING_ADMIN, InProcessScoring, InProcessTable
from support.scoring import balances as admin_balances
from support.scoring import hold_stakes
from support.table import KEYS, CommandError, GatewayClient, create_request, header, read_served, record_of, token
from trix import engine, records
from trix.v1 import common_pb2, events_pb2, scoring_pb2, scoring_pb2_grpc, table_pb2

PLAYERS = ("ria", "sam", "tod", "uma")
ADMIN = token("service", "admin")
STAKE = 100
GRANT = 500
ADMIN_MD = (("x-trix-admin-token", SCORING_ADMIN),)


async def balances(stub: scoring_pb2_grpc.ScoringServiceStub) -> list[tuple[int, int]]:
    return await admin_balances(stub, SCORING_ADMIN, PLAYERS)


async def wait_balances(stub: scoring_pb2_grpc.ScoringServiceStub, want: list[tuple[int, int]]) -> None:
    deadline = time.monotonic() + 30
    while (have := await balances(stub)) != want:
        assert time.monotonic() < deadline, have
        await asyncio.sleep(0.1)


@pytest.mark.parametrize("await_seeds", [True, False], ids=["before_first_deal", "contract_phase"])
async def test_paid_table_left_before_first_card_ends_game_and_refunds_only_if_undealt(
    await_seeds: bool,
    table_service: InProcessTable,
    scoring: InProcessScoring,
    gateway: GatewayClient,
) -> None:
    stub = await scoring.start()
    for p in PLAYERS:
        await stub.Grant(scoring_pb2.GrantRequest(player_id=p, amount=GRANT, grant_id=f"g-{p}"), metadata=ADMIN_MD)
    t = f"paid-{int(await_seeds)}"
    request = create_request(t, common_pb2.VARIANT_COMPLEX, PLAYERS, await_seeds=await_seeds, stake=STAKE)
    request.ticket_ids.extend(await hold_stakes(stub, KEYS, PLAYERS, STAKE, t))  # the seats queued for it
    await gateway.request(t, table_pb2.TableCommand(create_table=request), ADMIN)
    # §13 "Joining debits the stake from each player's balance into the table's pot".
    await wait_balances(stub, [(GRANT - STAKE, 0)] * 4)
    view = await gateway.view(t, -1, ADMIN)
    if await_seeds:  # one seat gives its seed; the first deal still waits for the others
        seeder = view.turn.seats[0]
        seed = table_pb2.SetClientSeedRequest(
            header=header(t, seeder, "s1", view.sequence), client_seed=f"seed-{seeder}"
        )
        await gateway.request(t, table_pb2.TableCommand(set_client_seed=seed), token("player", PLAYERS[seeder]))
        view = await gateway.view(t, -1, ADMIN)
        assert view.turn.client_seeds and not view.hand_sizes[0]
    else:
        assert view.turn.decision == common_pb2.DECISION_CONTRACT
    leaver = (view.turn.seats[0] + 1) % 4  # not the seat due (it may leave anyway)
    leave = table_pb2.LeaveTableRequest(
        header=header(t, leaver, "l1", view.sequence), reason=events_pb2.LEAVE_REASON_EXPLICIT
    )
    await gateway.request(t, table_pb2.TableCommand(leave_table=leave), token("player", PLAYERS[leaver]))

    # §10: the game ends at once; the leaver is ranked last, the others among themselves by
    # the totals of finished deals (none: all 0, so they share place 1).
    end = await gateway.view(t, -1, ADMIN)
    assert end.finished and not end.turn.seats
    events = await read_served(gateway.nc.jetstream(), t)
    ended = [e.game_ended for e in events if e.HasField("game_ended")]
    assert len(ended) == 1 and ended[0].left_seat == leaver
    assert list(ended[0].ranking) == [4 if s == leaver else 1 for s in range(4)]
    record = record_of(events)
    assert record["left"] == leaver and all(not d["plays"] for d in record["deals"])
    assert len(record["deals"]) == (0 if await_seeds else 1)
    assert record["fairness"]["server_seed"]  # the game is over: the seed is revealed (§11)
    assert records.replay(json.loads(json.dumps(record)), engine.Game, engine.Options).differences == []
    # Nothing more is accepted at that table (game over, or already purged once scoring
    # archived its record, ADR 0003 §11).
    with pytest.raises(CommandError) as info:
        again = table_pb2.LeaveTableRequest(header=header(t, (leaver + 1) % 4, "l2", end.sequence), reason=1)
        await gateway.request(t, table_pb2.TableCommand(leave_table=again), token("player", PLAYERS[(leaver + 1) % 4]))
    assert info.value.kind in ("IllegalMove", "NotFound")

    if await_seeds:
        # §13 "A paid table that ends before its first deal is dealt ... gives every stake back":
        # every player, the leaver included, is back to his grant; no pot, no rake.
        await wait_balances(stub, [(GRANT, 0)] * 4)
    else:
        # §13 "Once the cards are dealt, a player who leaves is placed as §10 says ... no stake
        # is given back": the three others share the pot (the remainder to the lowest seat).
        winners = [s for s in range(4) if s != leaver]
        prize = {s: 4 * STAKE // 3 + (4 * STAKE % 3 if s == winners[0] else 0) for s in winners}
        await wait_balances(stub, [(GRANT - STAKE + prize.get(s, 0), 0) for s in range(4)])
    totals = await stub.GetWalletTotals(scoring_pb2.GetWalletTotalsRequest(), metadata=ADMIN_MD)
    assert (totals.granted, totals.available, totals.pots, totals.house) == (4 * GRANT, 4 * GRANT, 0, 0)
    assert totals.settlements == 1 and totals.running_tables == 0
