"""The rating window uses the players' real ratings from the scoring service: a rated game
is published as the table service reports it, the real scoring service rates it, and the
matchmaking service (in process, injected clock) reads each player's rating through
scoring's gRPC API. A new player gets the default; a scoring that is down costs an enqueue
nothing and matching goes on with default ratings."""

from __future__ import annotations

import asyncio
import random
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from functools import partial

import pytest
from mm_support import ScoringApp, config, identity, publish_rated_game, service_of, serving_replica

from support.clock import ManualClock
from support.nats import NatsServer
from trix.matchmaking.records import SEARCHING
from trix.matchmaking.service import MatchmakingService
from trix.matchmaking.wallet import ScoringRatings
from trix.runtime.server import Runtime
from trix.v1 import common_pb2, scoring_pb2
from trix.v1 import matchmaking_pb2 as mm
from trix.v1.matchmaking_pb2_grpc import MatchmakingServiceStub as Stub

pytestmark = pytest.mark.timeout(120)

DEFAULT = 1500.0
SCALE = 20.0
WINNERS = ["w1", "w2", "w3", "w4"]


@dataclass
class Env:
    clock: ManualClock
    service: MatchmakingService
    runtime: Runtime
    api: Stub
    scoring: ScoringApp
    ratings: ScoringRatings


async def scoring_rating(scoring: ScoringApp, player: str) -> float:
    request = scoring_pb2.GetLeaderboardRequest(variant=common_pb2.VARIANT_TRIX, page_size=1, around_player_id=player)
    (row,) = (await scoring.stub.GetLeaderboard(request, timeout=10)).entries
    assert row.player_id == player
    return row.rating


@pytest.fixture
async def env(nats_server: NatsServer) -> AsyncIterator[Env]:
    scoring = ScoringApp(nats_server.url)
    await scoring.start()
    await publish_rated_game(nats_server.url, "mrated1", WINNERS, [1, 2, 3, 4])
    deadline = time.monotonic() + 30
    while True:  # scoring consumes the game and rates its four players
        try:
            await scoring_rating(scoring, "w4")
            break
        except Exception:
            if time.monotonic() > deadline:
                raise
            await asyncio.sleep(0.1)
    clock = ManualClock()
    cfg = config(nats_server.url, bot_fill_after_s=1000.0, scoring_target=scoring.address)
    ratings = ScoringRatings(scoring.address, default=DEFAULT, scale=SCALE, timeout_s=2.0)
    new_service = partial(MatchmakingService, clock=clock, rng=random.Random(5), ratings=ratings)
    runtime, channel, api = await serving_replica(cfg, new_service)
    service = service_of(runtime)
    try:
        yield Env(clock, service, runtime, api, scoring, ratings)
    finally:
        await channel.close()
        await runtime.stop()
        await ratings.close()
        await scoring.stop()


async def enqueue(api: Stub, player: str) -> mm.Ticket:
    request = mm.EnqueueTicketRequest(wish=mm.GameWish(variant=common_pb2.VARIANT_TRIX))
    return (await api.EnqueueTicket(request, metadata=identity(player), timeout=30)).ticket


async def stored_rating(service: MatchmakingService, ticket_id: str) -> float:
    got = await service.tickets.get_ticket(ticket_id)
    assert got is not None
    return got[0].rating


async def test_ratings_come_from_scoring_and_a_new_player_gets_the_default(env: Env) -> None:
    top = await scoring_rating(env.scoring, "w1")
    bottom = await scoring_rating(env.scoring, "w4")
    assert top > bottom
    t1 = await enqueue(env.api, "w1")
    t4 = await enqueue(env.api, "w4")
    fresh = await enqueue(env.api, "newcomer")
    assert await stored_rating(env.service, t1.ticket_id) == pytest.approx(DEFAULT + SCALE * top)
    assert await stored_rating(env.service, t4.ticket_id) == pytest.approx(DEFAULT + SCALE * bottom)
    assert await stored_rating(env.service, fresh.ticket_id) == DEFAULT  # no rated game yet
    assert env.ratings.failures == 0


async def test_rating_window_keeps_a_distant_scoring_rating_apart(env: Env) -> None:
    top = DEFAULT + SCALE * await scoring_rating(env.scoring, "w1")
    assert top - DEFAULT > env.service.window.base  # w1 is outside a newcomer's window at once
    far = await enqueue(env.api, "w1")
    near = [await enqueue(env.api, f"n{i}") for i in range(4)]
    for _ in range(200):
        if env.service.matches_formed == 1:
            break
        await asyncio.sleep(0.05)
    assert env.service.matches_formed == 1
    for i, t in enumerate(near):
        got = await env.service.ticket(f"n{i}", t.ticket_id)
        assert got.state == "MATCHED"
    assert (await env.service.ticket("w1", far.ticket_id)).state == SEARCHING
    # Once w1's window has widened past the distance, it meets newcomers.
    env.clock.advance((top - DEFAULT) / env.service.window.growth_per_s + 1.0)
    late = [await enqueue(env.api, f"l{i}") for i in range(3)]
    for _ in range(200):
        if env.service.matches_formed == 2:
            break
        await asyncio.sleep(0.05)
    assert (await env.service.ticket("w1", far.ticket_id)).state == "MATCHED"
    assert {(await env.service.ticket(f"l{i}", t.ticket_id)).table_id for i, t in enumerate(late)} == {
        (await env.service.ticket("w1", far.ticket_id)).table_id
    }


async def test_matching_goes_on_with_default_ratings_when_scoring_is_down(env: Env) -> None:
    await env.scoring.stop()
    started = time.monotonic()
    tickets = [await enqueue(env.api, p) for p in WINNERS]  # rated players, but scoring is gone
    assert time.monotonic() - started < 8.0  # the first lookup fails fast, the rest skip scoring
    for t in tickets:
        assert await stored_rating(env.service, t.ticket_id) == DEFAULT
    for _ in range(200):
        if env.service.matches_formed == 1:
            break
        await asyncio.sleep(0.05)
    assert env.service.matches_formed == 1
    assert env.ratings.failures == 1  # after one failure scoring is left alone for a while
