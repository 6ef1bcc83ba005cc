"""Issue 39: friends at a private partnership table are partners. Through the real gateway
(and matchmaking, table, the C engine): the host creates a private partnership table, a friend
joins by its code, the host sees him listed as his partner (GetPrivateGame; an outsider is
refused), the host starts it with bots, and each player's own view of the table puts
the other opposite (docs/rules.md §1: partners at seats s and s + 2). Before, the seats were
shuffled: host 2 and friend 1 in TRIX_PARTNERSHIP, host 1 and friend 2 in COMPLEX_PARTNERSHIP."""

from __future__ import annotations

import asyncio
import time

import grpc
import pytest
from gateway_support import Platform, signed_in

from trix.client import GatewayClient
from trix.v1 import common_pb2, gateway_pb2, matchmaking_pb2

pytestmark = pytest.mark.timeout(120)


async def _seat(client: GatewayClient, table_id: str) -> int:
    """The caller's seat in its own view of the table (retried while the table is being created)."""
    deadline = time.monotonic() + 60
    while True:
        try:
            got = await client.stub.GetView(
                gateway_pb2.GetViewRequest(table_id=table_id), metadata=client.metadata, timeout=10
            )
            return int(got.view.seat)
        except grpc.aio.AioRpcError as err:
            if time.monotonic() > deadline or err.code() not in (
                grpc.StatusCode.NOT_FOUND,
                grpc.StatusCode.UNAVAILABLE,
            ):
                raise
            await asyncio.sleep(0.2)


@pytest.mark.parametrize("variant", [common_pb2.VARIANT_TRIX_PARTNERSHIP, common_pb2.VARIANT_COMPLEX_PARTNERSHIP])
async def test_the_host_and_the_friend_who_joined_sit_opposite_as_partners(platform: Platform, variant: int) -> None:
    host = await signed_in(platform.target, f"host{variant}")
    friend = await signed_in(platform.target, f"friend{variant}")
    outsider = await signed_in(platform.target, f"outsider{variant}")
    try:
        wish = matchmaking_pb2.GameWish(variant=variant)  # type: ignore[arg-type]
        created = await host.stub.CreatePrivateGame(
            gateway_pb2.CreatePrivateGameRequest(wish=wish), metadata=host.metadata, timeout=10
        )
        await friend.stub.JoinPrivateGame(
            gateway_pb2.JoinPrivateGameRequest(code=created.code), metadata=friend.metadata, timeout=10
        )
        # The host sees who has joined, the friend as his partner (team 0); an outsider sees nothing.
        listed = await host.stub.GetPrivateGame(
            gateway_pb2.GetPrivateGameRequest(code=created.code), metadata=host.metadata, timeout=10
        )
        assert [(p.display_name, p.host, p.team) for p in listed.players] == [
            (f"host{variant}", True, 0),
            (f"friend{variant}", False, 0),
        ]
        assert not listed.closed
        with pytest.raises(grpc.aio.AioRpcError) as refused:
            await outsider.stub.GetPrivateGame(
                gateway_pb2.GetPrivateGameRequest(code=created.code), metadata=outsider.metadata, timeout=10
            )
        assert refused.value.code() == grpc.StatusCode.PERMISSION_DENIED
        started = await host.stub.StartPrivateGame(
            gateway_pb2.StartPrivateGameRequest(code=created.code), metadata=host.metadata, timeout=10
        )
        host_seat = await _seat(host, started.table_id)
        friend_seat = await _seat(friend, started.table_id)
        assert friend_seat == (host_seat + 2) % 4, (host_seat, friend_seat)
    finally:
        await host.close()
        await friend.close()
        await outsider.close()


async def test_the_host_names_his_partner_when_he_starts_on_the_session_stream(platform: Platform) -> None:
    """The host arranges the seats before the start: on the Session stream he starts with the
    second friend who joined as his partner, and that friend sits opposite him."""
    host, first, second = [await signed_in(platform.target, n) for n in ("arr-host", "arr-first", "arr-second")]
    try:
        wish = matchmaking_pb2.GameWish(variant=common_pb2.VARIANT_TRIX_PARTNERSHIP)
        created = await host.stub.CreatePrivateGame(
            gateway_pb2.CreatePrivateGameRequest(wish=wish), metadata=host.metadata, timeout=10
        )
        for friend in (first, second):
            await friend.stub.JoinPrivateGame(
                gateway_pb2.JoinPrivateGameRequest(code=created.code), metadata=friend.metadata, timeout=10
            )
        stream = host.open()
        start = gateway_pb2.StartPrivateGameRequest(code=created.code, partner=2)
        host.send(gateway_pb2.SessionRequest(request_id="start", start_private=start))

        async def started() -> str:
            async for m in stream:
                assert not m.HasField("error"), m.error
                if m.HasField("private_started"):
                    return str(m.private_started.table_id)
            raise AssertionError("the stream ended before the start")

        table_id = await asyncio.wait_for(started(), 30)
        seats = {name: await _seat(c, table_id) for name, c in (("host", host), ("first", first), ("second", second))}
        assert seats["second"] == (seats["host"] + 2) % 4, seats
        assert seats["first"] in {(seats["host"] + 1) % 4, (seats["host"] + 3) % 4}, seats
    finally:
        for c in (host, first, second):
            await c.close()
