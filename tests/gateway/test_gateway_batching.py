"""Event batching on the Session stream (issue 10): a client that sets
`SessionRequest.batch_events` gets the table events that are ready at the same moment in
one `event_batch` message. Against the real platform (nats-server, table, matchmaking
bots, gRPC on 127.0.0.1): the batched stream carries exactly the events, in the same
order and with the same bytes, as an unbatched session of the same seat, in fewer
messages; a client that does not opt in never gets a batch; resuming a batched session
after cuts yields each event once, in order."""

from __future__ import annotations

import asyncio
import random
from collections.abc import AsyncIterator
from dataclasses import dataclass, field

import pytest
from gateway_support import Platform, signed_in

from trix.client import GatewayClient, pick
from trix.v1 import common_pb2, events_pb2, gateway_pb2, matchmaking_pb2, table_pb2

pytestmark = pytest.mark.timeout(180)

STEP_S = 30.0
"""The longest a client waits for its next message (timers answer a lost turn within ~15 s)."""
ACTION_BODIES = ("contract_chosen", "double_answered", "card_played")
"""Event kinds that each answer one action (a player's or a bot's)."""


@dataclass
class Player:
    """Plays its seat through a raw (unflattened) Session, recording every message."""

    client: GatewayClient
    rng: random.Random
    table_id: str = ""
    seat: int = -1
    events: list[events_pb2.Event] = field(default_factory=list)
    messages: list[gateway_pb2.SessionResponse] = field(default_factory=list)
    acted: int = 0
    views: int = 0
    cuts: int = 0

    @property
    def sequence(self) -> int:
        return self.events[-1].sequence if self.events else 0

    def _ask_view(self) -> None:
        self.views += 1
        view = gateway_pb2.GetViewRequest(table_id=self.table_id)
        self.client.send(gateway_pb2.SessionRequest(view=view, request_id=f"v{self.views}"))

    def open(self, resume: bool) -> AsyncIterator[gateway_pb2.SessionResponse]:
        stream = self.client.open(flatten=False)
        if resume:
            request = gateway_pb2.EventsRequest(table_id=self.table_id, after_sequence=self.sequence)
            self.client.send(gateway_pb2.SessionRequest(resume=request))
            self.acted = 0  # an action cut in flight may be lost: answer the pending turn again
            self._ask_view()
        else:
            wish = matchmaking_pb2.GameWish(variant=common_pb2.VARIANT_TRIX)
            self.client.send(gateway_pb2.SessionRequest(find_match=gateway_pb2.FindMatchRequest(wish=wish)))
        return stream

    async def play(self, until: int, cuts_after: tuple[int, ...] = ()) -> None:
        """Play until the seat has seen `until` events; cut the stream and resume once the
        seat has seen each of `cuts_after` events."""
        pending_cuts = list(cuts_after)
        stream = self.open(resume=False)
        while self.sequence < until:
            m = await asyncio.wait_for(anext(stream), STEP_S)
            self.messages.append(m)
            kind = m.WhichOneof("kind")
            if kind == "ticket" and m.ticket.state == matchmaking_pb2.TICKET_STATE_MATCHED:
                self.table_id, self.seat = m.ticket.table_id, m.ticket.seat
            elif kind in ("event", "event_batch"):
                batch = [m.event] if kind == "event" else list(m.event_batch.events)
                for event in batch:
                    self.events.append(event)
                    if event.HasField("turn_started") and self.seat in event.turn_started.seats:
                        self._ask_view()
            elif kind == "snapshot" and m.request_id.startswith("v"):
                self._on_view(m.snapshot)
            elif kind == "error":
                assert m.error.code in ("FAILED_PRECONDITION", "ABORTED", "UNAVAILABLE"), m.error
                self.acted = 0
                self._ask_view()
            if pending_cuts and self.sequence >= pending_cuts[0]:
                pending_cuts.pop(0)
                self.client.cut()
                self.cuts += 1
                stream = self.open(resume=True)

    def _on_view(self, view: table_pb2.SeatView) -> None:
        turn = view.turn
        if self.seat not in turn.seats or view.finished or turn.turn_seq == self.acted:
            return
        choice = pick(view, turn.decision, self.rng)
        if choice is None:
            return
        self.acted = turn.turn_seq
        action = gateway_pb2.Action(
            table_id=self.table_id,
            action_id=f"a{turn.turn_seq}-{self.cuts}",
            last_seen_sequence=max(self.sequence, view.sequence),
        )
        action.MergeFrom(choice)
        self.client.send(gateway_pb2.SessionRequest(action=action))


async def replay_unbatched(
    platform: Platform, name: str, table_id: str, until: int
) -> list[gateway_pb2.SessionResponse]:
    """The seat's events 1..until through a new Session of the same player that does not opt
    in (it replaces the player's batched session): every message, as received."""
    client = await signed_in(platform.target, name)
    legacy = GatewayClient(platform.target, batch_events=False)
    legacy.token, legacy.player_id = client.token, client.player_id
    await client.close()
    try:
        stream = legacy.open()
        resume = gateway_pb2.EventsRequest(table_id=table_id, after_sequence=0)
        legacy.send(gateway_pb2.SessionRequest(resume=resume))
        got: list[gateway_pb2.SessionResponse] = []
        seen = 0
        while seen < until:
            m = await asyncio.wait_for(anext(stream), STEP_S)
            assert not m.HasField("error"), m.error
            got.append(m)
            if m.HasField("event"):
                seen = m.event.sequence
        return got
    finally:
        await legacy.close()


def assert_same_events(batched: list[events_pb2.Event], single: list[events_pb2.Event]) -> None:
    assert [e.sequence for e in batched] == list(range(1, len(batched) + 1))  # each once, in order
    assert len(single) >= len(batched)
    for mine, theirs in zip(batched, single, strict=False):
        assert mine.SerializeToString(deterministic=True) == theirs.SerializeToString(deterministic=True), (
            mine,
            theirs,
        )


def event_messages(messages: list[gateway_pb2.SessionResponse]) -> int:
    return sum(1 for m in messages if m.WhichOneof("kind") in ("event", "event_batch"))


def actions_in(events: list[events_pb2.Event]) -> int:
    return sum(1 for e in events if e.WhichOneof("body") in ACTION_BODIES)


async def test_batched_session_carries_the_same_events_in_fewer_messages(platform: Platform) -> None:
    name = "batcher1"
    player = Player(await signed_in(platform.target, name), random.Random(1001))
    try:
        await asyncio.wait_for(player.play(until=160), 120)
    finally:
        await player.client.close()
    batched = player.events
    batches = [m for m in player.messages if m.HasField("event_batch")]
    assert batches, "no event_batch on an opted-in session"
    assert all(1 < len(m.event_batch.events) <= 64 for m in batches)
    assert all(m.request_id == "" for m in batches)
    sent = event_messages(player.messages)
    assert sent < len(batched), (sent, len(batched))
    # Issue 16: the acceptance of the player's own action rides in the batch of its events,
    # one message per action: the table's public batch names the action it answers, so the
    # gateway joins them as the batch arrives (an acceptance alone only if its batch was lost).
    riding = [m for m in batches if m.event_batch.HasField("accepted")]
    alone = [m for m in player.messages if m.WhichOneof("kind") == "accepted"]
    assert riding and not alone, (len(riding), len(alone))
    assert all(m.event_batch.accepted.sequence == m.event_batch.events[-1].sequence for m in riding)

    # The same seat through a session that does not opt in: one event per message, and
    # the same events, in the same order, byte for byte.
    legacy = await replay_unbatched(platform, name, player.table_id, player.sequence)
    assert not any(m.HasField("event_batch") for m in legacy), "a batch sent to a client that did not opt in"
    single = [m.event for m in legacy if m.HasField("event")]
    assert event_messages(legacy) == len(single)
    assert_same_events(batched, single)
    actions = actions_in(batched)
    print(
        f"\nbatching: {len(batched)} events of {actions} actions in {sent} messages "
        f"({sent / max(actions, 1):.2f} per action; {len(single) / max(actions, 1):.2f} unbatched), "
        f"{len(batches)} batches"
    )


async def test_resume_after_cuts_with_batching_yields_each_event_once(platform: Platform) -> None:
    name = "batcher2"
    player = Player(await signed_in(platform.target, name), random.Random(1002))
    try:
        await asyncio.wait_for(player.play(until=200, cuts_after=(20, 60, 61, 120)), 150)
    finally:
        await player.client.close()
    assert player.cuts == 4
    assert any(m.HasField("event_batch") for m in player.messages)
    legacy = await replay_unbatched(platform, name, player.table_id, player.sequence)
    assert_same_events(player.events, [m.event for m in legacy if m.HasField("event")])


async def test_flattening_client_sees_single_events(platform: Platform) -> None:
    """`GatewayClient.open()` (what `trix play`, the demo and the load-test bots read) turns
    every batch back into single `event` responses, in order."""
    client = await signed_in(platform.target, "batcher3")
    try:
        stream = client.open()
        wish = matchmaking_pb2.GameWish(variant=common_pb2.VARIANT_TRIX)
        client.send(gateway_pb2.SessionRequest(find_match=gateway_pb2.FindMatchRequest(wish=wish)))
        sequences: list[int] = []
        while len(sequences) < 3:
            m = await asyncio.wait_for(anext(stream), STEP_S)
            assert m.WhichOneof("kind") != "event_batch"
            if m.HasField("event"):
                sequences.append(m.event.sequence)
        assert sequences == [1, 2, 3]
    finally:
        await client.close()
