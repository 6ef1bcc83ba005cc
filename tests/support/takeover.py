"""A shard changing hands under a caller (issue 42): the owner cut off, which hears the shard's
commands and never answers, and the new owner, which subscribes `after_s` later, answers every
command with `reply` and says it serves the shard (`trix.natsio.served.announce`, as the
table's `ShardRouter` does). Both are table-user connections to a real nats-server."""

from __future__ import annotations

import asyncio
from types import TracebackType

from nats.aio.msg import Msg

from support.nats import AuthNats
from trix.natsio import served, subjects
from trix.natsio.connection import NatsConnection


class Takeover:
    def __init__(self, auth_nats: AuthNats, table_id: str, reply: bytes, after_s: float = 0.1) -> None:
        self.shard = subjects.table_shard(table_id)
        self.reply = reply
        self.after_s = after_s
        self.old = NatsConnection(auth_nats.url("table"), "table-cut-off")
        self.new = NatsConnection(auth_nats.url("table"), "table-new-owner")
        self.heard_by_cut_off: list[bytes] = []

    async def __aenter__(self) -> Takeover:
        for conn in (self.old, self.new):
            await conn.connect(give_up_after_s=30)

        async def cut_off(msg: Msg) -> None:
            self.heard_by_cut_off.append(msg.data)  # no answer

        await self.old.client.subscribe(subjects.table_commands_of_shard(self.shard), cb=cut_off)
        await self.old.client.flush()
        return self

    def start(self) -> asyncio.Future[None]:
        """The new owner serves `after_s` from now."""
        return asyncio.ensure_future(self._take_over())

    async def _take_over(self) -> None:
        async def answer(msg: Msg) -> None:
            await msg.respond(self.reply)

        await asyncio.sleep(self.after_s)
        await self.new.client.subscribe(subjects.table_commands_of_shard(self.shard), cb=answer)
        await self.new.client.flush()
        await served.announce(self.new.client, [self.shard])

    async def __aexit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        for conn in (self.old, self.new):
            await conn.drain()
