"""A seat action whose attempt went to an owner cut off is sent again as soon as a replica says
it serves the table's shard (`trix.table.served`, issue 42): not after the attempt's
`COMMAND_ATTEMPT_S`. Real nats-server with the services' users: a table-user connection
subscribed to the table's command subject standing for the owner cut off (it hears, never
answers), another for the new owner (subscribes after `NEW_OWNER_AFTER_S`, answers, and
announces the shard as the table's `ShardRouter` does), the gateway's `NatsTables`."""

from __future__ import annotations

import asyncio

from nats.aio.msg import Msg

from support.nats import AuthNats
from support.table import KEYS
from trix.gateway.adapters import COMMAND_ATTEMPT_S, NatsTables
from trix.natsio import served, subjects
from trix.natsio.connection import NatsConnection
from trix.v1 import table_pb2

TABLE = "served"
NEW_OWNER_AFTER_S = 0.1


async def test_a_seat_action_is_sent_again_when_a_replica_serves_its_shard_not_after_its_attempt(
    auth_nats: AuthNats,
) -> None:
    gateway = NatsConnection(auth_nats.url("gateway"), "gateway-served")
    old_owner = NatsConnection(auth_nats.url("table"), "table-cut-off")
    table = NatsConnection(auth_nats.url("table"), "table-new-owner")
    for conn in (gateway, old_owner, table):
        await conn.connect(give_up_after_s=30)
    heard_by_cut_off: list[bytes] = []

    async def cut_off(msg: Msg) -> None:
        heard_by_cut_off.append(msg.data)  # no answer

    async def new_owner(msg: Msg) -> None:
        await msg.respond(table_pb2.TableCommandReply(sequence=5).SerializeToString())

    shard = subjects.table_shard(TABLE)
    silent = await old_owner.client.subscribe(subjects.table_commands_of_shard(shard), cb=cut_off)
    await old_owner.client.flush()
    tables = NatsTables(gateway, KEYS.player, timeout_s=5.0)
    await tables._replies()  # subscribed as at its first command
    await gateway.client.flush()

    async def take_over() -> None:
        await asyncio.sleep(NEW_OWNER_AFTER_S)
        await table.client.subscribe(subjects.table_commands_of_shard(shard), cb=new_owner)
        await table.client.flush()
        await served.announce(table.client, [shard])

    try:
        takeover = asyncio.ensure_future(take_over())
        header = table_pb2.ActionHeader(table_id=TABLE, seat=1, action_id="a-1")
        move = table_pb2.TableCommand(play_card=table_pb2.PlayCardRequest(header=header))
        loop = asyncio.get_running_loop()
        t0 = loop.time()
        reply = await tables.command(TABLE, move, "ann", action_id="a-1")
        waited = loop.time() - t0
        await takeover

        assert reply.sequence == 5
        assert heard_by_cut_off  # the first attempt went to the owner cut off
        # Sent again when the new owner said it serves: well within the attempt it waited on.
        assert NEW_OWNER_AFTER_S <= waited < COMMAND_ATTEMPT_S, waited
        assert not tables._by_cause and not tables._waiting  # nothing left waiting
    finally:
        await silent.unsubscribe()
        for conn in (gateway, old_owner, table):
            await conn.drain()
