"""Finished records do not stay forever: a cancelled or expired ticket and the player's lock
naming it are purged `retention_s` after they finished; a matched ticket, its match record
and a finished lobby `matched_retention_s` after. Live tickets stay. The partition owner
purges each key only up to the revision it saw, so a newer value (a new ticket holding the
player's lock) is never removed, whichever replica is behind. Real nats-server, real gRPC,
injected clock."""

from __future__ import annotations

import asyncio
import random
from collections.abc import AsyncIterator
from dataclasses import dataclass
from functools import partial

import grpc
import nats
import nats.js.errors
import pytest
from mm_support import config, identity, service_of, serving_replica

from support.clock import ManualClock
from support.nats import NatsServer
from trix.matchmaking.adapters import TICKETS_BUCKET, KvStore
from trix.matchmaking.queue_status import queue_status_key
from trix.matchmaking.service import MatchmakingService
from trix.runtime.server import Runtime
from trix.v1 import common_pb2
from trix.v1 import matchmaking_pb2 as mm
from trix.v1.matchmaking_pb2_grpc import MatchmakingServiceStub as Stub

pytestmark = pytest.mark.timeout(120)

RETENTION_S = 60.0
MATCHED_RETENTION_S = 120.0


@dataclass
class Env:
    clock: ManualClock
    service: MatchmakingService
    runtime: Runtime
    api: Stub
    nats_url: str


@pytest.fixture
async def env(nats_server: NatsServer) -> AsyncIterator[Env]:
    clock = ManualClock()
    cfg = config(
        nats_server.url,
        bot_fill_after_s=1000.0,
        ticket_ttl_s=300.0,
        retention_s=RETENTION_S,
        matched_retention_s=MATCHED_RETENTION_S,
    )
    new_service = partial(MatchmakingService, clock=clock, rng=random.Random(3))
    runtime, channel, api = await serving_replica(cfg, new_service)
    service = service_of(runtime)
    try:
        yield Env(clock, service, runtime, api, nats_server.url)
    finally:
        await channel.close()
        await runtime.stop()


async def stored_keys(url: str) -> tuple[set[str], int]:
    """The bucket's keys and the number of messages its stream holds (tombstones included).

    Read from the stream's per-subject counts and each subject's last message, not with
    `KeyValue.keys()`: that one watches the bucket and, racing the purges under test, once
    waited past the test's 120 s for the end of the initial values."""
    nc = await nats.connect(url)
    try:
        js = nc.jetstream()
        stream, prefix = f"KV_{TICKETS_BUCKET}", f"$KV.{TICKETS_BUCKET}."
        info = await js.stream_info(stream, subjects_filter=f"{prefix}>")
        keys: set[str] = set()
        for subject in info.state.subjects or {}:
            try:
                last = await js.get_msg(stream, subject=subject)
            except nats.js.errors.NotFoundError:
                continue  # purged since the count
            if (last.headers or {}).get("KV-Operation") not in ("DEL", "PURGE"):
                keys.add(subject.removeprefix(prefix))
        return keys, info.state.messages
    finally:
        await nc.close()


async def enqueue(api: Stub, player: str, request_id: str = "") -> mm.Ticket:
    request = mm.EnqueueTicketRequest(wish=mm.GameWish(variant=common_pb2.VARIANT_TRIX), request_id=request_id)
    return (await api.EnqueueTicket(request, metadata=identity(player), timeout=30)).ticket


async def cancel(api: Stub, player: str, ticket_id: str) -> None:
    await api.CancelTicket(mm.CancelTicketRequest(ticket_id=ticket_id), metadata=identity(player), timeout=30)


async def wait_for_keys(env: Env, expect: set[str], timeout_s: float = 15.0) -> tuple[set[str], int]:
    deadline = asyncio.get_running_loop().time() + timeout_s
    while True:
        keys, messages = await stored_keys(env.nats_url)
        if keys == expect or asyncio.get_running_loop().time() > deadline:
            return keys, messages
        await asyncio.sleep(0.1)


def tk(ticket: mm.Ticket) -> str:
    return f"tk.{ticket.ticket_id[:2]}.{ticket.ticket_id}"


async def count_key(env: Env, ticket: mm.Ticket) -> str:
    """The key of the count of the queue a searching ticket waits in (issue 39: its player is
    shown it), which lives as long as someone waits there."""
    got = await env.service.tickets.get_ticket(ticket.ticket_id)
    assert got is not None
    return queue_status_key(got[0].wish.queue_key())


async def test_finished_tickets_locks_matches_and_lobbies_are_purged_after_retention(env: Env) -> None:
    api = env.api
    players = [f"m{i}" for i in range(4)]
    matched = [await enqueue(api, p) for p in players]
    for _ in range(100):
        if env.service.matches_formed == 1:
            break
        await asyncio.sleep(0.05)
    assert env.service.matches_formed == 1
    (match_key,) = [k for k in (await stored_keys(env.nats_url))[0] if k.startswith("mt.")]
    gone = await enqueue(api, "quitter", request_id="q1")
    await cancel(api, "quitter", gone.ticket_id)
    lobby = await api.CreatePrivateTable(
        mm.CreatePrivateTableRequest(wish=mm.GameWish(variant=common_pb2.VARIANT_TRIX)), metadata=identity("host")
    )
    await cancel(api, "host", lobby.ticket.ticket_id)  # the host closes the private table
    lobby_keys = {k for k in (await stored_keys(env.nats_url))[0] if k.startswith("lb.")}
    assert len(lobby_keys) == 1

    env.clock.advance(30.0)
    live = await enqueue(api, "waiting")  # searching: must survive every purge below
    live_keys = {tk(live), "pl.waiting", await count_key(env, live)}
    matched_keys = {tk(t) for t in matched} | {f"pl.{p}" for p in players} | {match_key}

    env.clock.advance(RETENTION_S - 29.0)  # the cancelled tickets' retention is over, not the matched
    keys, _ = await wait_for_keys(env, live_keys | matched_keys | lobby_keys)
    assert keys == live_keys | matched_keys | lobby_keys
    # Within the retention a retried request got its ticket back; after it, it is a new ticket.
    again = await enqueue(api, "quitter", request_id="q1")
    assert again.state == mm.TICKET_STATE_SEARCHING
    await cancel(api, "quitter", again.ticket_id)

    env.clock.advance(MATCHED_RETENTION_S)
    keys, messages = await wait_for_keys(env, live_keys)
    assert keys == live_keys
    assert messages == len(live_keys)  # purged, not tombstoned: the stream holds only live values
    assert env.service.retired >= 4 + 1 + 1 + 1 + 1
    # The live ticket still matches, the matched players may queue again.
    assert (await enqueue(api, "m0")).state == mm.TICKET_STATE_SEARCHING


async def test_a_lock_taken_by_a_newer_ticket_survives_the_old_tickets_purge(env: Env) -> None:
    api = env.api
    old = await enqueue(api, "c1")
    await cancel(api, "c1", old.ticket_id)
    env.clock.advance(30.0)
    new = await enqueue(api, "c1")  # the player's lock now names the new ticket
    env.clock.advance(RETENTION_S)  # the old ticket's retention is over, the new one searches on
    expect = {tk(new), "pl.c1", await count_key(env, new)}
    keys, _ = await wait_for_keys(env, expect)
    assert keys == expect
    with pytest.raises(grpc.aio.AioRpcError) as err:  # the lock still holds the new ticket
        await enqueue(api, "c1")
    assert err.value.code() == grpc.StatusCode.ALREADY_EXISTS


async def test_purge_removes_only_the_revision_seen(nats_server: NatsServer) -> None:
    """Two replicas may retire the same key: each purges up to the revision it saw, so one
    that is behind never removes a value written after it looked."""
    nc = await nats.connect(nats_server.url)
    try:
        js = nc.jetstream()
        from trix.natsio.provisioning import provision

        await provision(js)
        store = KvStore(await js.key_value(TICKETS_BUCKET), js)
        first = await store.create("pl.someone", b"old-ticket")
        assert first is not None
        second = await store.update("pl.someone", b"new-ticket", first)
        assert second is not None
        await store.purge("pl.someone", first)  # a replica that saw the old value
        assert await store.get("pl.someone") == (b"new-ticket", second)
        await store.purge("pl.someone", second)
        await store.purge("pl.someone", second)  # twice: idempotent
        assert await store.get("pl.someone") is None
    finally:
        await nc.close()
