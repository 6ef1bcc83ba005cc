"""Issue 42, finding 2: coins leave a balance only on the player's own signed-in request. On
`trix up`'s real scoring and table: a MatchFormed published as matchmaking's NATS user (what a
compromised matchmaking could send) that seats a player who never queued at a paid table, with
no ticket, takes nothing from that player's balance; and matchmaking's service token alone
holds no stake: a HoldStake carries the player's own token of the call it serves."""

from __future__ import annotations

import time

import grpc
import pytest
from security_support import REFUSED, Backend, connected, report, until_found

from trix.natsio import subjects
from trix.runtime import identity
from trix.runtime.identity import IDENTITY_METADATA, PLAYER_METADATA, ROLE_PLAYER, sign
from trix.scoring.config import SCORING_ADMIN_ENV
from trix.v1 import common_pb2, events_pb2, scoring_pb2, scoring_pb2_grpc

GRANT = 500
STAKE = 100


def _admin(backend: Backend) -> tuple[tuple[str, str], ...]:
    return (("x-trix-admin-token", backend.env[SCORING_ADMIN_ENV]),)


async def _balance(stub: scoring_pb2_grpc.ScoringServiceStub, backend: Backend, player: str) -> tuple[int, int]:
    got = await stub.GetBalance(scoring_pb2.GetBalanceRequest(player_id=player), metadata=_admin(backend), timeout=10)
    return got.available, got.held


async def test_a_forged_match_without_tickets_takes_no_stake_from_a_balance(up_platform: Backend) -> None:
    run = str(int(time.time() * 1000))
    victim = f"victim-{run}"
    players = [victim, f"mm-friend-a-{run}", f"mm-friend-b-{run}", f"mm-friend-c-{run}"]
    channel = grpc.aio.insecure_channel(up_platform.targets["scoring"])
    stub = scoring_pb2_grpc.ScoringServiceStub(channel)
    try:
        grant = scoring_pb2.GrantRequest(player_id=victim, amount=GRANT, grant_id=f"grant-{run}")
        await stub.Grant(grant, metadata=_admin(up_platform), timeout=10)
        table_id = f"forgedpaid{run}"
        formed = events_pb2.MatchFormed(
            match_id=table_id,
            table_id=table_id,
            variant=common_pb2.VARIANT_TRIX,
            seats=[common_pb2.Seat(index=i, player_id=p) for i, p in enumerate(players)],
        )
        formed.stake.coins = STAKE  # a paid table, and no ticket of the victim's: she never queued
        async with connected(up_platform, "matchmaking") as matchmaking:
            js = matchmaking.nc.jetstream(timeout=20)
            await js.publish(subjects.match_formed(), events_pb2.Event(match_formed=formed).SerializeToString())
        # The table is created and scoring has decided its funding (one journal entry).
        standings = scoring_pb2.GetStandingsRequest(table_id=table_id)
        await until_found(lambda: stub.GetStandings(standings, timeout=10), 90, 0.2)
        balance = await _balance(stub, up_platform, victim)
        outcome = REFUSED if balance == (GRANT, 0) else f"ALLOWED (balance {balance})"
        line = report(up_platform, "seat a player at a paid table with no ticket", "matchmaking", outcome)
        assert outcome == REFUSED, line
    finally:
        await channel.close()


async def test_matchmaking_alone_holds_no_stake_only_with_the_players_own_token(up_platform: Backend) -> None:
    run = str(int(time.time() * 1000))
    victim = f"holder-{run}"
    channel = grpc.aio.insecure_channel(up_platform.targets["scoring"])
    stub = scoring_pb2_grpc.ScoringServiceStub(channel)
    now = time.time()
    service = up_platform.service_token("matchmaking")  # signed with matchmaking's own key
    own = sign(up_platform.env[identity.PLAYER_KEY_ENV].encode(), ROLE_PLAYER, victim, now, 60)
    other = sign(up_platform.env[identity.PLAYER_KEY_ENV].encode(), ROLE_PLAYER, f"someone-{run}", now, 60)
    try:
        grant = scoring_pb2.GrantRequest(player_id=victim, amount=GRANT, grant_id=f"grant-{run}")
        await stub.Grant(grant, metadata=_admin(up_platform), timeout=10)
        attempts = {
            "hold a stake with matchmaking's token alone": ((IDENTITY_METADATA, service),),
            "hold a stake with another player's token along": ((IDENTITY_METADATA, service), (PLAYER_METADATA, other)),
        }
        lines = []
        for n, (attack, metadata) in enumerate(attempts.items()):
            hold = scoring_pb2.HoldStakeRequest(player_id=victim, ticket_id=f"t{n}-{run}", amount=STAKE)
            with pytest.raises(grpc.aio.AioRpcError) as refused:
                await stub.HoldStake(hold, metadata=metadata, timeout=10)
            code = refused.value.code()
            ok = code in (grpc.StatusCode.PERMISSION_DENIED, grpc.StatusCode.UNAUTHENTICATED)
            lines.append(report(up_platform, attack, "matchmaking", REFUSED if ok else code.name))
        assert await _balance(stub, up_platform, victim) == (GRANT, 0), "\n".join(lines)
        assert all(line.endswith(REFUSED) for line in lines), "\n".join(lines)
        hold = scoring_pb2.HoldStakeRequest(player_id=victim, ticket_id=f"mine-{run}", amount=STAKE)
        await stub.HoldStake(hold, metadata=((IDENTITY_METADATA, service), (PLAYER_METADATA, own)), timeout=10)
        assert await _balance(stub, up_platform, victim) == (GRANT - STAKE, STAKE)  # the player's own request
    finally:
        await channel.close()
