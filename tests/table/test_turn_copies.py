"""A seat's own copy of TurnStarted carries its legal moves (ADR 0003 decision 15): exactly
what its view gives at that turn, so a client acts without asking for a view; the public copy
carries none (docs/rules.md §14 "its hand | yes | never (only the number of cards) | never"), and a
table rebuilt after a crash publishes the copies the crash lost again, the same, and serves
every copy as the replay makes it (issue 16). Real nats-server, the table service
in-process, the C engine."""

from __future__ import annotations

import asyncio
import contextlib
import random
from typing import Any

from conftest import InProcessTable
from support.table import GatewayClient, create_request, play_until, read_served, token
from trix.client import pick, pick_from_turn
from trix.natsio import subjects
from trix.table.table import ALL, PUBLIC_ONLY, Routed
from trix.v1 import common_pb2, events_pb2, table_pb2

PLAYERS = ("ann", "ben", "cat", "dan")
CARD, CONTRACT, DOUBLE = common_pb2.DECISION_CARD, common_pb2.DECISION_CONTRACT, common_pb2.DECISION_DOUBLE


async def _create(client: GatewayClient, table_id: str, variant: int, **kw: Any) -> None:
    request = create_request(table_id, variant, PLAYERS, **kw)
    await client.request(table_id, table_pb2.TableCommand(create_table=request), token("service", "table"))


def _without_moves(turn: events_pb2.TurnStarted) -> events_pb2.TurnStarted:
    bare = events_pb2.TurnStarted()
    bare.CopyFrom(turn)
    bare.ClearField("legal_cards")
    bare.ClearField("legal_contracts")
    return bare


async def test_a_seats_own_turn_started_carries_exactly_the_legal_moves_its_view_gives(
    table_service: InProcessTable, gateway: GatewayClient
) -> None:
    t = "moves"
    await _create(gateway, t, common_pb2.VARIANT_TRIX)
    views: list[table_pb2.SeatView] = []
    real_view = gateway.view

    async def recording(table_id: str, seat: int, tok: str) -> table_pb2.SeatView:
        view = await real_view(table_id, seat, tok)
        if seat >= 0:
            views.append(view)
        return view

    gateway.view = recording  # type: ignore[method-assign]
    # Two deals and a bit: the owner's contract turns, the doubling turn of KING or QUEENS if
    # chosen, and every card turn in between (the test client asks GetView before each move).
    await play_until(gateway, t, PLAYERS, random.Random(3), max_actions=125)
    js = gateway.nc.jetstream()
    own = {s: {e.sequence: e for e in await read_served(js, t, s)} for s in range(4)}
    public = {e.sequence: e for e in await read_served(js, t)}
    checked: dict[int, int] = {CARD: 0, CONTRACT: 0, DOUBLE: 0}
    for view in views:
        turn = view.turn
        assert view.seat in turn.seats and not turn.client_seeds
        copy = own[view.seat][turn.turn_seq]  # the seat's own copy of the turn it is viewing
        assert copy.turn_started.seat_copies and copy.turn_started.decision == turn.decision
        assert list(copy.turn_started.legal_cards) == list(view.legal_cards)
        assert list(copy.turn_started.legal_contracts) == list(view.legal_contracts)
        # Otherwise the same event as the public copy, which has no legal moves (§14).
        pub = public[turn.turn_seq].turn_started
        assert not pub.legal_cards and not pub.legal_contracts and pub.seat_copies
        assert _without_moves(copy.turn_started) == pub and copy.time == public[turn.turn_seq].time
        # A client picks from it as it would from the view (`trix.client.pick_from_turn`).
        assert pick_from_turn(copy.turn_started, random.Random(turn.turn_seq)) == pick(
            view, turn.decision, random.Random(turn.turn_seq)
        )
        checked[turn.decision] += 1
    assert checked[CONTRACT] >= 2 and checked[CARD] >= 100, checked
    assert all(
        len(c.turn_started.legal_contracts) >= 1
        for s in own.values()
        for c in s.values()
        if c.turn_started.decision == CONTRACT
    )


async def test_only_the_seats_due_get_a_copy_and_the_public_one_has_no_legal_moves(
    table_service: InProcessTable, gateway: GatewayClient
) -> None:
    t = "public"
    await _create(gateway, t, common_pb2.VARIANT_COMPLEX, await_seeds=True)
    await play_until(gateway, t, PLAYERS, random.Random(5), max_actions=70)
    js = gateway.nc.jetstream()
    public = await read_served(js, t)
    own = {s: {e.sequence: e for e in await read_served(js, t, s)} for s in range(4)}
    turns = [e for e in public if e.HasField("turn_started")]
    assert turns[0].turn_started.client_seeds
    for event in turns:
        turn = event.turn_started
        # §14: the public subject never carries a seat's legal moves.
        assert not turn.legal_cards and not turn.legal_contracts
        # docs/rules.md §11 seed turns need no copies; every decision turn has them.
        assert turn.seat_copies == (not turn.client_seeds)
        for seat in range(4):
            has = event.sequence in own[seat]
            assert has == (turn.seat_copies and seat in turn.seats), (event.sequence, seat)
            if has:
                assert seat in own[seat][event.sequence].turn_started.seats


def _reader(audience: int) -> int | None:
    """docs/rules.md §14: public copies for everyone (None), a seat's own copy for that seat."""
    return None if audience in (ALL, PUBLIC_ONLY) else audience


async def test_a_table_rebuilt_after_a_crash_republishes_the_same_turn_copies(
    table_service: InProcessTable, gateway: GatewayClient
) -> None:
    t = "republish"
    await _create(gateway, t, common_pb2.VARIANT_COMPLEX_PARTNERSHIP)
    rng = random.Random(9)
    await play_until(gateway, t, PLAYERS, rng, max_actions=40)
    service = table_service.service
    assert service is not None
    sink = service.sink
    dropped: list[Routed] = []
    reached, release = asyncio.Event(), asyncio.Event()

    async def crash_while_publishing(table_id: str, routed: list[Routed], last: Any = None) -> None:
        dropped.extend(routed)  # the log entry is stored, none of its event copies
        reached.set()
        await release.wait()  # the process dies here (no snapshot either)
        raise ConnectionError("crashed")

    sink.publish = crash_while_publishing  # type: ignore[method-assign]
    gateway.timeout_s = 2.0
    inflight = asyncio.ensure_future(play_until(gateway, t, PLAYERS, rng, max_actions=1))
    await asyncio.wait_for(reached.wait(), 20)
    turns = [r for r in dropped if r.event.HasField("turn_started") and r.audience >= 0]
    assert turns and all(r.event.turn_started.legal_cards or r.event.turn_started.legal_contracts for r in turns)
    live: dict[int | None, list[events_pb2.Event]] = {}

    async def on_msg(msg: Any) -> None:
        batch = events_pb2.TableEventBatch.FromString(msg.data)
        live.setdefault(None, []).extend(batch.events)
        for copies in batch.seats:
            live.setdefault(copies.seat, []).extend(copies.events)

    subs = [await gateway.nc.subscribe(subjects.table_feed(t), cb=on_msg)]
    await gateway.nc.flush()
    await table_service.crash()
    await table_service.start()  # recovery: the last entry's events go out again
    service = table_service.service
    assert service is not None
    table = service.tables[t]
    rebuilt = await service._rebuild(t, table.server_seed, use_snapshot=False)
    assert rebuilt is not None
    js = gateway.nc.jetstream()
    for reader in (None, 0, 1, 2, 3):
        served = await read_served(js, t, reader)
        expected = [r.event for r in rebuilt[1] if _reader(r.audience) == reader]
        assert served == expected, reader  # every copy, as the replay makes it
    deadline = asyncio.get_running_loop().time() + 20
    while asyncio.get_running_loop().time() < deadline:
        if all(r.event in live.get(_reader(r.audience), []) for r in dropped):
            break
        await asyncio.sleep(0.05)
    for r in dropped:
        assert r.event in live.get(_reader(r.audience), [])  # the copy the crash lost, identical
    for sub in subs:
        await sub.unsubscribe()
    release.set()
    with contextlib.suppress(Exception):
        await inflight  # its reply was lost with the crashed process
    await play_until(gateway, t, PLAYERS, rng, max_actions=20)  # and the game goes on
