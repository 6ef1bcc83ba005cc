"""A sign-in rides out a moment without NATS (issue 19): the gateway's accounts read and
create, when NATS does not answer (the accounts bucket's stream electing a leader after a
node died: 4-9 s; here the one nats-server restarted), are tried again for
`ACCOUNTS_RETRY_S` instead of answering UNAVAILABLE (71 sign-ins refused in a `make
fault-nats` run of 120 faults). Real nats-server with the services' users, the gateway's
`KvAccounts` on the provisioned `gateway_accounts` bucket."""

from __future__ import annotations

import asyncio
import time

from support.nats import AuthNats
from trix.gateway.subscribers import KvAccounts
from trix.natsio.connection import NatsConnection


async def _restart_after(server: AuthNats, pause_s: float) -> None:
    await asyncio.sleep(pause_s)
    await asyncio.to_thread(server.start)


async def test_an_accounts_read_and_create_while_nats_restarts_answer_once_it_is_back(auth_nats: AuthNats) -> None:
    conn = NatsConnection(auth_nats.url("gateway"), "gateway-accounts", request_timeout_s=0.5)
    await conn.connect(give_up_after_s=30)
    back: asyncio.Future[None] | None = None
    try:
        accounts = KvAccounts(conn)
        assert await accounts.create("known", b'{"player_id": "g1"}')

        auth_nats.stop()
        back = asyncio.ensure_future(_restart_after(auth_nats, 1.5))
        t0 = time.monotonic()
        assert await accounts.get("known") == b'{"player_id": "g1"}'  # not UNAVAILABLE: asked again
        assert time.monotonic() - t0 >= 1.0
        await back

        auth_nats.stop()
        back = asyncio.ensure_future(_restart_after(auth_nats, 1.5))
        # True, or False if an attempt was stored but not acknowledged (its retry met its own
        # key): either way the account is stored, once, and the sign-in reads it back.
        await accounts.create("new", b'{"player_id": "g2"}')
        await back
        assert await accounts.get("new") == b'{"player_id": "g2"}'
        assert not await accounts.create("new", b'{"player_id": "g3"}')  # one account per key
    finally:
        if back is not None:
            await back  # the server is running again: the fixture stops it
        await conn.drain()
