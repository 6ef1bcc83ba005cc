"""Issue 18, the §14 leak check through the gateway (docs/rules.md §14): a live game on
`trix up` (its real services on its nats-server with the generated permissions, its real
gateway, the Envoy edge in front of it), played by four clients through the edge and watched
by a spectator through the edge too. Every message each of them received, as it came (single
events, EventBatch messages, views, tickets, acceptances, errors), is checked against the
finished record by the one leak checker (tests/support/leakcheck.py; test_leak_checker.py shows
it fails on a leaky message): no card of another seat's hand, no legal move of another seat, no
byte of the server seed before the end. The number of leaks is 0."""

from __future__ import annotations

import asyncio
import json
import random
import secrets
import time
from typing import Any

import grpc
from security_support import Backend, report

from support.leakcheck import check_gateway_stream
from trix.client import GatewayClient, SeatState, new_action, pick, pick_from_turn
from trix.v1 import common_pb2, gateway_pb2, matchmaking_pb2

GAME_TIMEOUT_S = 240.0
NO_LEAK = "0 leaks"


class SeatedPlayer:
    """One player through the edge: a Session (EventBatch messages, as the apps take them),
    every response kept as it came, a quick legal move on each of its turns (from its own
    TurnStarted copy, else a view), asked again if an answer got lost or rate-limited."""

    def __init__(self, target: str, index: int, matched: asyncio.Future[str]) -> None:
        self.client = GatewayClient(target)
        self.index = index
        self.rng = random.Random(1800 + index)
        self.state = SeatState()
        self.received: list[gateway_pb2.SessionResponse] = []
        self.matched = matched
        self.acted = 0
        self.acted_at = 0.0

    async def play(self) -> None:
        await self.client.sign_in(f"leak-check-{self.index}-{secrets.token_hex(8)}", f"seat{self.index}")
        stream = self.client.open(flatten=False)
        wish = matchmaking_pb2.GameWish(variant=common_pb2.VARIANT_TRIX)
        self.client.send(gateway_pb2.SessionRequest(find_match=gateway_pb2.FindMatchRequest(wish=wish)))
        nudge = asyncio.ensure_future(self._nudge())
        try:
            async for m in stream:
                self.received.append(m)
                if self._take(m):
                    return
        finally:
            nudge.cancel()
            await self.client.close()

    def _take(self, m: gateway_pb2.SessionResponse) -> bool:
        """Handle one response; True at the game's end."""
        st = self.state
        kind = m.WhichOneof("kind")
        if kind == "ticket" and m.ticket.state == matchmaking_pb2.TICKET_STATE_MATCHED:
            st.table_id, st.seat = m.ticket.table_id, m.ticket.seat
            if not self.matched.done():
                self.matched.set_result(st.table_id)
        elif kind in ("event", "event_batch"):
            for event in [m.event] if kind == "event" else m.event_batch.events:
                st.apply(event)
                if event.HasField("game_ended"):
                    return True
                if event.HasField("turn_started"):
                    self._on_turn()
        elif kind == "snapshot":
            st.view = m.snapshot
            st.sequence = max(st.sequence, m.snapshot.sequence)
            turn = m.snapshot.turn
            if st.seat in turn.seats and not m.snapshot.finished and turn.turn_seq != self.acted:
                st.turn = turn
                self._answer(pick(m.snapshot, turn.decision, self.rng))
        elif kind == "error" and st.my_turn():
            self.acted = 0
            pause = 0.5 if m.error.code == "RESOURCE_EXHAUSTED" else 0.05
            asyncio.get_running_loop().call_later(pause, self._view)
        return False

    def _on_turn(self) -> None:
        st = self.state
        if not st.my_turn() or st.turn is None or st.turn.turn_seq == self.acted:
            return
        if st.turn.client_seeds:  # docs/rules.md §11: a seed before the first deal
            action = gateway_pb2.Action(client_seed=f"leak-check-{self.index}")
            self._answer(action)
            return
        choice = pick_from_turn(st.turn, self.rng)  # its own copy carries its legal moves
        if choice is None:
            self._view()
        else:
            self._answer(choice)

    def _answer(self, choice: gateway_pb2.Action | None) -> None:
        st = self.state
        if choice is None or st.turn is None:
            return
        self.acted, self.acted_at = st.turn.turn_seq, time.monotonic()
        action = new_action(st)
        action.MergeFrom(choice)
        self.client.send(gateway_pb2.SessionRequest(action=action))

    def _view(self) -> None:
        if self.state.table_id:
            self.client.send(gateway_pb2.SessionRequest(view=gateway_pb2.GetViewRequest(table_id=self.state.table_id)))

    async def _nudge(self) -> None:
        while True:
            await asyncio.sleep(1.0)
            st = self.state
            lost = st.turn is not None and (st.turn.turn_seq != self.acted or time.monotonic() - self.acted_at > 3.0)
            if st.my_turn() and lost:
                self.acted = 0
                self._view()


async def _spectate(target: str, table: asyncio.Future[str]) -> list[gateway_pb2.SessionResponse]:
    """A spectator through the edge: everything Spectate streams of the table, from its start."""
    client = GatewayClient(target)
    try:
        await client.sign_in(f"leak-check-spectator-{secrets.token_hex(8)}", "spectator")
        watch = gateway_pb2.SpectateRequest(table_id=await table)
        deadline = time.monotonic() + 30.0
        while True:
            call: Any = client.stub.Spectate(watch, metadata=client.metadata)
            try:
                return [gateway_pb2.SessionResponse(event=r.event) async for r in call]
            except grpc.aio.AioRpcError as err:
                # The ticket is matched a moment before the table exists (it is created from
                # the MatchFormed): NOT_FOUND until then, before any event.
                if err.code() != grpc.StatusCode.NOT_FOUND or time.monotonic() > deadline:
                    raise
            await asyncio.sleep(0.1)
    finally:
        await client.close()


async def test_a_live_game_leaks_nothing_to_its_seated_players_or_a_spectator_through_the_edge(
    up_platform: Backend,
) -> None:
    matched: asyncio.Future[str] = asyncio.get_running_loop().create_future()
    players = [SeatedPlayer(up_platform.edge, i, matched) for i in range(4)]
    try:
        played = asyncio.gather(*(p.play() for p in players), _spectate(up_platform.edge, matched))
        *_, spectated = await asyncio.wait_for(played, GAME_TIMEOUT_S)
    except grpc.aio.AioRpcError as err:
        raise AssertionError(f"the game through the edge failed: {err.code().name}: {err.details()}") from None
    states = [p.state for p in players]
    assert all(s.ended for s in states) and len({s.table_id for s in states}) == 1, "one table, played to its end"
    assert states[0].record_json, "the GameEnded carries the record"
    record = json.loads(states[0].record_json)
    simultaneous = record["options"]["doubling_reveal"] == "SIMULTANEOUS"
    seated_leaks: list[str] = []
    checked = 0
    for player in players:
        seat = player.state.seat
        where = f"seat {seat} (Session, edge)"
        checked += _check(player.received, record, seat, simultaneous, where, seated_leaks)
    outcome = f"LEAKED: {seated_leaks[0]}" if seated_leaks else NO_LEAK
    report(up_platform, f"§14: another seat's cards or the seed, 4 seats ({checked} msgs)", "player", outcome, NO_LEAK)
    spectator_leaks: list[str] = []
    seen = _check(spectated, record, None, simultaneous, "spectator (Spectate, edge)", spectator_leaks)
    outcome = f"LEAKED: {spectator_leaks[0]}" if spectator_leaks else NO_LEAK
    report(up_platform, f"§14: a hand or the seed, a spectator ({seen} msgs)", "player", outcome, NO_LEAK)
    assert not seated_leaks and not spectator_leaks, seated_leaks + spectator_leaks
    assert seen > 100 and checked > 400, (seen, checked)


def _check(
    received: list[gateway_pb2.SessionResponse],
    record: dict[str, Any],
    seat: int | None,
    simultaneous: bool,
    where: str,
    leaks: list[str],
) -> int:
    """The messages checked; the first leak of the stream, if any, added to `leaks`."""
    try:
        return check_gateway_stream(received, record, seat=seat, simultaneous=simultaneous, where=where)
    except AssertionError as err:
        leaks.append(str(err).splitlines()[0])
        return len(received)
