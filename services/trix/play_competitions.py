"""`trix play --competitions` and `trix play --enter ID` (issue 43, docs/adr/0029): the
competitions in the terminal, over the gateway like any client.

Owns the lines it prints: the listed competitions by stage; after entering (or with `--follow`),
the player's next table as soon as a round seats him (the Session's `seated` notice: the table
"opens by itself", its events followed to its end), the bracket (knockout) or standings (points)
each time the competition changes, and the digest after the final. Returns when the competition
is in its review period, finished or cancelled. Opening his table takes his seat from auto-play
(docs/rules.md §10) and he plays it as in the line terminal (`CompetitionTerminal`); with
`--auto-play`, or when the input is closed, his seats stay with auto-play and are followed.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime
import sys
import uuid
from typing import Any

from trix.client import GatewayClient, SeatState
from trix.play_terminal import Terminal
from trix.v1 import competitions_pb2 as cpb
from trix.v1 import gateway_pb2

LAST_EVENTS_S = 10.0
SEED_ACTION = "competition-seed"
"""The action id of the seed `trix play` gives at each competition table (one per table)."""
OVER = {cpb.COMPETITION_STATE_REVIEW, cpb.COMPETITION_STATE_FINISHED, cpb.COMPETITION_STATE_CANCELLED}


def _state(value: int) -> str:
    return cpb.CompetitionState.Name(value).removeprefix("COMPETITION_STATE_").lower()  # type: ignore[arg-type]


def _format(options: cpb.CompetitionOptions) -> str:
    kind = cpb.CompetitionFormat.Name(options.format).removeprefix("COMPETITION_FORMAT_").lower()
    return f"{kind} {options.rounds} round{'s' if options.rounds != 1 else ''}"


def competition_line(c: cpb.Competition) -> str:
    """One competition as `--competitions` lists it."""
    starts = datetime.datetime.fromtimestamp(c.options.starts_at_ms / 1000, tz=datetime.UTC).strftime("%Y-%m-%d %H:%M")
    entered = sum(e.state == cpb.ENTRANT_STATE_ACCEPTED or e.state == cpb.ENTRANT_STATE_OUT for e in c.entrants)
    fee = f"fee {c.options.entry_fee}" if c.options.entry_fee else "free"
    fill = f"{entered}/{c.options.capacity}"
    return f"{c.competition_id}  {_state(c.state):<12} {_format(c.options):<18} {fill}  {fee}  starts {starts} UTC"


def progress_lines(seen: gateway_pb2.ViewCompetitionResponse, names: dict[str, str]) -> list[str]:
    """The bracket round by round (each table's players, best place first once ended), or the standings."""

    def name(player: str) -> str:
        return names.get(player) or player

    out: list[str] = []
    if seen.HasField("standings"):
        for rank, row in enumerate(seen.standings.rows, 1):
            out.append(f"  {rank:>3}. {' + '.join(map(name, row.players)):<28} {row.points:>3} pts  {row.wins} won")
        return out
    for table in seen.bracket.tables:
        players = list(table.players)
        if table.ended:
            players = [p for _, p in sorted(zip(table.places, players, strict=True), key=lambda x: x[0])]
        mark = "ended" if table.ended else "playing"
        out.append(f"  round {table.round} table {table.index}: {', '.join(map(name, players))} ({mark})")
    if seen.bracket.ranking:
        out.append(f"  final ranking: {', '.join(name(u) for u in seen.bracket.ranking[:4])}")
    return out


async def list_competitions(client: GatewayClient) -> int:
    for listing in (cpb.COMPETITION_LISTING_OPEN, cpb.COMPETITION_LISTING_RUNNING, cpb.COMPETITION_LISTING_FINISHED):
        reply = await client.stub.ListCompetitions(
            gateway_pb2.ListCompetitionsRequest(listing=listing, limit=20), metadata=client.metadata, timeout=10
        )
        title = cpb.CompetitionListing.Name(listing).removeprefix("COMPETITION_LISTING_").lower()
        print(f"{title}:" if reply.competitions else f"{title}: none", flush=True)
        for competition in reply.competitions:
            print(f"  {competition_line(competition)}", flush=True)
    return 0


class CompetitionTerminal(Terminal):
    """Follows one competition (entering it first with `enter`) until its final or its
    cancellation, and plays the player's seat at each of his tables: opening it takes it from
    auto-play (docs/rules.md §10), his turns are the line terminal's (`Terminal`: the table on
    his turn, a card code or a contract number per line), his seed given by itself (§11). With
    `auto_play`, or once the input is closed (nothing more can be typed), his seats are left to
    auto-play and followed only."""

    def __init__(self, client: GatewayClient, args: argparse.Namespace, competition_id: str, *, enter: bool) -> None:
        super().__init__(client, args)
        self.competition_id, self.enter = competition_id, enter
        self.auto_play = bool(getattr(args, "auto_play", False))
        self.input_closed = False
        self.following: set[str] = set()

    async def run(self) -> int:
        loop = asyncio.get_running_loop()
        try:
            loop.add_reader(sys.stdin.fileno(), self._stdin)
        except (OSError, ValueError):  # not pollable (/dev/null, a file): read it in a thread
            return await self._run_reading(loop)
        try:
            return await self._follow()
        finally:
            loop.remove_reader(sys.stdin.fileno())

    async def _run_reading(self, loop: asyncio.AbstractEventLoop) -> int:
        async def read(line: str) -> None:
            while line:
                self.lines.put_nowait(line)
                line = await loop.run_in_executor(None, sys.stdin.readline)
            self.lines.put_nowait(None)

        first = await loop.run_in_executor(None, sys.stdin.readline)  # a file answers at once
        self.input_closed = not first  # empty (/dev/null): known before any table opens
        reader = asyncio.ensure_future(read(first))
        try:
            return await self._follow()
        finally:
            reader.cancel()

    async def _keyboard(self) -> None:
        await super()._keyboard()
        self.input_closed = True  # the input ended (or `q`): nothing more can be typed

    async def _follow(self) -> int:
        client, cid = self.client, self.competition_id
        if self.enter:
            request = gateway_pb2.EnterCompetitionRequest(competition_id=cid)
            reply = await client.stub.EnterCompetition(request, metadata=client.metadata, timeout=10)
            state = cpb.EntrantState.Name(reply.entrant.state).removeprefix("ENTRANT_STATE_").lower()
            self.say(f"entered {cid}: {state}")
        stream = client.open().__aiter__()
        client.send(gateway_pb2.SessionRequest(ping=True, request_id=uuid.uuid4().hex))
        keyboard = asyncio.ensure_future(self._keyboard())
        try:
            seen = await _show(client, cid)
            if seen.seat.table_id:  # already seated: that table now
                self._open(seen.seat)
            over = seen.competition.state in OVER
            while not over or self.following:
                try:  # once it is over, the last events of a followed table are on their way: not forever
                    message = await asyncio.wait_for(anext(stream), LAST_EVENTS_S if over else None)
                except (StopAsyncIteration, TimeoutError):
                    break
                over = await self._message(message, over)
        finally:
            keyboard.cancel()
        return 0

    async def _message(self, message: gateway_pb2.SessionResponse, over: bool) -> bool:
        """One message of the Session; returns whether the competition is over."""
        kind = message.WhichOneof("kind")
        cid = self.competition_id
        if kind == "competition" and message.competition.HasField("seated"):
            seat = message.competition.seated
            if seat.competition_id == cid:
                self.say(f"round {seat.round}: your table {seat.table_id}, seat {seat.seat}")
                self._open(seat)
        elif kind == "competition" and message.competition.changed.competition_id == cid:
            return (await _show(self.client, cid)).competition.state in OVER
        elif kind == "event" and message.event.table_id == self.state.table_id:
            event = message.event
            if not self._playing():
                self.state.apply(event)
            elif event.HasField("turn_started") and event.turn_started.client_seeds:
                self.state.apply(event)
                if self.state.my_turn():  # §11: his seed, as the web client gives it
                    seed = self.args.seed or uuid.uuid4().hex[:16]
                    action = gateway_pb2.Action(table_id=event.table_id, action_id=SEED_ACTION, client_seed=seed)
                    self._send_action(action)
            else:
                await self._on(message)
            if event.HasField("game_ended"):
                self.following.discard(event.table_id)
                self.say(f"table {event.table_id} ended")
        elif (
            kind == "error"
            and message.error.code in ("UNAVAILABLE", "NOT_FOUND")
            and message.request_id in self.following
        ):
            await asyncio.sleep(1.0)  # the table did not answer in time: the same resume again
            self._resume_table(message.request_id)
        elif kind == "error" and message.error.action_id == SEED_ACTION:
            pass  # a seed turn seen in the table's history, over by now: nothing to give
        elif kind == "error" and not message.error.action_id:
            self.say(f"refused: {message.error.code}: {message.error.message}")
        elif kind == "snapshot" and message.snapshot.table_id == self.state.table_id:
            if self._playing():
                await self._on(message)  # his turn's view
            else:
                self.state.take_view(message.snapshot)
            if message.snapshot.finished and message.snapshot.table_id in self.following:
                # The table's history is archived: its view instead of the missing events.
                self.following.discard(message.snapshot.table_id)
                self.say(f"table {message.snapshot.table_id} ended")
        elif kind == "error" and self._playing():
            await self._on(message)  # a refused move
        return over

    def _playing(self) -> bool:
        return not (self.auto_play or self.input_closed)

    def _open(self, seat: cpb.CompetitionSeat) -> None:
        """His table opens by itself: followed from its start, his seat taken unless he leaves it to auto-play."""
        if self.input_closed and not self.auto_play:
            self.say("no more input: your seat stays with auto-play")
        self.state = SeatState()
        self.state.table_id, self.state.seat = seat.table_id, seat.seat
        self.following.add(seat.table_id)
        self._resume_table(seat.table_id)

    def _resume_table(self, table_id: str) -> None:
        resume = gateway_pb2.EventsRequest(table_id=table_id, after_sequence=0, auto_play=not self._playing())
        self.client.send(gateway_pb2.SessionRequest(resume=resume, request_id=table_id))

    def _forget_table(self) -> None:
        """A competition's table is not `trix play`'s game to resume."""


async def _show(client: GatewayClient, competition_id: str) -> gateway_pb2.ViewCompetitionResponse:
    request = gateway_pb2.ViewCompetitionRequest(competition_id=competition_id)
    seen: Any = await client.stub.ViewCompetition(request, metadata=client.metadata, timeout=10)
    c = seen.competition
    names = {e.player_id: e.display_name for e in c.entrants}
    print(f"{c.competition_id}: {_state(c.state)}, {_format(c.options)}", flush=True)
    for line in progress_lines(seen, names):
        print(line, flush=True)
    if c.digest:
        print(f"digest {c.digest} (check it: trix verify-competition FILE)", flush=True)
    return seen  # type: ignore[no-any-return]


async def run_competitions(client: GatewayClient, args: argparse.Namespace) -> int:
    if args.competitions:
        return await list_competitions(client)
    return await CompetitionTerminal(client, args, args.enter or args.follow, enter=bool(args.enter)).run()
