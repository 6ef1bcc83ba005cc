"""Issue 43 (docs/adr/0030): the competitions service's token at scoring does exactly one thing,
post to competitions' escrows, and nobody else can. On `trix up`'s real scoring, with each
signer's own key from its state folder: the competitions identity cannot Grant, hold or release
a paid table's stake, nor read a wallet; matchmaking's token, a player's own token, the
operators' token, a forgery in the competitions' name and no token post no competition entry;
the competitions token alone takes no fee (the player's own request must come along), pays out
nothing an escrow does not hold (it mints nothing) and no prize or refund to a player who paid
no fee into that competition."""

from __future__ import annotations

import time

import grpc
import pytest
from security_support import REFUSED, Backend, report

from trix.runtime import identity
from trix.runtime.identity import ADMIN, IDENTITY_METADATA, PLAYER_METADATA, ROLE_PLAYER, sign
from trix.scoring.config import SCORING_ADMIN_ENV
from trix.v1 import scoring_pb2, scoring_pb2_grpc

GRANT = 500
FEE = 100
DENIED = (grpc.StatusCode.PERMISSION_DENIED, grpc.StatusCode.UNAUTHENTICATED)
Metadata = tuple[tuple[str, str], ...]


def _admin(backend: Backend) -> Metadata:
    return (("x-trix-admin-token", backend.env[SCORING_ADMIN_ENV]),)


def _player(backend: Backend, name: str) -> str:
    return sign(backend.env[identity.PLAYER_KEY_ENV].encode(), ROLE_PLAYER, name, time.time(), 60)


def _entry(
    cid: str, kind: scoring_pb2.CompetitionEntryKind.ValueType, player: str
) -> scoring_pb2.PostCompetitionEntryRequest:
    name = scoring_pb2.CompetitionEntryKind.Name(kind).removeprefix("COMPETITION_ENTRY_KIND_").lower()
    entry = scoring_pb2.CompetitionEntry(
        key=f"competition.{cid}.{name}.{player}", kind=kind, player_id=player, coins=FEE
    )
    return scoring_pb2.PostCompetitionEntryRequest(competition_id=cid, entry=entry)


async def _balance(stub: scoring_pb2_grpc.ScoringServiceStub, backend: Backend, player: str) -> tuple[int, int]:
    got = await stub.GetBalance(scoring_pb2.GetBalanceRequest(player_id=player), metadata=_admin(backend), timeout=10)
    return got.available, got.held


async def _refused(backend: Backend, attack: str, user: str, call: object, codes: tuple[grpc.StatusCode, ...]) -> str:
    with pytest.raises(grpc.aio.AioRpcError) as refused:
        await call  # type: ignore[misc]
    return report(backend, attack, user, REFUSED if refused.value.code() in codes else refused.value.code().name)


async def test_the_competitions_identity_cannot_grant_nor_touch_stakes_nor_read_wallets(up_platform: Backend) -> None:
    run = str(int(time.time() * 1000))
    victim = f"staker-{run}"
    channel = grpc.aio.insecure_channel(up_platform.targets["scoring"])
    stub = scoring_pb2_grpc.ScoringServiceStub(channel)
    competitions: Metadata = ((IDENTITY_METADATA, up_platform.service_token("competitions")),)
    with_player = (*competitions, (PLAYER_METADATA, _player(up_platform, victim)))
    try:
        await stub.Grant(
            scoring_pb2.GrantRequest(player_id=victim, amount=GRANT, grant_id=f"g-{run}"), metadata=_admin(up_platform)
        )
        mm = (
            (IDENTITY_METADATA, up_platform.service_token("matchmaking")),
            (PLAYER_METADATA, _player(up_platform, victim)),
        )
        ticket = f"ticket-{run}"
        await stub.HoldStake(scoring_pb2.HoldStakeRequest(player_id=victim, ticket_id=ticket, amount=FEE), metadata=mm)
        attacks = {
            "grant coins with the competitions token": stub.Grant(
                scoring_pb2.GrantRequest(player_id=victim, amount=GRANT, grant_id=f"c-{run}"), metadata=competitions
            ),
            "hold a table stake with the competitions token": stub.HoldStake(
                scoring_pb2.HoldStakeRequest(player_id=victim, ticket_id=f"c-{run}", amount=FEE), metadata=with_player
            ),
            "release a table stake with the competitions token": stub.ReleaseStake(
                scoring_pb2.ReleaseStakeRequest(player_id=victim, ticket_id=ticket), metadata=competitions
            ),
            "read a wallet with the competitions token": stub.GetBalance(
                scoring_pb2.GetBalanceRequest(player_id=victim), metadata=competitions
            ),
        }
        lines = [await _refused(up_platform, a, "competitions", c, DENIED) for a, c in attacks.items()]
        assert all(line.endswith(REFUSED) for line in lines), "\n".join(lines)
        assert await _balance(stub, up_platform, victim) == (GRANT - FEE, FEE)  # the stake still held
    finally:
        await channel.close()


async def test_only_the_competitions_service_posts_competition_entries(up_platform: Backend) -> None:
    run = str(int(time.time() * 1000))
    victim, accomplice = f"entrant-{run}", f"accomplice-{run}"
    cid = f"cattack{run}"
    channel = grpc.aio.insecure_channel(up_platform.targets["scoring"])
    stub = scoring_pb2_grpc.ScoringServiceStub(channel)
    own = (PLAYER_METADATA, _player(up_platform, victim))
    competitions = (IDENTITY_METADATA, up_platform.service_token("competitions"))
    forged = up_platform.service_token("competitions", key=up_platform.signing_keys["matchmaking"])
    fee = _entry(cid, scoring_pb2.COMPETITION_ENTRY_KIND_FEE, victim)
    try:
        await stub.Grant(
            scoring_pb2.GrantRequest(player_id=victim, amount=GRANT, grant_id=f"g-{run}"), metadata=_admin(up_platform)
        )
        callers: dict[str, tuple[str, Metadata]] = {
            "post a fee with matchmaking's token": (
                "matchmaking",
                ((IDENTITY_METADATA, up_platform.service_token("matchmaking")), own),
            ),
            "post a fee with the player's own token": ("player", ((IDENTITY_METADATA, _player(up_platform, victim)),)),
            "post a fee with the operators' token": (
                "admin",
                ((IDENTITY_METADATA, up_platform.service_token(ADMIN)), own),
            ),
            "post a fee as competitions, matchmaking's key": ("matchmaking", ((IDENTITY_METADATA, forged), own)),
            "post a fee with no token": ("anyone", (own,)),
            "take a fee with the competitions token alone": ("competitions", (competitions,)),
            "take a fee with another player's token along": (
                "competitions",
                (competitions, (PLAYER_METADATA, _player(up_platform, accomplice))),
            ),
        }
        lines = [
            await _refused(up_platform, attack, user, stub.PostCompetitionEntry(fee, metadata=md), DENIED)
            for attack, (user, md) in callers.items()
        ]
        unfunded = _entry(cid, scoring_pb2.COMPETITION_ENTRY_KIND_PRIZE, accomplice)

        async def unfunded_prize(attack: str) -> str:
            call = stub.PostCompetitionEntry(unfunded, metadata=(competitions,))
            return await _refused(up_platform, attack, "competitions", call, (grpc.StatusCode.FAILED_PRECONDITION,))

        lines.append(await unfunded_prize("pay a prize out of an empty escrow"))
        assert await _balance(stub, up_platform, victim) == (GRANT, 0), "\n".join(lines)
        await stub.PostCompetitionEntry(fee, metadata=(competitions, own))  # the player's own request
        assert await _balance(stub, up_platform, victim) == (GRANT - FEE, 0)
        lines.append(await unfunded_prize("pay a prize to a player who paid no fee"))
        account = scoring_pb2.GetCompetitionAccountRequest(competition_id=cid)
        read = stub.GetCompetitionAccount(account, metadata=((IDENTITY_METADATA, _player(up_platform, victim)),))
        attack = "read a competition's escrow with a player's token"
        lines.append(await _refused(up_platform, attack, "player", read, DENIED))
        assert all(line.endswith(REFUSED) for line in lines), "\n".join(lines)
        refund = _entry(cid, scoring_pb2.COMPETITION_ENTRY_KIND_REFUND, victim)
        await stub.PostCompetitionEntry(refund, metadata=(competitions,))
        again = await stub.PostCompetitionEntry(refund, metadata=(competitions,))  # its key dedupes
        assert again.duplicate and await _balance(stub, up_platform, victim) == (GRANT, 0)
        got = await stub.GetCompetitionAccount(account, metadata=(competitions,))
        assert (got.fees, got.refunds, got.prizes, got.escrow) == (FEE, FEE, 0, 0)
    finally:
        await channel.close()
