"""The client library of the platform: what `trix play`, `trix demo`, the load tester's
bots and the tests use to play through the gateway exactly like a mobile client.

Owns:
- `GatewayClient`: sign-in, the one bidirectional Session, its EventBatch messages
  flattened (`flattened`);
- `SeatState`: the player's view, kept from SeatView snapshots and events, and
  `new_action` for the next action against it;
- `pick` / `pick_from_turn`: a quick legal choice (the bots');
- `wait_for_standings`: scoring's totals of a table once it consumed the game;
- `device_secret`: the guest device secret kept in a file.

The terminal UI is `trix.play`; the platform it plays on without a server is
`trix.embedded`. Never sees another seat's hand: everything comes through
the gateway (docs/rules.md §14).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import secrets
import time
import uuid
from collections import deque
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import grpc

from trix import tls
from trix.rules import card_text
from trix.v1 import common_pb2, events_pb2, gateway_pb2, gateway_pb2_grpc, scoring_pb2, table_pb2

VARIANTS = {
    "trix": common_pb2.VARIANT_TRIX,
    "trix-partnership": common_pb2.VARIANT_TRIX_PARTNERSHIP,
    "complex": common_pb2.VARIANT_COMPLEX,
    "complex-partnership": common_pb2.VARIANT_COMPLEX_PARTNERSHIP,
}
"""The variants by their command-line names."""


# -- the client -----------------------------------------------------------------------------


@dataclass
class SeatState:
    """What this player's seat may see, from snapshots and events."""

    table_id: str = ""
    seat: int = -1
    sequence: int = 0
    view: table_pb2.SeatView | None = None
    last_trick: list[str] = field(default_factory=list)
    totals: list[int] = field(default_factory=lambda: [0, 0, 0, 0])
    deals_scored: int = 0
    turn: events_pb2.TurnStarted | None = None
    record_json: str = ""
    ended: bool = False
    events: int = 0
    _mine: tuple[events_pb2.TurnStarted | None, int, bool] = field(default=(None, -1, False), repr=False, compare=False)
    """`my_turn`'s answer for (turn, seat): a turn's seats are read once, not at every look."""

    def apply(self, event: events_pb2.Event, body: str | None = None) -> None:
        """Fold one event in (`body`: its `WhichOneof("body")`, when the caller has it already)."""
        self.sequence = max(self.sequence, event.sequence)
        self.events += 1
        if body is None:
            body = event.WhichOneof("body")
        if body == "turn_started":
            self.turn = event.turn_started
        elif body == "trick_taken":
            self.last_trick = [card_text(c.id) for c in event.trick_taken.cards]
        elif body == "deal_scored":
            self.totals = list(event.deal_scored.totals.values)
            self.deals_scored += 1
        elif body == "game_ended":
            self.ended = True
            self.record_json = event.game_ended.record_json
            self.totals = list(event.game_ended.totals.values)

    def take_view(self, view: table_pb2.SeatView) -> None:
        """A fresh SeatView (a resume, or a view asked for on a turn). When it is not older than
        the events already folded in, the scores, the last trick and the decision due are the
        view's: a resumed seat shows the game's totals and knows it is its turn."""
        if view.sequence >= self.sequence:
            self.totals = list(view.totals.values) or [0, 0, 0, 0]
            self.last_trick = [card_text(c.id) for c in view.last_trick.cards]
            if view.finished or not view.HasField("turn"):
                self.turn = None
            elif self.turn is None or self.turn.turn_seq != view.turn.turn_seq:
                self.turn = view.turn  # the seat's own TurnStarted (legal moves) is kept when it came
        self.view = view
        self.sequence = max(self.sequence, view.sequence)

    def my_turn(self) -> bool:
        t = self.turn
        if t is None or self.ended:
            return False
        turn, seat, mine = self._mine
        if turn is not t or seat != self.seat:
            mine = self.seat in t.seats
            self._mine = (t, self.seat, mine)
        return mine


class GatewayClient:
    """One player's connection to the gateway: sign-in, then one Session stream.

    Asks for EventBatch messages (`batch_events`, the events of an action come in
    one message instead of one each) and flattens them, so a reader of `open()` sees single
    `event` responses either way. Keeps its token fresh: RefreshToken once four fifths of its
    lifetime have passed (ADR 0018), so new calls and streams never carry an expired one."""

    def __init__(self, target: str, *, batch_events: bool = True, ca_file: str | None = None) -> None:
        self.channel = tls.aio_channel(target, ca_file)  # TLS verified against `ca_file`, if given
        self.stub = gateway_pb2_grpc.GatewayServiceStub(self.channel)
        self.token = ""
        self.expires_at = 0
        self._refresher: asyncio.Task[None] | None = None
        self.player_id = ""
        self.outgoing = _Writer(None, batch_events)
        """The current stream's writer (a new one per `open`)."""
        self.call: Any = None
        self.batch_events = batch_events

    @property
    def metadata(self) -> tuple[tuple[str, str], ...]:
        return (("authorization", f"Bearer {self.token}"),)

    async def sign_in(self, device_secret: str, name: str) -> str:
        reply = await self.stub.SignIn(
            gateway_pb2.SignInRequest(device_secret=device_secret, display_name=name), timeout=10
        )
        self.token, self.player_id = reply.token, reply.player_id
        self.expires_at = reply.expires_at.seconds
        if self._refresher is None:
            self._refresher = asyncio.ensure_future(self._keep_fresh())
        return str(reply.player_id)

    async def refresh(self) -> None:
        """A new token for the current one (same player, a new expiry)."""
        reply = await self.stub.RefreshToken(gateway_pb2.RefreshTokenRequest(), metadata=self.metadata, timeout=10)
        self.token, self.expires_at = reply.token, reply.expires_at.seconds

    async def _keep_fresh(self) -> None:
        while True:
            await asyncio.sleep(max(1.0, (self.expires_at - time.time()) * 0.8))
            try:
                await self.refresh()
            except grpc.aio.AioRpcError as err:
                if err.code() == grpc.StatusCode.UNAUTHENTICATED:
                    return  # expired or its key retired: the owner signs in again
                await asyncio.sleep(5.0)  # unreachable for now: again, well before expiry

    def open(self, *, flatten: bool = True) -> AsyncIterator[gateway_pb2.SessionResponse]:
        """Open the Session stream; iterate the result for everything the player may see
        (EventBatch messages flattened into single events unless `flatten` is False)."""
        responses: AsyncIterator[gateway_pb2.SessionResponse] = self.open_call().__aiter__()
        return flattened(responses) if flatten and self.batch_events else responses

    def open_call(self) -> Any:
        """Open the Session stream and return its call, to be read with `call.read()` (until
        `grpc.aio.EOF`) instead of iterated: one generator less per message (the load-test bots)."""
        self.call = self.stub.Session(metadata=self.metadata)  # no request iterator: `send` writes
        self.outgoing = _Writer(self.call, self.batch_events)
        return self.call

    def send(self, request: gateway_pb2.SessionRequest) -> None:
        self.outgoing.send(request)

    def cut(self) -> None:
        """Drop the stream at once (a network cut)."""
        if self.call is not None:
            self.call.cancel()

    async def close(self) -> None:
        if self._refresher is not None:
            self._refresher.cancel()
            with contextlib.suppress(BaseException):
                await self._refresher
        self.outgoing.close()
        self.cut()
        await self.channel.close()


class _Writer:
    """Writes one stream's requests in order with `call.write`, one at a time (grpc allows one
    write in flight per call), from a task that runs only while requests wait: a bot that
    thinks costs no task (the request iterator's generators and queue were a fifth
    of a bot's CPU). Bound to its own call: after a cut, a request meant for the new stream
    never goes to the old one. Writes only once the gateway has accepted the session (its
    headers arrived): a write racing a refusal would hide the refusal's status (ADR 0009)."""

    def __init__(self, call: Any, batch_events: bool) -> None:
        self.call = call
        self.batch_events = batch_events
        """Sticky for the stream: the first request carries it."""
        self.waiting: deque[gateway_pb2.SessionRequest | None] = deque()
        self.task: asyncio.Task[None] | None = None
        self.accepted = False
        self.first = True
        self.loop = asyncio.get_running_loop() if call is not None else None
        """Kept: `asyncio.ensure_future` looks the loop up (and Python 3.11 calls getpid) per write."""

    def send(self, request: gateway_pb2.SessionRequest) -> None:
        self._put(request)

    def close(self) -> None:
        """No more requests: the stream's writing side ends after those waiting."""
        self._put(None)

    def _put(self, request: gateway_pb2.SessionRequest | None) -> None:
        if self.call is None:
            return
        self.waiting.append(request)
        if self.task is None and self.loop is not None:
            self.task = self.loop.create_task(self._drain())

    async def _drain(self) -> None:
        call = self.call
        try:
            if not self.accepted:
                await call.initial_metadata()
                self.accepted = True
            while self.waiting and not call.done():
                request = self.waiting.popleft()
                if request is None:
                    await call.done_writing()
                    self.call = None  # nothing more is written
                    return
                if self.first:
                    self.first = False
                    if self.batch_events:
                        request.batch_events = True
                await call.write(request)
        except (grpc.aio.AioRpcError, asyncio.InvalidStateError):
            self.waiting.clear()  # the stream ended: its reader sees why
        finally:
            self.task = None


async def flattened(
    responses: AsyncIterator[gateway_pb2.SessionResponse],
) -> AsyncIterator[gateway_pb2.SessionResponse]:
    """Session responses with each EventBatch replaced by its events, one `event` each, then
    the acceptance it carries, as the `accepted` message it stands for."""
    async for m in responses:
        if m.WhichOneof("kind") == "event_batch":
            for event in m.event_batch.events:
                yield gateway_pb2.SessionResponse(event=event)
            if m.event_batch.HasField("accepted"):
                yield gateway_pb2.SessionResponse(accepted=m.event_batch.accepted, request_id=m.request_id)
        else:
            yield m


def new_action(state: SeatState) -> gateway_pb2.Action:
    return gateway_pb2.Action(
        table_id=state.table_id, action_id=uuid.uuid4().hex[:20], last_seen_sequence=state.sequence
    )


async def wait_for_standings(
    target: str,
    token: str,
    table_id: str,
    want: list[int],
    *,
    tries: int,
    interval_s: float,
    timeout_s: float,
    ca_file: str | None = None,
) -> list[int]:
    """Scoring's totals for the table through the gateway's Query, asked up to `tries` times
    until they equal `want` (scoring has consumed the game); else the last seen."""
    async with tls.aio_channel(target, ca_file) as channel:
        stub = gateway_pb2_grpc.GatewayServiceStub(channel)
        totals: list[int] = []
        for _ in range(tries):
            q = gateway_pb2.QueryRequest(standings=scoring_pb2.GetStandingsRequest(table_id=table_id))
            try:
                reply = await stub.Query(q, metadata=(("authorization", f"Bearer {token}"),), timeout=timeout_s)
                totals = list(reply.standings.totals.values)
            except grpc.aio.AioRpcError:
                totals = []
            if totals == want:
                return totals
            await asyncio.sleep(interval_s)
        return totals


# -- decisions (the bots') ------------------------------------------------------------------


def pick(view: table_pb2.SeatView, decision: int, rng: Any) -> gateway_pb2.Action | None:
    """A quick legal choice from the seat's own view."""
    return _choose(decision, view.legal_cards, view.legal_contracts, rng)


def pick_from_turn(turn: events_pb2.TurnStarted, rng: Any) -> gateway_pb2.Action | None:
    """The same choice as `pick`, from the seat's own TurnStarted, which carries its legal
    moves (ADR 0003 decision 15): no view needed. None when the turn does not carry them (a
    client-seed turn, a view's turn, events from before the change): ask for a view then."""
    if not turn.seat_copies:
        return None
    return _choose(turn.decision, turn.legal_cards, turn.legal_contracts, rng)


def _choose(
    decision: int, cards: Sequence[common_pb2.Card], contracts: Sequence[int], rng: Any
) -> gateway_pb2.Action | None:
    action = gateway_pb2.Action()
    if decision == common_pb2.DECISION_CONTRACT and contracts:
        action.choose_contract = rng.choice(list(contracts))
    elif decision == common_pb2.DECISION_DOUBLE:
        action.answer_double.SetInParent()
    elif decision == common_pb2.DECISION_CARD and cards:
        action.play_card.id = rng.choice(list(cards)).id
    else:
        return None
    return action


def device_secret(path: Path) -> str:
    """The guest device secret kept in `path` (made on first use, readable by its owner only)."""
    if path.exists():
        return path.read_text().strip()
    path.parent.mkdir(parents=True, exist_ok=True)
    secret = secrets.token_hex(24)
    path.write_text(secret + "\n")
    with contextlib.suppress(OSError):
        os.chmod(path, 0o600)
    return secret
