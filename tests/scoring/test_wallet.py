"""Wallets over real gRPC and a real nats-server: grants need the admin credential, holds
and releases are idempotent, a short balance cannot hold a stake (docs/rules.md §13), and
paid tables settle exactly once by §13 (rake, equal split, remainder to the lowest seat,
refund of a table that never started, §10 leaver ranking)."""

from __future__ import annotations

import hashlib
import json
from typing import Any

import grpc
import pytest
from scoring_support import ADMIN, KEYS, EventPublisher, InProcessScoring, identity, scoring_env

from support.nats import NatsServer
from support.waiting import eventually
from trix import engine, fairness
from trix.runtime.config import ConfigError
from trix.runtime.identity import IDENTITY_METADATA, PLAYER_KEY_ENV, PLAYER_METADATA, public_key_env
from trix.scoring.config import ScoringConfig
from trix.v1 import common_pb2, scoring_pb2

STARTED_RECORD = json.dumps({"format": "trix-game/1", "deals": [{"plays": [{"seat": 0, "card": "2C"}]}]})
NEVER_STARTED_RECORD = json.dumps({"format": "trix-game/1", "deals": []})


async def grant(app: InProcessScoring, player: str, amount: int, grant_id: str | None = None) -> None:
    await app.stub.Grant(
        scoring_pb2.GrantRequest(player_id=player, amount=amount, grant_id=grant_id or f"g-{player}"), metadata=ADMIN
    )


async def balance(app: InProcessScoring, player: str) -> tuple[int, int]:
    b = await app.stub.GetBalance(scoring_pb2.GetBalanceRequest(player_id=player), metadata=ADMIN)
    return b.available, b.held


async def test_grant_needs_admin_credential(scoring: InProcessScoring) -> None:
    request = scoring_pb2.GrantRequest(player_id="p1", amount=100, grant_id="g1")
    with pytest.raises(grpc.aio.AioRpcError) as missing:
        await scoring.stub.Grant(request)
    assert missing.value.code() == grpc.StatusCode.UNAUTHENTICATED
    with pytest.raises(grpc.aio.AioRpcError) as wrong:
        await scoring.stub.Grant(request, metadata=(("x-trix-admin-token", "guess"),))
    assert wrong.value.code() == grpc.StatusCode.PERMISSION_DENIED
    with pytest.raises(grpc.aio.AioRpcError) as audit:
        await scoring.stub.GetWalletTotals(scoring_pb2.GetWalletTotalsRequest())
    assert audit.value.code() == grpc.StatusCode.UNAUTHENTICATED
    assert await balance(scoring, "p1") == (0, 0)
    reply = await scoring.stub.Grant(request, metadata=ADMIN)
    assert (reply.balance.available, reply.balance.held) == (100, 0)
    again = await scoring.stub.Grant(request, metadata=ADMIN)  # same grant id: applied once
    assert again.balance.available == 100
    with pytest.raises(grpc.aio.AioRpcError) as other:
        await scoring.stub.Grant(scoring_pb2.GrantRequest(player_id="p1", amount=7, grant_id="g1"), metadata=ADMIN)
    assert other.value.code() == grpc.StatusCode.ALREADY_EXISTS


async def test_hold_release_and_short_balance(scoring: InProcessScoring) -> None:
    await grant(scoring, "p1", 100)
    stub = scoring.stub

    async def hold(ticket: str, amount: int) -> scoring_pb2.HoldStakeResponse:
        request = scoring_pb2.HoldStakeRequest(player_id="p1", ticket_id=ticket, amount=amount)
        return await stub.HoldStake(request, metadata=identity("p1"))

    async def release(ticket: str) -> scoring_pb2.ReleaseStakeResponse:
        request = scoring_pb2.ReleaseStakeRequest(player_id="p1", ticket_id=ticket)
        return await stub.ReleaseStake(request, metadata=identity("p1"))

    with pytest.raises(grpc.aio.AioRpcError) as short:
        await hold("t0", 101)
    assert short.value.code() == grpc.StatusCode.FAILED_PRECONDITION
    held = await hold("t1", 60)
    assert (held.balance.available, held.balance.held) == (40, 60)
    await hold("t1", 60)  # retried
    assert await balance(scoring, "p1") == (40, 60)
    with pytest.raises(grpc.aio.AioRpcError) as short2:
        await hold("t2", 41)
    assert short2.value.code() == grpc.StatusCode.FAILED_PRECONDITION
    released = await release("t1")
    assert (released.balance.available, released.balance.held) == (100, 0)
    await release("t1")  # retried
    assert await balance(scoring, "p1") == (100, 0)
    with pytest.raises(grpc.aio.AioRpcError) as unknown:
        await release("nope")
    assert unknown.value.code() == grpc.StatusCode.NOT_FOUND
    ledger = await stub.ListLedger(scoring_pb2.ListLedgerRequest(player_id="p1", page_size=2), metadata=ADMIN)
    assert [p.reason for p in ledger.postings] == ["release", "hold"]
    rest = await stub.ListLedger(
        scoring_pb2.ListLedgerRequest(player_id="p1", page_size=2, page_token=ledger.next_page_token),
        metadata=identity("p1"),  # the player's own token (through the gateway)
    )
    assert [p.reason for p in rest.postings] == ["grant"] and rest.next_page_token == ""
    assert rest.postings[0].debit_account == "mint" and rest.postings[0].credit_account == "player:p1"


async def test_stake_calls_need_an_identity_token_for_their_player(scoring: InProcessScoring) -> None:
    # docs/architecture.md: a player id only from a token services verify, never from a request
    # field alone; matchmaking signs one per stake call. Refused calls hold and release nothing.
    await grant(scoring, "p1", 100)
    hold = scoring_pb2.HoldStakeRequest(player_id="p1", ticket_id="t1", amount=60)
    refused = [
        (None, grpc.StatusCode.UNAUTHENTICATED),  # no token
        (identity("p1", key=b"another-key-0123456789abcdef0123456789"), grpc.StatusCode.UNAUTHENTICATED),  # forged
        # a service token signed with the player key (what a compromised gateway could make)
        (((IDENTITY_METADATA, KEYS.player_key_forgery("matchmaking")),), grpc.StatusCode.UNAUTHENTICATED),
        (identity("p1", ttl_s=-120), grpc.StatusCode.UNAUTHENTICATED),  # expired
        (identity("p2"), grpc.StatusCode.PERMISSION_DENIED),  # another player's
    ]
    for metadata, code in refused:
        with pytest.raises(grpc.aio.AioRpcError) as err:
            await scoring.stub.HoldStake(hold, metadata=metadata)
        assert err.value.code() == code, metadata
        assert "token" in (err.value.details() or "")
    assert await balance(scoring, "p1") == (100, 0)
    await scoring.stub.HoldStake(hold, metadata=identity("p1"))
    release = scoring_pb2.ReleaseStakeRequest(player_id="p1", ticket_id="t1")
    for metadata, code in refused:
        with pytest.raises(grpc.aio.AioRpcError) as err:
            await scoring.stub.ReleaseStake(release, metadata=metadata)
        assert err.value.code() == code, metadata
    assert await balance(scoring, "p1") == (40, 60)
    await scoring.stub.ReleaseStake(release, metadata=identity("p1"))
    assert await balance(scoring, "p1") == (100, 0)


async def test_matchmakings_service_token_holds_on_the_players_own_request_and_releases_any_stake(
    scoring: InProcessScoring,
) -> None:
    """Matchmaking releases stakes for players (also when none of their calls is in flight)
    with its service-role token; another service's is refused (issue 18). It holds one only
    with the player's own token of the call it serves along (issue 42, finding 2)."""
    await grant(scoring, "p3", 50)
    hold = scoring_pb2.HoldStakeRequest(player_id="p3", ticket_id="t3", amount=20)
    own = ((PLAYER_METADATA, identity("p3")[0][1]),)
    with pytest.raises(grpc.aio.AioRpcError) as err:  # scoring holds no public key of the timers (ADR 0028)
        await scoring.stub.HoldStake(hold, metadata=identity("timers", role="service") + own)
    assert err.value.code() == grpc.StatusCode.UNAUTHENTICATED
    matchmaking = identity("matchmaking", role="service")
    with pytest.raises(grpc.aio.AioRpcError) as err:
        await scoring.stub.HoldStake(hold, metadata=matchmaking)
    assert err.value.code() == grpc.StatusCode.UNAUTHENTICATED
    with pytest.raises(grpc.aio.AioRpcError) as err:
        await scoring.stub.HoldStake(hold, metadata=(*matchmaking, (PLAYER_METADATA, identity("p1")[0][1])))
    assert err.value.code() == grpc.StatusCode.PERMISSION_DENIED
    assert await balance(scoring, "p3") == (50, 0)
    await scoring.stub.HoldStake(hold, metadata=matchmaking + own)
    assert await balance(scoring, "p3") == (30, 20)
    release = scoring_pb2.ReleaseStakeRequest(player_id="p3", ticket_id="t3")
    await scoring.stub.ReleaseStake(release, metadata=identity("matchmaking", role="service"))
    assert await balance(scoring, "p3") == (50, 0)


def test_a_scoring_without_a_token_key_does_not_start() -> None:
    for missing in (PLAYER_KEY_ENV, public_key_env("matchmaking")):
        env = scoring_env("none")
        del env[missing]
        with pytest.raises(ConfigError, match=missing):
            ScoringConfig.from_env(env)


async def paid_table(
    app: InProcessScoring,
    pub: EventPublisher,
    table: str,
    players: list[str],
    stake: int,
    *,
    rake: int = 0,
    variant: int = common_pb2.VARIANT_TRIX,
) -> None:
    for seat, player in enumerate(players):
        await app.stub.HoldStake(
            scoring_pb2.HoldStakeRequest(player_id=player, ticket_id=f"{table}-{seat}", amount=stake),
            metadata=identity(player),
        )
    await pub.table_created(
        table,
        players,
        variant=variant,
        stake=stake,
        rake_percent=rake,
        tickets=[f"{table}-{s}" for s in range(4)],
    )


async def totals(app: InProcessScoring) -> scoring_pb2.GetWalletTotalsResponse:
    return await app.stub.GetWalletTotals(scoring_pb2.GetWalletTotalsRequest(), metadata=ADMIN)


async def test_paid_tables_settle_by_rules_13(scoring: InProcessScoring, publisher: EventPublisher) -> None:
    players = ["a", "b", "c", "d"]
    for p in players:
        await grant(scoring, p, 1000)
    # Singles, rake 10 %, a tie for first between seats 1 and 3: pot 400, rake 40,
    # prize 360 -> 180 each.
    await paid_table(scoring, publisher, "t1", players, 100, rake=10)

    async def funded() -> bool:
        return (await totals(scoring)).running_tables == 1

    await eventually(funded, what="pot funded")
    assert (await totals(scoring)).pots == 400
    assert await balance(scoring, "a") == (900, 0)
    await publisher.game_ended("t1", STARTED_RECORD, [10, 50, -110, 50], [3, 1, 4, 1])

    async def settled(n: int) -> bool:
        return (await totals(scoring)).settlements == n

    await eventually(lambda: settled(1), what="settlement")
    assert [await balance(scoring, p) for p in players] == [(900, 0), (1080, 0), (900, 0), (1080, 0)]
    t = await totals(scoring)
    assert (t.granted, t.house, t.pots, t.held) == (4000, 40, 0, 0)
    # The same GameEnded redelivered, and a second one under a new sequence: settled once.
    await publisher.game_ended("t1", STARTED_RECORD, [10, 50, -110, 50], [3, 1, 4, 1], sequence=2, msg_id="dup-1")
    await publisher.game_ended("t1", STARTED_RECORD, [10, 50, -110, 50], [1, 2, 3, 4])
    await publisher.publish("t2", 1, table_created=None)  # noise on another table (ignored body)

    # Partnership, stake 33, three winners' worth of remainder: pot 132, no rake; team
    # {1,3} wins -> 66 each. Then a 3-way singles tie: pot 100 (stake 25), 33 each, the
    # remainder 1 to the lowest winning seat (0).
    await paid_table(scoring, publisher, "t3", players, 33, variant=common_pb2.VARIANT_TRIX_PARTNERSHIP)
    await publisher.game_ended("t3", STARTED_RECORD, [0, 5, 0, 5], [2, 1, 2, 1])
    await eventually(lambda: settled(2), what="partnership settlement")
    await paid_table(scoring, publisher, "t4", players, 25)
    await publisher.game_ended("t4", STARTED_RECORD, [5, 5, 5, -15], [1, 1, 1, 4])
    await eventually(lambda: settled(3), what="tie settlement")
    assert [await balance(scoring, p) for p in players] == [
        (900 - 33 - 25 + 34, 0),
        (1080 + 33 + 8, 0),
        (900 - 33 - 25 + 33, 0),
        (1080 + 33 - 25, 0),
    ]
    # §10: seat 2 left a paid table; the engine ranks it last (partnership: with its partner).
    before = [await balance(scoring, p) for p in players]
    await paid_table(scoring, publisher, "t5", players, 10, variant=common_pb2.VARIANT_COMPLEX_PARTNERSHIP)
    await publisher.game_ended("t5", STARTED_RECORD, [0, 0, 0, 0], [2, 1, 2, 1], left_seat=2)
    # §13: a table that ended before its first deal was dealt refunds every stake.
    await paid_table(scoring, publisher, "t6", players, 50, rake=10)
    await publisher.game_ended("t6", NEVER_STARTED_RECORD, [0, 0, 0, 0], [])
    await eventually(lambda: settled(5), what="leaver and refund")
    after = [await balance(scoring, p) for p in players]
    assert [a[0] - b[0] for a, b in zip(after, before, strict=True)] == [-10, 10, -10, 10]
    t = await totals(scoring)
    assert t.available + t.held + t.pots + t.house == t.granted == 4000
    assert (t.house, t.running_tables) == (40, 0)
    assert scoring.service.state.anomalies == []
    # The refunded table is neither history nor rated; the others are.
    history = await scoring.stub.ListHistory(scoring_pb2.ListHistoryRequest(player_id="a", page_size=10))
    assert [g.table_id for g in history.games] == ["t5", "t4", "t3", "t1"]
    # Two rated singles games (t1, t4), over gRPC: ranks 1..4, paged and around a player.
    board = await scoring.stub.GetLeaderboard(
        scoring_pb2.GetLeaderboardRequest(variant=common_pb2.VARIANT_TRIX, page_size=2)
    )
    assert [e.rank for e in board.entries] == [1, 2] and board.next_page_token == "2"
    assert all(e.games == 2 for e in board.entries)
    assert board.entries[0].rating >= board.entries[1].rating
    around = await scoring.stub.GetLeaderboard(
        scoring_pb2.GetLeaderboardRequest(variant=common_pb2.VARIANT_TRIX, page_size=1, around_player_id="c")
    )
    assert [e.player_id for e in around.entries] == ["c"]
    with pytest.raises(grpc.aio.AioRpcError) as no_variant:
        await scoring.stub.GetLeaderboard(scoring_pb2.GetLeaderboardRequest())
    assert no_variant.value.code() == grpc.StatusCode.INVALID_ARGUMENT


async def test_a_wallet_is_read_only_by_its_player_matchmaking_or_an_admin(scoring: InProcessScoring) -> None:
    """Issue 18: GetBalance and ListLedger answered for any player id before."""
    await grant(scoring, "p4", 10)
    read = scoring_pb2.GetBalanceRequest(player_id="p4")
    ledger = scoring_pb2.ListLedgerRequest(player_id="p4")
    refused = [
        (None, grpc.StatusCode.UNAUTHENTICATED),
        (identity("p5"), grpc.StatusCode.PERMISSION_DENIED),  # another player's token
        ((("x-trix-admin-token", "guess-guess-guess-guess"),), grpc.StatusCode.PERMISSION_DENIED),
    ]
    for metadata, code in refused:
        for call in (
            scoring.stub.GetBalance(read, metadata=metadata),
            scoring.stub.ListLedger(ledger, metadata=metadata),
        ):
            with pytest.raises(grpc.aio.AioRpcError) as err:
                await call
            assert err.value.code() == code, metadata
    for metadata in (identity("p4"), identity("matchmaking", role="service"), ADMIN):
        assert (await scoring.stub.GetBalance(read, metadata=metadata)).available == 10
        assert len((await scoring.stub.ListLedger(ledger, metadata=metadata)).postings) == 1


SERVER_SEED = hashlib.sha256(b"issue 42: a paid table left after the deal").digest()
CLIENT_SEED = fairness.join_client_seeds(["a", "b", "c", "d"])


def _left_record(variant: engine.Variant, players: list[str], *, dealt: bool) -> dict[str, Any]:
    """The C engine's record of a game left by the seat after the owner: in the first deal's
    contract phase (13 cards seen, no card played), or before the first deal is dealt."""
    game = engine.Game(variant, engine.Options())
    if dealt:
        game.provide_deal(fairness.deal_from_seeds(SERVER_SEED, CLIENT_SEED, 0))
        assert game.phase == engine.Phase.CHOOSE_CONTRACT
    game.leave(((game.owner or 0) + 1) % 4)
    seeds = {
        "commitment": fairness.commitment(SERVER_SEED),
        "server_seed": SERVER_SEED.hex(),
        "client_seed": CLIENT_SEED,
    }
    return {**game.record(), "players": list(players), "fairness": seeds}


@pytest.mark.parametrize("variant", list(engine.Variant), ids=lambda v: v.name)
async def test_a_paid_table_left_after_the_deal_pays_by_section_10_and_refunds_nothing(
    nats_server: NatsServer, publisher: EventPublisher, variant: engine.Variant
) -> None:
    """docs/rules.md §10 and §13 (issue 42): a leave in the first deal's contract phase (the
    leaver has seen his hand, no card is played) ends the game with the leaver last (and his
    partner in partnership); the stakes are settled from those places, the leaver's is not
    given back. Only a table left before its first deal is dealt could not start: every stake
    back. Scoring replays each record before it pays (as deployed)."""
    app = InProcessScoring(nats_server.url, TRIX_SCORING_REPLAY_RECORDS="1")
    await app.start()
    try:
        players = [f"{p}-{variant.name.lower()}" for p in "abcd"]
        for p in players:
            await grant(app, p, 1000)
        kind = common_pb2.Variant.Value(f"VARIANT_{variant.name}")
        record = _left_record(variant, players, dealt=True)
        leaver = record["left"]
        await paid_table(app, publisher, "after-deal", players, 100, variant=kind)
        await publisher.game_ended(
            "after-deal", json.dumps(record), record["totals"], record["ranking"], left_seat=leaver
        )
        await eventually(lambda: _settled(app, 1), what="settlement")
        partnership = variant in (engine.Variant.TRIX_PARTNERSHIP, engine.Variant.COMPLEX_PARTNERSHIP)
        losers = {leaver, (leaver + 2) % 4} if partnership else {leaver}
        assert record["ranking"] == [(2 if partnership else 4) if s in losers else 1 for s in range(4)]
        # The pot of 400 to the winners: two partners 200 each, or three seats 133 (+1 to the lowest).
        winners = [s for s in range(4) if s not in losers]
        prize = [400 // len(winners) + (400 % len(winners) if s == winners[0] else 0) for s in range(4)]
        want = [(900 if s in losers else 900 + prize[s], 0) for s in range(4)]
        assert [await balance(app, p) for p in players] == want
        assert app.service.state.anomalies == []
        history = await app.stub.ListHistory(scoring_pb2.ListHistoryRequest(player_id=players[leaver]))
        assert [(g.table_id, g.place) for g in history.games] == [("after-deal", 2 if partnership else 4)]

        # Being paid now, such a game is replayed whole: one whose GameEnded names the leaver
        # the winner is not settled (before, a game with no card played was only checked for
        # its seats: refunded, it paid nobody).
        before = [await balance(app, p) for p in players]
        await paid_table(app, publisher, "forged", players, 100, variant=kind)
        forged = [1 if s == leaver else (2 if partnership else 4) for s in range(4)]
        await publisher.game_ended("forged", json.dumps(record), record["totals"], forged, left_seat=leaver)

        # Left before the first deal is dealt: the table could not start, every stake back.
        undealt = _left_record(variant, players, dealt=False)
        assert undealt["deals"] == []
        await paid_table(app, publisher, "undealt", players, 100, variant=kind)
        await publisher.game_ended("undealt", json.dumps(undealt), undealt["totals"], undealt["ranking"] or [])
        await eventually(lambda: _settled(app, 2), what="refund")
        assert [await balance(app, p) for p in players] == [(b - 100, 0) for b, _ in before]  # "forged" holds
        assert [a for a in app.service.state.anomalies if "forged" in a], app.service.state.anomalies
        t = await totals(app)
        assert t.available + t.held + t.pots + t.house == t.granted == 4000
        assert (t.pots, t.running_tables) == (400, 1)
    finally:
        await app.stop()


async def _settled(app: InProcessScoring, n: int) -> bool:
    return (await totals(app)).settlements == n
