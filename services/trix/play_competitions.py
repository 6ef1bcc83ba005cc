"""`trix play --competitions` and `trix play --enter ID` (issue 43, docs/adr/0029): the
competitions in the terminal, over the gateway like any client.

Owns the lines it prints: the listed competitions by stage; after entering (or with `--follow`),
the player's next table as soon as a round seats him (the Session's `seated` notice: the table
"opens by itself", its events followed to its end), the bracket (knockout) or standings (points)
each time the competition changes, and the digest after the final. Returns when the competition
is in its review period, finished or cancelled. Seats at a competition table are played by the
table's bot (docs/adr/0026): the terminal follows them.
"""

from __future__ import annotations

import asyncio
import datetime
import uuid
from typing import Any

from trix.client import GatewayClient
from trix.v1 import competitions_pb2 as cpb
from trix.v1 import gateway_pb2

LAST_EVENTS_S = 10.0
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


async def follow_competition(client: GatewayClient, competition_id: str, *, enter: bool) -> int:
    """Enters (with `enter`) and follows the competition until its final or its cancellation."""
    if enter:
        request = gateway_pb2.EnterCompetitionRequest(competition_id=competition_id)
        reply = await client.stub.EnterCompetition(request, metadata=client.metadata, timeout=10)
        state = cpb.EntrantState.Name(reply.entrant.state).removeprefix("ENTRANT_STATE_").lower()
        print(f"entered {competition_id}: {state}", flush=True)
    stream = client.open().__aiter__()
    client.send(gateway_pb2.SessionRequest(ping=True, request_id=uuid.uuid4().hex))
    following: set[str] = set()
    seen = await _show(client, competition_id)
    if seen.seat.table_id:  # already seated: follow that table now
        following.add(_follow_table(client, seen.seat))
    over = seen.competition.state in OVER
    while not over or following:
        try:  # once it is over, the last events of a followed table are on their way: not forever
            message = await asyncio.wait_for(anext(stream), LAST_EVENTS_S if over else None)
        except (StopAsyncIteration, TimeoutError):
            break
        kind = message.WhichOneof("kind")
        if kind == "competition" and message.competition.HasField("seated"):
            seat = message.competition.seated
            if seat.competition_id == competition_id:
                print(f"round {seat.round}: your table {seat.table_id}, seat {seat.seat}", flush=True)
                following.add(_follow_table(client, seat))
        elif kind == "competition" and message.competition.changed.competition_id == competition_id:
            over = (await _show(client, competition_id)).competition.state in OVER
        elif kind == "event" and message.event.HasField("game_ended"):
            following.discard(message.event.table_id)
            print(f"table {message.event.table_id} ended", flush=True)
        elif kind == "error" and message.error.code in ("UNAVAILABLE", "NOT_FOUND") and message.request_id in following:
            await asyncio.sleep(1.0)  # the table did not answer in time: the same resume again
            client.send(
                gateway_pb2.SessionRequest(
                    resume=gateway_pb2.EventsRequest(table_id=message.request_id), request_id=message.request_id
                )
            )
        elif kind == "error":
            print(f"refused: {message.error.code}: {message.error.message}", flush=True)
    return 0


def _follow_table(client: GatewayClient, seat: cpb.CompetitionSeat) -> str:
    resume = gateway_pb2.EventsRequest(table_id=seat.table_id, after_sequence=0)
    client.send(gateway_pb2.SessionRequest(resume=resume, request_id=seat.table_id))
    return seat.table_id


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


async def run_competitions(client: GatewayClient, listing: bool, competition_id: str, enter: bool) -> int:
    if listing:
        return await list_competitions(client)
    return await follow_competition(client, competition_id, enter=enter)
