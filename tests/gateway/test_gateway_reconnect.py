"""Reconnect and resume through whole games: a player's Session is cut at random points
(fixed seeds), sometimes right after it sent an action, and reopened with
`resume{table_id, after_sequence}`. Throughout, the seat's event sequence has no gap and
no duplicate across every cut, and the client's state rebuilt from those events alone
equals the authoritative view (a fresh `view` from the table) after every resume and at
every turn where the table is waiting for this player."""

from __future__ import annotations

import asyncio
import os
import random
import signal
import time
from dataclasses import dataclass, field
from typing import Any

import pytest
from gateway_support import Platform, signed_in

from trix.client import GatewayClient, pick
from trix.v1 import common_pb2, events_pb2, gateway_pb2, matchmaking_pb2, table_pb2

pytestmark = pytest.mark.timeout(240)

STEP_S = 30.0
"""The longest a client waits for its next message (timers answer a lost turn within ~15 s)."""


@dataclass
class Rebuilt:
    """A seat's state rebuilt from its events only."""

    seat: int
    sequence: int = 0
    hand: set[int] = field(default_factory=set)
    hand_sizes: list[int] = field(default_factory=lambda: [0, 0, 0, 0])
    deal_index: int = 0
    kingdom: int = 0
    contract: int = 0
    trick: list[int] = field(default_factory=list)
    layout: set[int] = field(default_factory=set)
    totals: list[int] = field(default_factory=lambda: [0, 0, 0, 0])
    turn: events_pb2.TurnStarted | None = None
    finished: bool = False
    gaps: list[tuple[int, int]] = field(default_factory=list)

    def apply(self, event: events_pb2.Event) -> None:
        if event.sequence != self.sequence + 1:
            self.gaps.append((self.sequence, event.sequence))  # a gap or a duplicate
        self.sequence = event.sequence
        body = event.WhichOneof("body")
        if body == "deal_started":
            d = event.deal_started
            self.deal_index, self.kingdom, self.contract = d.deal_index, d.kingdom, 0
            self.hand = {c.id for c in d.hand}
            self.hand_sizes = [13, 13, 13, 13]
            self.trick, self.layout = [], set()
        elif body == "contract_chosen":
            self.contract = event.contract_chosen.contract
        elif body == "card_played":
            cp = event.card_played
            self.hand.discard(cp.card.id)
            self.hand_sizes[cp.seat] -= 1
            if self.contract == common_pb2.CONTRACT_TRIX:
                self.layout.add(cp.card.id)
            else:
                self.trick.append(cp.card.id)
        elif body == "trick_taken":
            self.trick = []
        elif body == "deal_scored":
            self.totals = list(event.deal_scored.totals.values)
        elif body == "turn_started":
            self.turn = event.turn_started
        elif body == "game_ended":
            self.finished = True
            self.totals = list(event.game_ended.totals.values)

    def differences(self, view: table_pb2.SeatView) -> list[str]:
        """What differs from the authoritative view of the same sequence."""
        mine: dict[str, Any] = {
            "hand": self.hand,
            "hand_sizes": self.hand_sizes,
            "deal_index": self.deal_index,
            "kingdom": self.kingdom,
            "contract": self.contract,
            "trick": self.trick,
            "layout": self.layout,
            "totals": self.totals,
            "finished": self.finished,
        }
        theirs: dict[str, Any] = {
            "hand": {c.id for c in view.hand},
            "hand_sizes": list(view.hand_sizes),
            "deal_index": view.deal_index,
            "kingdom": view.kingdom,
            "contract": view.contract,
            "trick": [c.id for c in view.trick],
            "layout": {c.id for c in view.layout},
            "totals": list(view.totals.values),
            "finished": view.finished,
        }
        if self.turn is not None and not self.finished:
            mine["turn"] = (list(self.turn.seats), self.turn.decision, self.turn.turn_seq)
            theirs["turn"] = (list(view.turn.seats), view.turn.decision, view.turn.turn_seq)
        return [f"{k}: rebuilt {mine[k]!r} != view {theirs[k]!r}" for k in mine if mine[k] != theirs[k]]

    def my_turn(self) -> bool:
        return self.turn is not None and self.seat in self.turn.seats and not self.finished


class CuttingPlayer:
    """Plays a whole game through its Session, cutting the connection at random points."""

    def __init__(self, client: GatewayClient, seed: int) -> None:
        self.client = client
        self.rng = random.Random(seed)
        self.table_id = ""
        self.state = Rebuilt(seat=-1)
        self.acted = 0
        self.views = 0
        self.compared = 0
        self.cuts = 0
        self.verified_since_cut = True
        self.countdown = self.rng.randrange(60, 180)
        self.problems: list[str] = []
        self.trace: list[str] = []

    def progress(self) -> str:
        st = self.state
        return (
            f"seat {st.seat} seq {st.sequence} deal {st.deal_index} turn {st.turn} acted {self.acted} "
            f"cuts {self.cuts} compared {self.compared} problems {self.problems[:3]} gaps {st.gaps[:3]}\n"
            + "\n".join(self.trace[-25:])
        )

    def _ask_view(self) -> None:
        self.trace.append(f"{time.monotonic():.1f} ask view {self.views + 1}")
        self.views += 1
        view = gateway_pb2.GetViewRequest(table_id=self.table_id)
        self.client.send(gateway_pb2.SessionRequest(view=view, request_id=f"v{self.views}"))

    def _reopen(self) -> Any:
        self.client.cut()
        self.cuts += 1
        self.verified_since_cut = False
        self.countdown = self.rng.randrange(60, 180)
        self.trace.append(f"{time.monotonic():.1f} reopen after {self.state.sequence}")
        stream = self.client.open()
        resume = gateway_pb2.EventsRequest(table_id=self.table_id, after_sequence=self.state.sequence)
        self.client.send(gateway_pb2.SessionRequest(resume=resume))
        self.acted = 0  # an action cut in flight may be lost: answer the pending turn again
        self._ask_view()  # compared once the resumed events have caught up with it
        return stream

    def _on_view(self, view: table_pb2.SeatView) -> bool:
        """Compare (same sequence only) and answer a pending turn; True to cut now."""
        st = self.state
        if view.sequence == st.sequence:
            self.compared += 1
            self.verified_since_cut = True
            diff = st.differences(view)
            if diff:
                self.problems.append(f"at sequence {st.sequence}: {diff}")
        turn = view.turn
        pending = st.seat in turn.seats and not view.finished and turn.turn_seq != self.acted
        if pending and (st.turn is None or turn.turn_seq >= st.turn.turn_seq):
            choice = pick(view, turn.decision, self.rng)
            if choice is not None:
                self.acted = turn.turn_seq
                action_id = f"a{turn.turn_seq}-{self.cuts}"
                seen = max(st.sequence, view.sequence)
                action = gateway_pb2.Action(table_id=self.table_id, action_id=action_id, last_seen_sequence=seen)
                action.MergeFrom(choice)
                self.client.send(gateway_pb2.SessionRequest(action=action))
                self.trace.append(f"{time.monotonic():.1f} act {action_id}")
                return self.verified_since_cut and self.rng.random() < 0.1  # cut with the action in flight
        return False

    async def play(self) -> None:
        stream = self.client.open()
        wish = matchmaking_pb2.GameWish(variant=common_pb2.VARIANT_TRIX)
        self.client.send(gateway_pb2.SessionRequest(find_match=gateway_pb2.FindMatchRequest(wish=wish)))
        st = self.state
        while not st.finished:
            m = await asyncio.wait_for(anext(stream), STEP_S)
            kind = m.WhichOneof("kind")
            detail = m.event.WhichOneof("body") if kind == "event" else m.request_id
            self.trace = [*self.trace[-40:], f"{time.monotonic():.1f} {kind} {detail} {m.event.sequence or ''}"]
            cut = False
            if kind == "ticket" and m.ticket.state == matchmaking_pb2.TICKET_STATE_MATCHED:
                self.table_id, st.seat = m.ticket.table_id, m.ticket.seat
            elif kind == "event":
                st.apply(m.event)
                if m.event.HasField("turn_started") and st.my_turn():
                    self._ask_view()
                self.countdown -= 1
                cut = self.countdown <= 0 and self.verified_since_cut and not st.finished
            elif kind == "snapshot":
                if m.request_id.startswith("v"):
                    cut = self._on_view(m.snapshot)
                else:
                    self.problems.append(f"a resume snapshot at {st.sequence}: the history should reach back")
            elif kind == "error":
                assert m.error.code in ("FAILED_PRECONDITION", "ABORTED", "UNAVAILABLE"), m.error
                self.acted = 0  # not applied: the turn is answered again on its view
                if st.my_turn():
                    self._ask_view()
            if cut:
                stream = self._reopen()


@pytest.mark.parametrize("seeds", [(901, 902)])
async def test_cuts_at_random_points_of_whole_games(platform: Platform, seeds: tuple[int, ...]) -> None:
    players = [CuttingPlayer(await signed_in(platform.target, f"cutter{s}"), s) for s in seeds]
    try:
        await asyncio.wait_for(asyncio.gather(*(p.play() for p in players)), 200)
    except TimeoutError:
        os.kill(platform.gateway_pid, signal.SIGUSR1)  # the gateway logs what each task waits on
        await asyncio.sleep(2)
        logs = platform.state_dir / "logs" / "gateway.log"
        raise AssertionError([p.progress() for p in players] + [f"gateway task dump in {logs}"]) from None
    finally:
        for p in players:
            await p.client.close()
    for p in players:
        assert p.state.finished
        assert p.cuts >= 4, p.cuts
        assert p.compared >= p.cuts, (p.compared, p.cuts)
        assert p.state.gaps == [], p.state.gaps
        assert p.problems == [], p.problems[:5]
