"""A table replica's word that it serves shards it has just won (ADR 0021, issue 42).

Owns the message on `subjects.table_served()` (the shards' numbers, comma-separated, core
NATS: at most once, a lost one costs the callers one attempt's wait), `announce` (the table's
`ShardRouter`, once the shards' commands are subscribed) and `ShardServed`, what the callers
(the gateway's `NatsTables`, the timers' `NatsTableCommands`) end an attempt waiting on one of
those shards with, to send the same bytes again at once: a command that went to an owner cut
off is never answered, and its attempt would otherwise wait its whole timeout after the new
owner serves. Nothing is sent or awaited per command: only when shards change hands.
"""

from __future__ import annotations

import asyncio

import nats.errors
import structlog
from nats.aio.client import NO_RESPONDERS_STATUS, Client
from nats.aio.msg import Msg
from nats.js.api import Header

from trix.natsio import subjects
from trix.natsio.coalesce import subscribe_direct
from trix.natsio.connection import NatsConnection

log = structlog.get_logger("trix.natsio.served")


class ShardServed(Exception):
    """The shard of the waiting command has a new owner serving it: send again now."""


def encode(shards: list[int]) -> bytes:
    return ",".join(str(int(s)) for s in shards).encode()


def decode(data: bytes) -> frozenset[int]:
    """The shards of a served message (nothing for a malformed one)."""
    try:
        return frozenset(int(s) for s in data.decode().split(",") if s)
    except ValueError:
        return frozenset()


async def announce(nc: Client, shards: list[int]) -> None:
    """Say that this replica serves `shards` (best effort: the callers' attempts time out anyway)."""
    if not shards:
        return
    try:
        await nc.publish(subjects.table_served(), encode(shards))
    except Exception as exc:  # noqa: BLE001 - NATS away: the callers' next attempts come anyway
        log.warning("shards served not announced", shards=shards, error=repr(exc))


class ServedRequests:
    """Requests on table command subjects whose attempt ends with `ShardServed` raised as a
    `nats.errors.TimeoutError` (so `ask_until` sends it again at once) when a replica says it
    serves the request's shard: the timers' AutoAct, Leave and ReclaimSeat. One reply
    subscription under the client's inbox and one on `table_served()`, made on first use;
    per request a future and a publish, as nats-py's own `request` does."""

    def __init__(self, nats: NatsConnection) -> None:
        self.nats = nats
        self._waiting: dict[str, tuple[int, asyncio.Future[Msg]]] = {}
        self._client: Client | None = None
        self._prefix = ""
        self._asked = 0
        self._lock = asyncio.Lock()

    async def _inbox(self) -> str:
        nc = self.nats.client
        if self._client is not nc:
            async with self._lock:
                if self._client is not nc:
                    prefix = nc.new_inbox()
                    await subscribe_direct(nc, f"{prefix}.*", self._on_reply)
                    await subscribe_direct(nc, subjects.table_served(), self._on_served)
                    self._prefix, self._client = prefix, nc
        return self._prefix

    async def request(self, subject: str, shard: int, data: bytes, headers: dict[str, str], timeout_s: float) -> Msg:
        prefix = await self._inbox()
        self._asked += 1
        inbox = f"{prefix}.{self._asked}"
        answer: asyncio.Future[Msg] = asyncio.get_running_loop().create_future()
        self._waiting[inbox] = (shard, answer)
        try:
            await self.nats.client.publish(subject, data, reply=inbox, headers=headers)
            return await asyncio.wait_for(answer, timeout_s)
        except (TimeoutError, ShardServed):
            raise nats.errors.TimeoutError from None
        finally:
            del self._waiting[inbox]

    def _on_reply(self, msg: Msg) -> None:
        entry = self._waiting.get(msg.subject)
        if entry is None or entry[1].done():
            return
        if not msg.data and (msg.headers or {}).get(Header.STATUS.value) == NO_RESPONDERS_STATUS:
            entry[1].set_exception(nats.errors.NoRespondersError())  # nobody serves the shard now
        else:
            entry[1].set_result(msg)

    def _on_served(self, msg: Msg) -> None:
        shards = decode(msg.data)
        for shard, answer in list(self._waiting.values()):
            if shard in shards and not answer.done():
                answer.set_exception(ShardServed())
