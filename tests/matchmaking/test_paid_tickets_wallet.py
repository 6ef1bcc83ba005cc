"""Paid tickets end to end with the real scoring wallet (docs/rules.md §13): the matchmaking
service in process with an injected clock, the real scoring service (its gRPC server on
loopback, its journal on the same real nats-server). The stake is held through HoldStake
when the ticket is made and released through ReleaseStake on cancel or expiry; a short
balance cannot join; a paid table seats four players whose stakes are held, never a bot;
coins are conserved throughout."""

from __future__ import annotations

import asyncio
import random
from collections.abc import AsyncIterator
from dataclasses import dataclass
from functools import partial

import grpc
import pytest
from mm_support import KEYS, ScoringApp, config, identity, read_matches, service_of, serving_replica

from support.clock import ManualClock
from support.nats import NatsServer
from trix.gateway.upstream import GrpcMatchmaking
from trix.matchmaking.service import MatchmakingService
from trix.matchmaking.wallet import ScoringWallet
from trix.runtime.server import Runtime
from trix.v1 import common_pb2, gateway_pb2
from trix.v1 import matchmaking_pb2 as mm
from trix.v1.matchmaking_pb2_grpc import MatchmakingServiceStub as Stub

pytestmark = pytest.mark.timeout(120)

STAKE = 100


@dataclass
class Env:
    clock: ManualClock
    service: MatchmakingService
    runtime: Runtime
    api: Stub
    scoring: ScoringApp
    nats_url: str


@pytest.fixture
async def env(nats_server: NatsServer) -> AsyncIterator[Env]:
    scoring = ScoringApp(nats_server.url)
    await scoring.start()
    clock = ManualClock()
    cfg = config(nats_server.url, bot_fill_after_s=20.0, ticket_ttl_s=300.0, scoring_target=scoring.address)
    wallet = ScoringWallet(scoring.address, cfg.keys.signer("matchmaking"), timeout_s=10.0)
    new_service = partial(MatchmakingService, clock=clock, rng=random.Random(11), wallet=wallet)
    runtime, channel, api = await serving_replica(cfg, new_service)
    service = service_of(runtime)
    try:
        yield Env(clock, service, runtime, api, scoring, nats_server.url)
    finally:
        await channel.close()
        await runtime.stop()
        await wallet.close()
        await scoring.stop()


def paid(stake: int = STAKE) -> mm.GameWish:
    wish = mm.GameWish(variant=common_pb2.VARIANT_TRIX)
    wish.stake.coins = stake
    return wish


async def enqueue(api: Stub, player: str, wish: mm.GameWish | None = None) -> mm.Ticket:
    request = mm.EnqueueTicketRequest(wish=wish or paid(), request_id=f"rq-{player}")
    return (await api.EnqueueTicket(request, metadata=identity(player), timeout=30)).ticket


async def final(api: Stub, player: str, ticket_id: str) -> mm.Ticket:
    last = None
    call = api.WatchTicket(mm.WatchTicketRequest(ticket_id=ticket_id), metadata=identity(player), timeout=30)
    async for item in call:
        last = item.ticket
    assert last is not None
    return last


async def assert_conserved(scoring: ScoringApp) -> None:
    """docs/rules.md §13: balances + held stakes + pots + house = every coin ever granted."""
    t = await scoring.totals()
    assert t.available + t.held + t.pots + t.house == t.granted, t


async def test_paid_ticket_holds_the_stake_and_cancel_releases_it(env: Env) -> None:
    await env.scoring.grant("alice", 1000)
    ticket = await enqueue(env.api, "alice")
    assert ticket.state == mm.TICKET_STATE_SEARCHING
    assert ticket.wish.stake.coins == STAKE
    assert await env.scoring.balance("alice") == (900, 100)
    # The same request again is the same ticket: the stake is held once.
    assert (await enqueue(env.api, "alice")).ticket_id == ticket.ticket_id
    assert await env.scoring.balance("alice") == (900, 100)
    await assert_conserved(env.scoring)
    cancel = mm.CancelTicketRequest(ticket_id=ticket.ticket_id)
    done = await env.api.CancelTicket(cancel, metadata=identity("alice"), timeout=30)
    assert done.ticket.state == mm.TICKET_STATE_CANCELLED
    assert await env.scoring.balance("alice") == (1000, 0)
    # A repeated cancel (a client retrying after a lost answer) releases nothing twice.
    again = await env.api.CancelTicket(cancel, metadata=identity("alice"), timeout=30)
    assert again.ticket.state == mm.TICKET_STATE_CANCELLED
    assert await env.scoring.balance("alice") == (1000, 0)
    await assert_conserved(env.scoring)
    assert (await env.scoring.totals()).granted == 1000


async def test_paid_ticket_that_expires_releases_its_stake(env: Env) -> None:
    await env.scoring.grant("bob", 500)
    ticket = await enqueue(env.api, "bob")
    assert await env.scoring.balance("bob") == (400, 100)
    env.clock.advance(301.0)  # past the ticket TTL (300 s): the partition owner expires it
    done = await asyncio.wait_for(final(env.api, "bob", ticket.ticket_id), 20)
    assert done.state == mm.TICKET_STATE_EXPIRED
    for _ in range(100):  # the release follows the EXPIRED write
        if await env.scoring.balance("bob") == (500, 0):
            break
        await asyncio.sleep(0.05)
    assert await env.scoring.balance("bob") == (500, 0)
    await assert_conserved(env.scoring)


async def test_short_balance_cannot_join_and_nothing_is_held(env: Env) -> None:
    await env.scoring.grant("carol", 50)
    for player in ("carol", "nobody"):  # short, and never granted anything
        with pytest.raises(grpc.aio.AioRpcError) as err:
            await enqueue(env.api, player)
        # trix.errors maps an insufficient balance to RESOURCE_EXHAUSTED (scoring says FAILED_PRECONDITION).
        assert err.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
        assert "balance does not cover the stake of 100 coins" in (err.value.details() or "")
    assert await env.scoring.balance("carol") == (50, 0)
    assert await env.scoring.balance("nobody") == (0, 0)
    # Nothing of the refused ticket is left behind: the player may queue for a stake he covers.
    ok = mm.EnqueueTicketRequest(wish=paid(50))
    got = await env.api.EnqueueTicket(ok, metadata=identity("carol"), timeout=30)
    assert got.ticket.state == mm.TICKET_STATE_SEARCHING
    assert await env.scoring.balance("carol") == (0, 50)
    await assert_conserved(env.scoring)


async def test_paid_table_seats_only_covered_players_never_a_bot(env: Env) -> None:
    players = ["p1", "p2", "p3", "p4"]
    for p in players:
        await env.scoring.grant(p, 1000)
    await env.scoring.grant("poor", 99)
    first = [await enqueue(env.api, p) for p in players[:2]]
    with pytest.raises(grpc.aio.AioRpcError) as err:
        await enqueue(env.api, "poor")
    assert err.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
    # Two paid tickets wait far past the bot-fill wait: bots never sit at paid tables.
    await asyncio.sleep(0.3)
    env.clock.advance(60.0)
    await asyncio.sleep(0.5)
    assert env.service.matches_formed == 0
    rest = [await enqueue(env.api, p) for p in players[2:]]
    done = await asyncio.wait_for(
        asyncio.gather(*(final(env.api, p, t.ticket_id) for p, t in zip(players, first + rest, strict=True))), 20
    )
    assert {t.state for t in done} == {mm.TICKET_STATE_MATCHED}
    (formed,) = await read_matches(env.nats_url, expect=1)
    assert formed.stake.coins == STAKE
    assert not any(s.bot for s in formed.seats)
    assert sorted(s.player_id for s in formed.seats) == players
    assert sorted(formed.ticket_ids) == sorted(t.ticket_id for t in first + rest)
    # Each seated player's stake is held exactly once (it moves to the pot when the table is created).
    for p in players:
        assert await env.scoring.balance(p) == (900, 100)
    assert await env.scoring.balance("poor") == (99, 0)
    totals = await env.scoring.totals()
    assert totals.held == 4 * STAKE
    await assert_conserved(env.scoring)


async def test_a_paid_ticket_whose_wallet_was_unavailable_is_resumed_by_the_same_request(env: Env) -> None:
    """Issue 19: a find-match answered UNAVAILABLE because the wallet (scoring) did not answer is
    not a refusal. The ticket stays HOLDING, and the same request asked again once scoring is
    back (as the gateway does, `trix.gateway.upstream`) resumes it: one ticket, SEARCHING, its
    stake held once. (The failed attempt used to cancel the ticket, so its retry got a dead
    ticket and the player was never seated.)"""
    await env.scoring.grant("dora", 1000)
    port = env.scoring.address.rsplit(":", 1)[1]
    await env.scoring.stop()
    env.scoring.env["TRIX_GRPC_PORT"] = port  # back on the address the wallet calls
    with pytest.raises(grpc.aio.AioRpcError) as err:
        await enqueue(env.api, "dora")
    assert err.value.code() == grpc.StatusCode.UNAVAILABLE
    await env.scoring.start()
    loop = asyncio.get_running_loop()
    deadline = loop.time() + 30.0
    while True:  # the wallet's channel reconnects after its backoff
        try:
            ticket = await enqueue(env.api, "dora")
            break
        except grpc.aio.AioRpcError as again:
            if again.code() != grpc.StatusCode.UNAVAILABLE or loop.time() > deadline:
                raise
            await asyncio.sleep(0.2)
    assert ticket.state == mm.TICKET_STATE_SEARCHING
    assert await env.scoring.balance("dora") == (900, 100)
    await assert_conserved(env.scoring)


async def test_find_match_through_the_gateway_rides_out_a_wallet_outage(env: Env) -> None:
    """Issue 19: the gateway's find-match (`trix.gateway.upstream.GrpcMatchmaking.enqueue`)
    asks again, with the same request id, while matchmaking answers UNAVAILABLE (here: its
    wallet, scoring, is down for 2 s; in `make fault-nats`, its buckets electing a leader): the
    client gets its one ticket, never UNAVAILABLE, and its stake is held once."""
    await env.scoring.grant("erin", 1000)
    port = env.scoring.address.rsplit(":", 1)[1]
    await env.scoring.stop()
    env.scoring.env["TRIX_GRPC_PORT"] = port
    upstream = GrpcMatchmaking(env.runtime.address, KEYS.player, timeout_s=5.0)
    try:
        find = asyncio.ensure_future(upstream.enqueue("erin", gateway_pb2.FindMatchRequest(wish=paid())))
        await asyncio.sleep(2.0)
        assert not find.done()  # asked again and again, not refused
        await env.scoring.start()
        ticket = await asyncio.wait_for(find, 30)
    finally:
        await upstream.close()
    assert ticket.state == mm.TICKET_STATE_SEARCHING
    assert await env.scoring.balance("erin") == (900, 100)
    await assert_conserved(env.scoring)
