"""The matchmaking service in process over a real nats-server and real gRPC on loopback,
with an injected clock and seeded seating: queues, statuses, private tables, early start
with bots, bot fill after the wait, cancel while matching, rematch, the rating window."""

from __future__ import annotations

import asyncio
import random
from collections.abc import AsyncIterator
from dataclasses import dataclass
from functools import partial

import grpc
import nats
import pytest
from mm_support import config, identity, read_matches, service_of, serving_replica

from support.clock import ManualClock
from support.nats import NatsServer
from trix.matchmaking.service import MatchmakingService
from trix.runtime.server import Runtime
from trix.v1 import common_pb2
from trix.v1 import matchmaking_pb2 as mm
from trix.v1.matchmaking_pb2_grpc import MatchmakingServiceStub as Stub

pytestmark = pytest.mark.timeout(120)

TRIX = common_pb2.VARIANT_TRIX
PARTNERSHIP = common_pb2.VARIANT_TRIX_PARTNERSHIP
SEARCHING = mm.TICKET_STATE_SEARCHING
WIDENED = mm.TICKET_STATE_WIDENED
MATCHED = mm.TICKET_STATE_MATCHED
CANCELLED = mm.TICKET_STATE_CANCELLED


class Ratings:
    """The players' ratings for this test (a rating source, not a stand-in for a service under test)."""

    def __init__(self, table: dict[str, float]) -> None:
        self.table = table

    async def rating(self, player_id: str, variant: int) -> float | None:
        return self.table.get(player_id)


@dataclass
class Env:
    clock: ManualClock
    service: MatchmakingService
    runtime: Runtime
    api: Stub
    nats_url: str


@pytest.fixture
async def env(nats_server: NatsServer, request: pytest.FixtureRequest) -> AsyncIterator[Env]:
    clock = ManualClock()
    param = getattr(request, "param", {})
    ratings = param.get("ratings", {})
    cfg = config(nats_server.url, bot_fill_after_s=param.get("bot_fill_after_s", 20.0), ticket_ttl_s=300.0)
    new_service = partial(MatchmakingService, clock=clock, rng=random.Random(7), ratings=Ratings(ratings))
    runtime, channel, api = await serving_replica(cfg, new_service)
    service = service_of(runtime)
    try:
        yield Env(clock, service, runtime, api, nats_server.url)
    finally:
        await channel.close()
        await runtime.stop()


def wish(variant: int = TRIX, stake: int | None = None, **options: object) -> mm.GameWish:
    w = mm.GameWish(variant=variant, options=common_pb2.TableOptions(**options))  # type: ignore[arg-type]
    if stake is not None:
        w.stake.coins = stake
    return w


async def enqueue(api: Stub, player: str, **kw: object) -> mm.Ticket:
    w = kw.pop("wish", None) or wish()
    request = mm.EnqueueTicketRequest(player_id=player, wish=w, **kw)  # type: ignore[arg-type]
    response = await api.EnqueueTicket(request, metadata=identity(player))
    return response.ticket


async def final(api: Stub, player: str, ticket_id: str) -> mm.Ticket:
    """The ticket's state once it reaches matched/cancelled/expired (via WatchTicket)."""
    last = None
    call = api.WatchTicket(mm.WatchTicketRequest(ticket_id=ticket_id), metadata=identity(player))
    async for item in call:
        last = item.ticket
    assert last is not None
    return last


async def status_of(coro: object) -> grpc.StatusCode:
    with pytest.raises(grpc.aio.AioRpcError) as err:
        await coro  # type: ignore[misc]
    return err.value.code()


async def test_four_compatible_tickets_make_a_table_with_the_players_names(env: Env) -> None:
    names = ["سارة", "Khalid", "", "Zoë"]  # the gateway's cleaned sign-in names; "" = none given
    tickets = [await enqueue(env.api, f"p{i}", client_seed=f"seed{i}", display_name=names[i]) for i in range(4)]
    assert all(t.state == SEARCHING for t in tickets)
    done = await asyncio.wait_for(
        asyncio.gather(*(final(env.api, f"p{i}", t.ticket_id) for i, t in enumerate(tickets))), 20
    )
    assert {t.state for t in done} == {MATCHED}
    assert len({t.table_id for t in done}) == 1
    assert sorted(t.seat for t in done) == [0, 1, 2, 3]
    (formed,) = await read_matches(env.nats_url, expect=1)
    assert formed.table_id == done[0].table_id == formed.match_id
    by_player = {s.player_id: s for s in formed.seats}
    for i, t in enumerate(done):
        assert by_player[f"p{i}"].index == t.seat
        assert by_player[f"p{i}"].client_seed == f"seed{i}"  # docs/rules.md §11 seed travels to the table
        assert by_player[f"p{i}"].display_name == names[i]  # issue 20: the others see it at the table
    assert not any(s.bot for s in formed.seats)
    assert list(formed.ticket_ids) == [next(t.ticket_id for t in done if t.seat == s) for s in range(4)]


async def test_incompatible_tickets_never_meet(env: Env) -> None:
    a = [await enqueue(env.api, f"a{i}") for i in range(2)]
    b = [await enqueue(env.api, f"b{i}", wish=wish(doubling=False)) for i in range(2)]
    c = [await enqueue(env.api, f"c{i}", wish=wish(variant=common_pb2.VARIANT_COMPLEX)) for i in range(2)]
    await asyncio.sleep(0.5)
    assert env.service.matches_formed == 0
    for group in (a, b, c):
        assert all(t.state == SEARCHING for t in group)


async def test_partners_sit_opposite(env: Env) -> None:
    w = wish(PARTNERSHIP)
    t = [
        await enqueue(env.api, "x1", wish=w, partner_id="x2"),
        await enqueue(env.api, "y1", wish=w),
        await enqueue(env.api, "x2", wish=w, partner_id="x1"),
        await enqueue(env.api, "y2", wish=w),
    ]
    players = ["x1", "y1", "x2", "y2"]
    done = await asyncio.wait_for(
        asyncio.gather(*(final(env.api, p, x.ticket_id) for p, x in zip(players, t, strict=True))), 20
    )
    seats = {p: d.seat for p, d in zip(players, done, strict=True)}
    assert seats["x2"] == (seats["x1"] + 2) % 4


async def test_bad_input_gets_clear_statuses(env: Env) -> None:
    api = env.api
    invalid = grpc.StatusCode.INVALID_ARGUMENT
    assert await status_of(enqueue(api, "q1", wish=wish(variant=0))) == invalid
    assert await status_of(enqueue(api, "q1", wish=wish(variant=99))) == invalid
    assert await status_of(enqueue(api, "q1", wish=wish(card_timeout_s=0))) == invalid
    assert await status_of(enqueue(api, "q1", wish=wish(doubling_reveal=9))) == invalid  # type: ignore[arg-type]
    assert await status_of(enqueue(api, "q1", wish=mm.GameWish(variant=TRIX, preset="nope"))) == invalid
    assert await status_of(enqueue(api, "q1", wish=wish(stake=-5))) == invalid
    assert await status_of(enqueue(api, "q1", wish=wish(stake=0))) == invalid
    assert await status_of(enqueue(api, "q1", wish=wish(stake=10**15))) == invalid
    assert await status_of(enqueue(api, "q1", partner_id="q2")) == invalid  # partner outside partnership
    assert await status_of(enqueue(api, "q1", client_seed="a|b")) == invalid
    # A seat's name is shown to the others: no bidi override, escape or over-long name gets in.
    assert await status_of(enqueue(api, "q1", display_name="evil\u202eman")) == invalid
    assert await status_of(enqueue(api, "q1", display_name="\x1b[31mred")) == invalid
    assert await status_of(enqueue(api, "q1", display_name="a" * 33)) == invalid
    ok = await enqueue(api, "q1")
    assert await status_of(enqueue(api, "q1")) == grpc.StatusCode.ALREADY_EXISTS
    again = await enqueue(api, "q9", request_id="r1")
    assert (await enqueue(api, "q9", request_id="r1")).ticket_id == again.ticket_id  # idempotent repeat
    # Identity: no token, a bad token, or another player's ticket.
    bare = mm.EnqueueTicketRequest(player_id="q3", wish=wish())
    assert await status_of(api.EnqueueTicket(bare)) == grpc.StatusCode.UNAUTHENTICATED
    forged = (("x-trix-identity", "v1.q3.99999999999.00"),)
    assert await status_of(api.EnqueueTicket(bare, metadata=forged)) == grpc.StatusCode.UNAUTHENTICATED
    other = mm.CancelTicketRequest(ticket_id=ok.ticket_id)
    assert await status_of(api.CancelTicket(other, metadata=identity("q2"))) == grpc.StatusCode.PERMISSION_DENIED
    missing = mm.CancelTicketRequest(ticket_id="00deadbeef")
    assert await status_of(api.CancelTicket(missing, metadata=identity("q1"))) == grpc.StatusCode.NOT_FOUND
    # Paid tickets need the wallet; none is configured here, so they are refused, never queued unheld.
    assert await status_of(enqueue(api, "q4", wish=wish(stake=100))) == grpc.StatusCode.UNAVAILABLE
    assert await status_of(enqueue(api, "q4", wish=wish(stake=100))) == grpc.StatusCode.UNAVAILABLE


async def test_cancel_and_cancel_while_matching(env: Env) -> None:
    t = await enqueue(env.api, "c1")
    cancelled = await env.api.CancelTicket(mm.CancelTicketRequest(ticket_id=t.ticket_id), metadata=identity("c1"))
    assert cancelled.ticket.state == CANCELLED
    assert (await final(env.api, "c1", t.ticket_id)).state == CANCELLED
    # Race cancels against the matcher: each ticket ends matched or cancelled, never both.
    for round_ in range(5):
        players = [f"r{round_}-{i}" for i in range(4)]
        ts = [await enqueue(env.api, p) for p in players]
        results = await asyncio.gather(
            *(
                env.api.CancelTicket(mm.CancelTicketRequest(ticket_id=ts[i].ticket_id), metadata=identity(players[i]))
                for i in (0, 1)
            ),
            return_exceptions=True,
        )
        matched = [isinstance(r, grpc.aio.AioRpcError) for r in results]
        for r in results:
            if isinstance(r, grpc.aio.AioRpcError):
                assert r.code() == grpc.StatusCode.FAILED_PRECONDITION  # it was matched first
            else:
                assert r.ticket.state == CANCELLED
        if any(matched):  # the group formed before the cancels: all four are matched, none cancelled
            assert all(matched)
            for p, x in zip(players, ts, strict=True):
                assert (await asyncio.wait_for(final(env.api, p, x.ticket_id), 10)).state == MATCHED
        else:  # both cancelled first: the other two still search
            for p, x in zip(players[2:], ts[2:], strict=True):
                cancel = mm.CancelTicketRequest(ticket_id=x.ticket_id)
                assert (await env.api.CancelTicket(cancel, metadata=identity(p))).ticket.state == CANCELLED
    formed = await read_matches(env.nats_url)
    seated = [s.player_id for m in formed for s in m.seats if s.player_id]
    assert len(seated) == len(set(seated))


async def test_bot_fill_after_the_wait_on_free_tables_only(env: Env) -> None:
    t = await enqueue(env.api, "solo")
    t2 = await enqueue(env.api, "duo")
    await asyncio.sleep(0.3)
    env.clock.advance(19.0)
    await asyncio.sleep(0.3)
    assert env.service.matches_formed == 0
    env.clock.advance(1.5)  # 20 s: bots fill
    done = await asyncio.wait_for(final(env.api, "solo", t.ticket_id), 10)
    assert done.state == MATCHED
    assert (await final(env.api, "duo", t2.ticket_id)).table_id == done.table_id
    (formed,) = await read_matches(env.nats_url, expect=1)
    assert sum(s.bot for s in formed.seats) == 2
    assert not formed.HasField("stake")


RATINGS = {
    "far": 1900,
    "near1": 1500,
    "near2": 1520,
    "near3": 1480,
    "near4": 1510,
    "late1": 1500,
    "late2": 1500,
    "late3": 1500,
}


@pytest.mark.parametrize("env", [{"ratings": RATINGS, "bot_fill_after_s": 1000.0}], indirect=True)
async def test_rating_window_widens_with_the_wait(env: Env) -> None:
    far = await enqueue(env.api, "far")
    env.clock.advance(1.0)
    near = [await enqueue(env.api, f"near{i}") for i in range(1, 5)]
    # Close ratings match first; far (400 away, window 100 + 10/s) keeps waiting.
    done = await asyncio.wait_for(
        asyncio.gather(*(final(env.api, f"near{i + 1}", t.ticket_id) for i, t in enumerate(near))), 10
    )
    assert {t.state for t in done} == {MATCHED}
    env.clock.advance(10.0)  # far waited 11 s: window 210
    watch = env.api.WatchTicket(mm.WatchTicketRequest(ticket_id=far.ticket_id), metadata=identity("far"))
    states = []
    async for item in watch:
        states.append(item.ticket.state)
        if item.ticket.state == WIDENED:
            break
    assert states[-1] == WIDENED
    late = [await enqueue(env.api, p) for p in ("late1", "late2", "late3")]
    await asyncio.sleep(0.5)
    assert env.service.matches_formed == 1  # 400 away is outside far's window of 210
    env.clock.advance(20.0)  # far waited 31 s: window 410 covers the three
    got = await asyncio.wait_for(final(env.api, "far", far.ticket_id), 10)
    assert got.state == MATCHED
    tables = {
        (await final(env.api, p, t.ticket_id)).table_id for p, t in zip(("late1", "late2", "late3"), late, strict=True)
    }
    assert tables == {got.table_id}


async def test_private_table_join_full_wrong_code(env: Env) -> None:
    api = env.api
    created = await api.CreatePrivateTable(
        mm.CreatePrivateTableRequest(player_id="h", wish=wish(), client_seed="hs"), metadata=identity("h")
    )
    code = created.code
    assert len(code) == 6 and created.ticket.state == SEARCHING
    bad = mm.JoinPrivateTableRequest(code="ZZZZZZ")
    assert await status_of(api.JoinPrivateTable(bad, metadata=identity("f1"))) == grpc.StatusCode.NOT_FOUND
    joins = []
    for p in ("f1", "f2", "f3"):
        r = await api.JoinPrivateTable(
            mm.JoinPrivateTableRequest(code=code.lower(), client_seed=p), metadata=identity(p)
        )
        joins.append(r.ticket)
    assert joins[-1].state == MATCHED
    full = mm.JoinPrivateTableRequest(code=code)
    assert await status_of(api.JoinPrivateTable(full, metadata=identity("f4"))) == grpc.StatusCode.FAILED_PRECONDITION
    host = await final(api, "h", created.ticket.ticket_id)
    assert host.state == MATCHED and host.table_id == joins[-1].table_id
    (formed,) = await read_matches(env.nats_url, expect=1)
    assert {s.player_id for s in formed.seats} == {"h", "f1", "f2", "f3"}
    # Starting a started table returns the same table; only the host may start.
    assert (
        await api.StartPrivateTable(mm.StartPrivateTableRequest(code=code), metadata=identity("h"))
    ).table_id == host.table_id
    denied = mm.StartPrivateTableRequest(code=code)
    assert await status_of(api.StartPrivateTable(denied, metadata=identity("f1"))) == grpc.StatusCode.PERMISSION_DENIED


async def test_private_table_early_start_with_bots_and_rematch(env: Env) -> None:
    api = env.api
    host = mm.CreatePrivateTableRequest(wish=wish(), display_name="Host")
    created = await api.CreatePrivateTable(host, metadata=identity("host"))
    joining = mm.JoinPrivateTableRequest(code=created.code, display_name="صديق")
    await api.JoinPrivateTable(joining, metadata=identity("guest"))
    started = await api.StartPrivateTable(mm.StartPrivateTableRequest(code=created.code), metadata=identity("host"))
    (formed,) = await read_matches(env.nats_url, expect=1)
    assert formed.table_id == started.table_id
    assert sum(s.bot for s in formed.seats) == 2
    assert {s.player_id: s.display_name for s in formed.seats} == {"host": "Host", "guest": "صديق", "": ""}
    seats = {s.player_id: s.index for s in formed.seats if not s.bot}
    # Rematch: both humans accept; same seats, new table, bots again in the bot seats after the wait.
    r1 = await api.Rematch(mm.RematchRequest(table_id=started.table_id), metadata=identity("host"))
    assert r1.ticket.state == SEARCHING
    outsider = mm.RematchRequest(table_id=started.table_id)
    assert await status_of(api.Rematch(outsider, metadata=identity("nobody"))) == grpc.StatusCode.PERMISSION_DENIED
    r2 = await api.Rematch(
        mm.RematchRequest(table_id=started.table_id, display_name="Guest"), metadata=identity("guest")
    )
    assert r2.ticket.state == MATCHED
    assert r2.ticket.table_id != started.table_id
    assert r2.ticket.seat == seats["guest"]
    assert (await final(api, "host", r1.ticket.ticket_id)).seat == seats["host"]
    # Paid private tables never start with bots (refused before any bot is seated).
    unknown = mm.RematchRequest(table_id="mnotatable")
    assert await status_of(api.Rematch(unknown, metadata=identity("host"))) == grpc.StatusCode.NOT_FOUND


async def test_host_cancel_closes_the_private_table(env: Env) -> None:
    api = env.api
    created = await api.CreatePrivateTable(mm.CreatePrivateTableRequest(wish=wish()), metadata=identity("h2"))
    g = await api.JoinPrivateTable(mm.JoinPrivateTableRequest(code=created.code), metadata=identity("g2"))
    await api.CancelTicket(mm.CancelTicketRequest(ticket_id=created.ticket.ticket_id), metadata=identity("h2"))
    assert (await final(api, "g2", g.ticket.ticket_id)).state == CANCELLED
    late = mm.JoinPrivateTableRequest(code=created.code)
    assert await status_of(api.JoinPrivateTable(late, metadata=identity("g3"))) == grpc.StatusCode.FAILED_PRECONDITION
    # The guest is free to queue again.
    assert (await enqueue(api, "g2")).state == SEARCHING


async def test_ticket_watchers_share_one_subscription_not_a_consumer_each(env: Env) -> None:
    """nats-server allows 1,000 consumers per stream: a KV watch per WatchTicket made a ramp of
    ~1,000 waiting players fail with INTERNAL. Watchers hold no consumer and still see every
    change of their ticket (here: the match that seats them)."""
    nc = await nats.connect(env.nats_url)
    try:
        js = nc.jetstream()
        before = (await js.stream_info("KV_match_tickets")).state.consumer_count
        tickets = [await enqueue(env.api, f"w{i}") for i in range(3)]
        calls = [
            env.api.WatchTicket(mm.WatchTicketRequest(ticket_id=t.ticket_id), metadata=identity(f"w{i}"))
            for i, t in enumerate(tickets)
        ]
        streams = [call.__aiter__() for call in calls]
        firsts = [await asyncio.wait_for(s.__anext__(), 10) for s in streams]
        assert [f.ticket.state for f in firsts] == [SEARCHING] * 3
        during = (await js.stream_info("KV_match_tickets")).state.consumer_count
        assert during == before, f"{during - before} consumers for 3 ticket watchers"
        fourth = await enqueue(env.api, "w3")

        async def last_state(stream: AsyncIterator[mm.WatchTicketResponse]) -> mm.Ticket:
            last = None
            async for item in stream:
                last = item.ticket
            assert last is not None
            return last

        done = await asyncio.wait_for(
            asyncio.gather(*(last_state(s) for s in streams), final(env.api, "w3", fourth.ticket_id)), 20
        )
        assert {t.state for t in done} == {MATCHED}
        assert len({t.table_id for t in done}) == 1
    finally:
        await nc.close()


async def test_idle_partitions_sleep_until_a_ticket_arrives(env: Env) -> None:
    """Sixteen partitions ticking every 50 ms with nothing queued cost ~10 % of a core for a
    whole load test: an idle partition waits for a change of its keys (at most 1 s), and a
    ticket that arrives is still matched at once."""
    rounds: list[int] = []
    original = env.service.run_partition

    async def counted(partition: int) -> int:
        rounds.append(partition)
        return await original(partition)

    env.service.run_partition = counted  # type: ignore[method-assign]
    await asyncio.sleep(2.0)
    partitions = len(env.service.pools)
    assert partitions == env.service.config.partitions
    assert len(rounds) <= partitions * 4, f"{len(rounds)} rounds in 2 s over {partitions} idle partitions"
    tickets = [await enqueue(env.api, f"i{i}") for i in range(4)]
    done = await asyncio.wait_for(
        asyncio.gather(*(final(env.api, f"i{i}", t.ticket_id) for i, t in enumerate(tickets))), 20
    )
    assert {t.state for t in done} == {MATCHED}


async def test_paid_ticket_without_a_wallet_is_refused_before_anything_is_stored(env: Env) -> None:
    """docs/rules.md §13: a stake must be held before a paid ticket searches. With no wallet
    configured (no scoring service) a paid find-match is refused with a message a client can
    show, and nothing is left behind: the player is not locked, so a free ticket goes through."""
    with pytest.raises(grpc.aio.AioRpcError) as err:
        await enqueue(env.api, "payer", wish=wish(stake=50), request_id="r-paid")
    assert err.value.code() == grpc.StatusCode.UNAVAILABLE
    assert "wallet" in (err.value.details() or "")
    free = await enqueue(env.api, "payer", request_id="r-free")
    assert free.state == SEARCHING


@pytest.mark.parametrize("variant", [PARTNERSHIP, common_pb2.VARIANT_COMPLEX_PARTNERSHIP])
async def test_friends_at_a_private_partnership_table_sit_opposite_as_partners(env: Env, variant: int) -> None:
    """docs/rules.md §1: partners sit opposite (seats s and s + 2). The host and the first
    friend to join are partners, with bots (an early start) or with two more friends, who
    are then the other team (before, the seats were shuffled: host 2 and friend 1)."""
    api = env.api
    duo = await api.CreatePrivateTable(mm.CreatePrivateTableRequest(wish=wish(variant)), metadata=identity("h"))
    await api.JoinPrivateTable(mm.JoinPrivateTableRequest(code=duo.code), metadata=identity("f"))
    await api.StartPrivateTable(mm.StartPrivateTableRequest(code=duo.code), metadata=identity("h"))
    full = await api.CreatePrivateTable(mm.CreatePrivateTableRequest(wish=wish(variant)), metadata=identity("h4"))
    for p in ("a4", "b4", "c4"):
        await api.JoinPrivateTable(mm.JoinPrivateTableRequest(code=full.code), metadata=identity(p))
    formed = await read_matches(env.nats_url, expect=2)
    seats = [{s.player_id: s.index for s in m.seats if not s.bot} for m in formed]
    two = next(s for s in seats if "h" in s)
    four = next(s for s in seats if "h4" in s)
    assert two["f"] == (two["h"] + 2) % 4
    assert four["a4"] == (four["h4"] + 2) % 4
    assert four["c4"] == (four["b4"] + 2) % 4


async def test_the_players_of_a_private_table_see_who_joined_with_their_teams(env: Env) -> None:
    """Issue 39: the host sees who has joined before the start, in the order of joining, and in a
    partnership variant the team each will play in (the host and the first friend: team 0);
    only the table's players see it."""
    api = env.api
    pair = await api.CreatePrivateTable(
        mm.CreatePrivateTableRequest(wish=wish(PARTNERSHIP), display_name="Host"), metadata=identity("h")
    )
    for p in ("a", "b"):
        await api.JoinPrivateTable(
            mm.JoinPrivateTableRequest(code=pair.code, display_name=p.upper()), metadata=identity(p)
        )
    listed = await api.GetPrivateTable(mm.GetPrivateTableRequest(code=pair.code.lower()), metadata=identity("b"))
    assert [(p.display_name, p.host, p.team) for p in listed.players] == [
        ("Host", True, 0),
        ("A", False, 0),
        ("B", False, 1),
    ]
    assert not listed.closed
    outsider = mm.GetPrivateTableRequest(code=pair.code)
    assert await status_of(api.GetPrivateTable(outsider, metadata=identity("x"))) == grpc.StatusCode.PERMISSION_DENIED
    unknown = mm.GetPrivateTableRequest(code="ZZZZZZ")
    assert await status_of(api.GetPrivateTable(unknown, metadata=identity("h"))) == grpc.StatusCode.NOT_FOUND
    await api.StartPrivateTable(mm.StartPrivateTableRequest(code=pair.code), metadata=identity("h"))
    assert (await api.GetPrivateTable(mm.GetPrivateTableRequest(code=pair.code), metadata=identity("h"))).closed
    solo = await api.CreatePrivateTable(mm.CreatePrivateTableRequest(wish=wish()), metadata=identity("s"))
    singles = await api.GetPrivateTable(mm.GetPrivateTableRequest(code=solo.code), metadata=identity("s"))
    assert [(p.host, p.team) for p in singles.players] == [(True, -1)]


async def test_the_host_of_a_private_partnership_table_chooses_his_partner(env: Env) -> None:
    """The host arranges the seats before the start: the friend he names sits opposite him
    (docs/rules.md §1); a partner outside a partnership variant or beyond those who joined is
    refused with INVALID_ARGUMENT."""
    api = env.api
    table = await api.CreatePrivateTable(mm.CreatePrivateTableRequest(wish=wish(PARTNERSHIP)), metadata=identity("h"))
    for p in ("a", "b"):
        await api.JoinPrivateTable(mm.JoinPrivateTableRequest(code=table.code), metadata=identity(p))
    beyond = mm.StartPrivateTableRequest(code=table.code, partner=3)
    assert await status_of(api.StartPrivateTable(beyond, metadata=identity("h"))) == grpc.StatusCode.INVALID_ARGUMENT
    solo = await api.CreatePrivateTable(mm.CreatePrivateTableRequest(wish=wish()), metadata=identity("s"))
    await api.JoinPrivateTable(mm.JoinPrivateTableRequest(code=solo.code), metadata=identity("t"))
    singles = mm.StartPrivateTableRequest(code=solo.code, partner=1)
    assert await status_of(api.StartPrivateTable(singles, metadata=identity("s"))) == grpc.StatusCode.INVALID_ARGUMENT
    await api.StartPrivateTable(mm.StartPrivateTableRequest(code=table.code, partner=2), metadata=identity("h"))
    (formed,) = await read_matches(env.nats_url, expect=1)
    seats = {s.player_id: s.index for s in formed.seats if not s.bot}
    assert seats["b"] == (seats["h"] + 2) % 4
    assert seats["a"] in {(seats["h"] + 1) % 4, (seats["h"] + 3) % 4}
