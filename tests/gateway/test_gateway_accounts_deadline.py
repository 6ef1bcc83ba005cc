"""A sign-in rides out a moment without the accounts bucket, within its call's deadline
(issue 19). During an election of the `gateway_accounts` stream (4-9 s after a NATS node
died) sign-ins answered UNAVAILABLE (71 in a 120-fault run of `make fault-nats`); a retry
of 12 s per call, tried before, outlived the client's 10 s SignIn deadline and turned them
into DEADLINE_EXCEEDED, which clients do not retry. Now the accounts read and create share
one budget, the call's time left less a margin to answer (`GatewayService.sign_in`): asked
again within it, answered UNAVAILABLE before it.

Real nats-server with the services' users (here the one node is stopped and started again:
nothing answers meanwhile, as during an election), the gateway's `KvAccounts` on the
provisioned `gateway_accounts` bucket."""

from __future__ import annotations

import asyncio
import time

import pytest

from support.nats import AuthNats
from trix.gateway.adapters import KvAccounts
from trix.natsio.connection import NatsConnection
from trix.natsio.publish import RETRYABLE


async def _start_after(server: AuthNats, pause_s: float) -> None:
    await asyncio.sleep(pause_s)
    await asyncio.to_thread(server.start)


async def test_an_accounts_read_and_create_wait_for_nats_within_their_budget(auth_nats: AuthNats) -> None:
    conn = NatsConnection(auth_nats.url("gateway"), "gateway-accounts")
    await conn.connect(give_up_after_s=30)
    back: asyncio.Future[None] | None = None
    try:
        accounts = KvAccounts(conn)
        assert await accounts.create("known", b'{"player_id": "g1"}', time.monotonic() + 8)

        auth_nats.stop()
        back = asyncio.ensure_future(_start_after(auth_nats, 1.5))
        t0 = time.monotonic()
        assert await accounts.get("known", t0 + 8) == b'{"player_id": "g1"}'  # asked again, not UNAVAILABLE
        assert time.monotonic() - t0 >= 1.0
        await back

        auth_nats.stop()
        back = asyncio.ensure_future(_start_after(auth_nats, 1.5))
        # True, or False if an attempt was stored but not acknowledged (its next one met its own
        # key): either way the account is stored, once, and the sign-in reads it back.
        await accounts.create("new", b'{"player_id": "g2"}', time.monotonic() + 8)
        await back
        assert await accounts.get("new", time.monotonic() + 8) == b'{"player_id": "g2"}'
        assert not await accounts.create("new", b'{"player_id": "g3"}', time.monotonic() + 8)  # one account per key
    finally:
        if back is not None:
            await back  # the server is running again: the fixture stops it
        await conn.drain()


async def test_an_accounts_read_nats_does_not_answer_fails_by_its_budget_not_after_it(auth_nats: AuthNats) -> None:
    conn = NatsConnection(auth_nats.url("gateway"), "gateway-accounts")
    await conn.connect(give_up_after_s=30)
    try:
        accounts = KvAccounts(conn)
        assert await accounts.create("known", b'{"player_id": "g1"}', time.monotonic() + 8)
        auth_nats.stop()
        t0 = time.monotonic()
        with pytest.raises(RETRYABLE):  # UNAVAILABLE to the client, which signs in again
            await accounts.get("known", t0 + 2.0)
        took = time.monotonic() - t0
        # Not the connection's 5 s request timeout: the client's deadline (here 2 s plus the
        # gateway's margin) is still ahead, so it hears UNAVAILABLE, not DEADLINE_EXCEEDED.
        assert 1.0 <= took <= 2.6, took
    finally:
        await asyncio.to_thread(auth_nats.start)
        await conn.drain()
