"""Issue 42, finding 4 (ADR 0028): a key per service, so no service can sign as another. Each
service signs its service tokens with its own Ed25519 key and a verifier holds only the public
keys of the signers its declaration accepts. On `trix up`'s real services over gRPC (its own
nats-server behind them): a token in the table's or the operators' name, signed with the key
of matchmaking or the timers (what a compromised one holds) or with a key scoring could make
(it is given none), is refused by the table, the timers and scoring alike; so is a token in
another service's name at scoring."""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable

import grpc
import pytest
from security_support import REFUSED, Backend, report

from trix.runtime.identity import (
    IDENTITY_METADATA,
    PLAYER_KEY_ENV,
    PLAYER_METADATA,
    ROLE_PLAYER,
    TOKEN_METADATA,
    new_signing_key,
    sign,
)
from trix.v1 import (
    common_pb2,
    scoring_pb2,
    scoring_pb2_grpc,
    table_pb2,
    table_pb2_grpc,
    timers_pb2,
    timers_pb2_grpc,
)

Call = Callable[[str], Awaitable[object]]


async def _outcome(call: Call, token: str) -> str:
    try:
        await call(token)
    except grpc.aio.AioRpcError as err:
        return REFUSED if err.code() == grpc.StatusCode.UNAUTHENTICATED else err.code().name
    return "ALLOWED"


async def test_no_service_signs_in_the_name_of_the_table_or_the_operators(up_platform: Backend) -> None:
    table_id = f"keys{int(time.time() * 1000)}"
    seats = [common_pb2.Seat(index=s, player_id=f"keyed-{s}") for s in range(4)]
    create = table_pb2.CreateTableRequest(table_id=table_id, variant=common_pb2.VARIANT_COMPLEX, seats=seats)
    forgers = {  # whose key signs: what a compromised service holds (scoring holds none)
        "matchmaking": up_platform.signing_keys["matchmaking"],
        "timers": up_platform.signing_keys["timers"],
        "scoring": new_signing_key(),
    }
    async with (
        grpc.aio.insecure_channel(up_platform.targets["table"]) as table_channel,
        grpc.aio.insecure_channel(up_platform.targets["timers"]) as timers_channel,
    ):
        table = table_pb2_grpc.TableServiceStub(table_channel)
        timers = timers_pb2_grpc.TimersServiceStub(timers_channel)
        own = ((TOKEN_METADATA, up_platform.service_token("table")),)
        await table.CreateTable(create, metadata=own, timeout=30)
        hand = table_pb2.GetSeatViewRequest(table_id=table_id, seat=1)
        presence = timers_pb2.GetPresenceRequest(player_id="keyed-1")
        # The genuine tokens pass: the checks below fail on the signing key alone.
        admin = up_platform.service_token("admin")
        assert len((await table.GetSeatView(hand, metadata=((TOKEN_METADATA, admin),), timeout=30)).view.hand) == 13
        with pytest.raises(grpc.aio.AioRpcError) as err:  # past the token check: nobody by that name
            await timers.GetPresence(presence, metadata=((IDENTITY_METADATA, admin),), timeout=30)
        assert err.value.code() == grpc.StatusCode.NOT_FOUND
        calls: dict[str, Call] = {
            "read a seat's hand (table GetSeatView)": lambda t: table.GetSeatView(
                hand, metadata=((TOKEN_METADATA, t),), timeout=30
            ),
            "create a table (table CreateTable)": lambda t: table.CreateTable(
                table_pb2.CreateTableRequest(table_id=f"{table_id}x", variant=common_pb2.VARIANT_COMPLEX, seats=seats),
                metadata=((TOKEN_METADATA, t),),
                timeout=30,
            ),
            "read a presence (timers GetPresence)": lambda t: timers.GetPresence(
                presence, metadata=((IDENTITY_METADATA, t),), timeout=30
            ),
        }
        lines = []
        for forger, key in forgers.items():
            for name in ("table", "admin"):
                token = up_platform.service_token(name, key=key)
                for what, call in calls.items():
                    outcome = await _outcome(call, token)
                    lines.append(report(up_platform, f"{what} as {name}, {forger}'s key", forger, outcome))
    assert all(line.endswith(REFUSED) for line in lines), "\n".join(lines)


async def test_scoring_accepts_matchmaking_s_name_only_under_matchmaking_s_key(up_platform: Backend) -> None:
    """A stake call in matchmaking's name signed by the timers' or the table's key is refused
    before any check of the player's own token (here another player's: matchmaking's genuine
    token gets past its signature, to be refused on that)."""
    hold = scoring_pb2.HoldStakeRequest(player_id="keyed-holder", ticket_id="keyed-ticket", amount=1)
    other = sign(up_platform.env[PLAYER_KEY_ENV].encode(), ROLE_PLAYER, "keyed-other", time.time(), 60)
    async with grpc.aio.insecure_channel(up_platform.targets["scoring"]) as channel:
        scoring = scoring_pb2_grpc.ScoringServiceStub(channel)

        def call(token: str) -> Awaitable[object]:
            return scoring.HoldStake(hold, metadata=((IDENTITY_METADATA, token), (PLAYER_METADATA, other)), timeout=30)

        lines = []
        for forger in ("timers", "table"):
            token = up_platform.service_token("matchmaking", key=up_platform.signing_keys[forger])
            outcome = await _outcome(call, token)
            lines.append(report(up_platform, f"hold a stake as matchmaking, {forger}'s key", forger, outcome))
        # matchmaking's genuine token gets past the signature (then needs the player's own).
        genuine = await _outcome(call, up_platform.service_token("matchmaking"))
        assert genuine == "PERMISSION_DENIED", genuine
    assert all(line.endswith(REFUSED) for line in lines), "\n".join(lines)
