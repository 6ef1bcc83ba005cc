"""A client of the gateway written from the protos (issue 40): one player on a native gRPC
channel to the edge, its Session stream read message by message, and a game driven from what
the API gives (each turn's own TurnStarted with its legal moves)."""

from __future__ import annotations

import asyncio
import contextlib
import itertools
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import Any

import grpc

from trix.v1 import common_pb2, events_pb2, gateway_pb2, gateway_pb2_grpc, matchmaking_pb2

TIMEOUT_S = 30.0
RATE_LIMIT_RETRIES = 20  # a paced client gives up after this many refusals in a row
DOUBLING_CARDS = {10: "QC", 23: "QD", 36: "QH", 49: "QS", 37: "KH"}
"""docs/rules.md §7: the cards doubled (the queens and KH), by card id (§1: suit * 13 + rank - 2)."""
CONTRACT_DOUBLES = {
    common_pb2.CONTRACT_KING: {37},
    common_pb2.CONTRACT_QUEENS: {10, 23, 36, 49},
    common_pb2.CONTRACT_COMPLEX: {10, 23, 36, 49, 37},
}
"""docs/rules.md §7: the doubling contracts and the cards each lets a seat double."""


@dataclass
class Player:
    """One signed-in player with one Session stream to `target`."""

    target: str
    name: str
    channel: grpc.aio.Channel = field(init=False)
    stub: gateway_pb2_grpc.GatewayServiceStub = field(init=False)
    token: str = ""
    call: Any = None
    table_id: str = ""
    seat: int = -1
    last_sequence: int = 0
    hand: set[int] = field(default_factory=set)
    contract: int = 0
    seats: list[common_pb2.Seat] = field(default_factory=list)
    events: list[events_pb2.Event] = field(default_factory=list)
    turn: events_pb2.TurnStarted | None = None
    """The seat's latest own TurnStarted (it may come while an action's answer is awaited)."""
    done: int = 0
    """The turn_seq of the last turn this player answered."""
    ids: itertools.count[int] = field(default_factory=itertools.count)

    def __post_init__(self) -> None:
        self.channel = grpc.aio.insecure_channel(self.target)
        self.stub = gateway_pb2_grpc.GatewayServiceStub(self.channel)

    @property
    def metadata(self) -> tuple[tuple[str, str], ...]:
        return (("authorization", f"Bearer {self.token}"),)

    async def sign_in(self) -> Player:
        request = gateway_pb2.SignInRequest(
            device_secret=f"api-contract-{self.name}-0123456789", display_name=self.name
        )
        self.token = (await self.stub.SignIn(request, timeout=TIMEOUT_S)).token
        return self

    async def open(self) -> None:
        self.call = self.stub.Session(metadata=self.metadata)
        await asyncio.wait_for(self.call.initial_metadata(), TIMEOUT_S)  # accepted: write after it

    async def send(self, request: gateway_pb2.SessionRequest) -> str:
        if not request.request_id:
            request.request_id = f"{self.name}-{next(self.ids)}"
        await self.call.write(request)
        return str(request.request_id)

    async def read(self) -> gateway_pb2.SessionResponse:
        message = await asyncio.wait_for(self.call.read(), TIMEOUT_S)
        assert message is not grpc.aio.EOF, "the session ended"
        assert isinstance(message, gateway_pb2.SessionResponse)
        if message.HasField("event"):
            self._apply(message.event)
        return message

    def _apply(self, event: events_pb2.Event) -> None:
        self.events.append(event)
        self.last_sequence = max(self.last_sequence, event.sequence)
        body = event.WhichOneof("body")
        if body == "table_created":
            self.seats = list(event.table_created.seats)
        elif body == "deal_started" and event.deal_started.hand:
            self.hand = {c.id for c in event.deal_started.hand}
        elif body == "contract_chosen":
            self.contract = event.contract_chosen.contract
        elif body == "card_played" and event.card_played.seat == self.seat:
            self.hand.discard(event.card_played.card.id)
        elif body == "turn_started" and self.seat in event.turn_started.seats and event.turn_started.seat_copies:
            self.turn = event.turn_started

    async def until(self, wanted: Callable[[gateway_pb2.SessionResponse], bool]) -> gateway_pb2.SessionResponse:
        """Read until a message `wanted` says yes to; an error refuses the test unless wanted."""
        while True:
            message = await self.read()
            if wanted(message):
                return message
            assert not message.HasField("error"), message.error

    async def matched(self, variant: int = common_pb2.VARIANT_COMPLEX, request_id: str = "") -> list[Any]:
        """find_match on the stream, until MATCHED (bots fill at once); the ticket messages."""
        wish = matchmaking_pb2.GameWish(variant=variant)  # type: ignore[arg-type]
        await self.send(
            gateway_pb2.SessionRequest(find_match=gateway_pb2.FindMatchRequest(wish=wish), request_id=request_id)
        )
        tickets: list[gateway_pb2.SessionResponse] = []
        while True:
            message = await self.until(lambda m: m.HasField("ticket"))
            tickets.append(message)
            if message.ticket.state == matchmaking_pb2.TICKET_STATE_MATCHED:
                self.table_id, self.seat = message.ticket.table_id, message.ticket.seat
                return tickets

    async def my_turn(self) -> events_pb2.TurnStarted:
        """The seat's turn not answered yet (its own TurnStarted copy, with its legal moves)."""
        while self.turn is None or self.turn.turn_seq == self.done:
            message = await self.read()
            assert not message.HasField("error"), message.error
        return self.turn

    def action(self, turn: events_pb2.TurnStarted, *, last_seen: int | None = None) -> gateway_pb2.Action:
        """The first legal move of the turn (a doubling contract when the seat picks one: the
        doubling turns are what these tests look at; no double when asked)."""
        action = gateway_pb2.Action(
            table_id=self.table_id,
            action_id=f"{self.name}-a{next(self.ids)}",
            last_seen_sequence=self.last_sequence if last_seen is None else last_seen,
        )
        if turn.decision == common_pb2.DECISION_CONTRACT:
            doubling = [c for c in turn.legal_contracts if c in CONTRACT_DOUBLES]
            action.choose_contract = (doubling or list(turn.legal_contracts))[0]
        elif turn.decision == common_pb2.DECISION_DOUBLE:
            action.answer_double.SetInParent()
        else:
            action.play_card.CopyFrom(turn.legal_cards[0])
        return action

    async def act(self, action: gateway_pb2.Action) -> gateway_pb2.SessionResponse:
        """Send the action; its answer (accepted or error), events read meanwhile."""
        rid = await self.send(gateway_pb2.SessionRequest(action=action))
        return await self.until(lambda m: m.request_id == rid and (m.HasField("accepted") or m.HasField("error")))

    async def play(self, turn: events_pb2.TurnStarted) -> None:
        """Play the turn's first legal move; it must be accepted at once."""
        answer = await self.act(self.action(turn))
        assert answer.HasField("accepted"), answer
        self.done = turn.turn_seq

    async def act_paced(self, action: gateway_pb2.Action) -> gateway_pb2.SessionResponse:
        """`act` as a client should send: a rate limit's refusal is waited out for the delay it
        names and the same action sent again (a fast box's bots answer at once, so deals
        played back to back can outrun the gateway's action limit); any other answer is
        returned."""
        for _ in range(RATE_LIMIT_RETRIES):
            answer = await self.act(action)
            if not (answer.HasField("error") and answer.error.code == "RESOURCE_EXHAUSTED"):
                return answer
            assert answer.error.HasField("retry_delay"), answer  # a limit always names its delay
            await asyncio.sleep(answer.error.retry_delay.ToNanoseconds() / 1e9)
        raise AssertionError(f"{RATE_LIMIT_RETRIES} rate-limit refusals in a row: {answer}")

    async def play_paced(self, turn: events_pb2.TurnStarted) -> None:
        """Play the turn's first legal move, paced (`act_paced`); it must be accepted."""
        answer = await self.act_paced(self.action(turn))
        assert answer.HasField("accepted"), answer
        self.done = turn.turn_seq

    async def close(self) -> None:
        """Leave the table for good (bots finish a free game at once) and close the channel."""
        if self.call is not None and self.table_id:
            leave = gateway_pb2.Action(table_id=self.table_id, action_id=f"{self.name}-leave", leave=True)
            with contextlib.suppress(Exception):
                await self.send(gateway_pb2.SessionRequest(action=leave))
                await self.until(lambda m: m.HasField("accepted") or m.HasField("error"))
        if self.call is not None:
            self.call.cancel()
        await self.channel.close()

    async def view(self) -> Any:
        """GetView of the player's table (a plain call beside the stream)."""
        request = gateway_pb2.GetViewRequest(table_id=self.table_id)
        return (await self.stub.GetView(request, metadata=self.metadata, timeout=TIMEOUT_S)).view

    async def play_turns(self, turns: int) -> None:
        for _ in range(turns):
            await self.play_paced(await self.my_turn())


@contextlib.asynccontextmanager
async def seated(target: str, name: str, *, match: bool = True) -> AsyncIterator[Player]:
    """A signed-in player with his Session open, at a COMPLEX table with three bots (`match`),
    who leaves it at the end."""
    player = await Player(target, name).sign_in()
    try:
        await player.open()
        if match:
            await player.matched()
        yield player
    finally:
        await player.close()
