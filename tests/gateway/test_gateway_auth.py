"""Auth matrix: every RPC of the gateway refuses a missing, expired, badly signed,
`alg: none` or foreign-key token with UNAUTHENTICATED, and a valid token acting on a
seat at another table with PERMISSION_DENIED; no state changes (docs/rules.md §14)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import grpc
import pytest
from gateway_support import Platform, Seated, assert_clean, auth, forged_tokens, signed_in, status_of

from trix.gateway.tokens import HmacTokens
from trix.v1 import common_pb2, gateway_pb2, gateway_pb2_grpc, matchmaking_pb2, scoring_pb2

pytestmark = pytest.mark.timeout(120)


def calls(stub: gateway_pb2_grpc.GatewayServiceAsyncStub, table_id: str) -> dict[str, Callable[[Any], Any]]:
    """One call per RPC that needs a token, given metadata."""
    action = gateway_pb2.Action(table_id=table_id, action_id="a1", play_card=common_pb2.Card(id=0))
    wish = matchmaking_pb2.GameWish(variant=common_pb2.VARIANT_TRIX)
    return {
        "SubmitAction": lambda md: stub.SubmitAction(gateway_pb2.SubmitActionRequest(action=action), metadata=md),
        "FindMatch": lambda md: stub.FindMatch(gateway_pb2.FindMatchRequest(wish=wish), metadata=md),
        "CancelMatch": lambda md: stub.CancelMatch(gateway_pb2.CancelMatchRequest(ticket_id="t1"), metadata=md),
        "CreatePrivateGame": lambda md: stub.CreatePrivateGame(
            gateway_pb2.CreatePrivateGameRequest(wish=wish), metadata=md
        ),
        "JoinPrivateGame": lambda md: stub.JoinPrivateGame(gateway_pb2.JoinPrivateGameRequest(code="c1"), metadata=md),
        "StartPrivateGame": lambda md: stub.StartPrivateGame(
            gateway_pb2.StartPrivateGameRequest(code="c1"), metadata=md
        ),
        "GetPrivateGame": lambda md: stub.GetPrivateGame(gateway_pb2.GetPrivateGameRequest(code="c1"), metadata=md),
        "Query": lambda md: stub.Query(gateway_pb2.QueryRequest(balance=scoring_pb2.GetBalanceRequest()), metadata=md),
        "GetView": lambda md: stub.GetView(gateway_pb2.GetViewRequest(table_id=table_id), metadata=md),
        "Events": lambda md: _first(stub.Events(gateway_pb2.EventsRequest(table_id=table_id), metadata=md)),
        "Spectate": lambda md: _first(stub.Spectate(gateway_pb2.SpectateRequest(table_id=table_id), metadata=md)),
        "Session": lambda md: _first(stub.Session(_pings(), metadata=md)),
    }


async def _pings() -> Any:
    """A client that keeps its side of the stream open, like a mobile client."""
    yield gateway_pb2.SessionRequest(ping=True)
    await asyncio.sleep(30)


async def _first(call: Any) -> Any:
    async for message in call:
        return message
    return None


async def _wait_my_turn(stub: gateway_pb2_grpc.GatewayServiceAsyncStub, me: Seated) -> gateway_pb2.GetViewResponse:
    for _ in range(600):
        view = await stub.GetView(gateway_pb2.GetViewRequest(table_id=me.table_id), metadata=auth(me.client.token))
        if me.seat in view.view.turn.seats:  # seen within 50 ms of its start: >= 8 s before a timer fires
            return view
        await asyncio.sleep(0.05)
    raise AssertionError("never my turn")


async def _seated_slow(target: str, name: str) -> Seated:
    client = await signed_in(target, name)
    stream = client.open()
    wish = matchmaking_pb2.GameWish(variant=common_pb2.VARIANT_COMPLEX)
    client.send(gateway_pb2.SessionRequest(find_match=gateway_pb2.FindMatchRequest(wish=wish)))
    async for m in stream:
        assert not m.HasField("error"), m.error
        if m.HasField("ticket") and m.ticket.state == matchmaking_pb2.TICKET_STATE_MATCHED:
            return Seated(client, stream, m.ticket.table_id, m.ticket.seat)
    raise AssertionError("no match")


async def test_every_rpc_refuses_bad_tokens_and_foreign_seats(platform: Platform) -> None:
    a = await asyncio.wait_for(_seated_slow(platform.target, "alice"), 30)
    b = await asyncio.wait_for(_seated_slow(platform.target, "bob"), 30)
    assert a.table_id != b.table_id
    channel = grpc.aio.insecure_channel(platform.target)
    stub = gateway_pb2_grpc.GatewayServiceStub(channel)
    try:
        before = await _wait_my_turn(stub, a)
        bad = forged_tokens(platform, a.client.player_id)
        metadatas: dict[str, tuple[tuple[str, str], ...]] = {
            "missing": (),
            "not_bearer": (("authorization", f"Basic {a.client.token}"),),
            **{kind: auth(token) for kind, token in bad.items()},
        }
        for kind, md in metadatas.items():
            for rpc, call in calls(stub, a.table_id).items():
                code = await status_of(call(md))
                assert code == grpc.StatusCode.UNAUTHENTICATED, (kind, rpc, code)

        # Bob's valid token on Alice's table: he holds no seat there.
        bob = auth(b.client.token)
        foreign = calls(stub, a.table_id)
        for rpc in ("SubmitAction", "GetView", "Events"):
            code = await status_of(foreign[rpc](bob))
            assert code == grpc.StatusCode.PERMISSION_DENIED, (rpc, code)
        code = await status_of(
            stub.Query(
                gateway_pb2.QueryRequest(balance=scoring_pb2.GetBalanceRequest(player_id=a.client.player_id)),
                metadata=bob,
            )
        )
        assert code == grpc.StatusCode.PERMISSION_DENIED
        # ... and on his own Session stream: a typed error, nothing applied.
        legal = before.view.legal_cards[0].id if before.view.legal_cards else 0
        action = gateway_pb2.Action(table_id=a.table_id, action_id="steal", play_card=common_pb2.Card(id=legal))
        b.client.send(gateway_pb2.SessionRequest(action=action, request_id="r-steal"))
        async for m in b.stream:
            if m.request_id == "r-steal":
                assert m.HasField("error") and m.error.code == "PERMISSION_DENIED", m
                assert_clean(m.error.message)
                break

        after = await stub.GetView(gateway_pb2.GetViewRequest(table_id=a.table_id), metadata=auth(a.client.token))
        assert after.view.sequence == before.view.sequence
        assert list(after.view.hand) == list(before.view.hand)
    finally:
        await channel.close()
        await a.client.close()
        await b.client.close()


async def test_same_device_secret_same_player_and_token_checks(platform: Platform) -> None:
    one = await signed_in(platform.target, "carol", "carol-device-secret-0123456789")
    two = await signed_in(platform.target, "carol again", "carol-device-secret-0123456789")
    other = await signed_in(platform.target, "dave", "dave-device-secret-0123456789")
    assert one.player_id == two.player_id != other.player_id
    tokens = HmacTokens(platform.token_key, 60)
    assert tokens.verify(one.token, 1.0).player_id == one.player_id
    channel = grpc.aio.insecure_channel(platform.target)
    stub = gateway_pb2_grpc.GatewayServiceStub(channel)
    try:
        code = await status_of(stub.SignIn(gateway_pb2.SignInRequest(device_secret="short")))
        assert code == grpc.StatusCode.INVALID_ARGUMENT
    finally:
        await channel.close()
        for c in (one, two, other):
            await c.close()


async def test_refused_session_reports_unauthenticated_every_time(platform: Platform) -> None:
    """A client that writes at once on a Session the gateway refuses sees UNAUTHENTICATED,
    never the client library's INTERNAL for a write that raced the refusal (ADR 0009)."""
    channel = grpc.aio.insecure_channel(platform.target)
    stub = gateway_pb2_grpc.GatewayServiceStub(channel)
    try:
        codes: dict[grpc.StatusCode, int] = {}
        for i in range(120):
            md = auth("not.a.token") if i % 2 else ()
            code = await status_of(asyncio.wait_for(_first(stub.Session(_pings(), metadata=md)), 20))
            codes[code] = codes.get(code, 0) + 1
        assert codes == {grpc.StatusCode.UNAUTHENTICATED: 120}, codes
    finally:
        await channel.close()
