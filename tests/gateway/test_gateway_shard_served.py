"""A seat action whose attempt went to an owner cut off is sent again as soon as a replica says
it serves the table's shard (`trix.table.served`, issue 42): not after the attempt's
`COMMAND_ATTEMPT_S`. Real nats-server with the services' users, `support.takeover` for the
owner cut off and the new one, the gateway's `NatsTables`."""

from __future__ import annotations

import asyncio

from support.nats import AuthNats
from support.table import KEYS
from support.takeover import Takeover
from trix.gateway.adapters import COMMAND_ATTEMPT_S, NatsTables
from trix.natsio.connection import NatsConnection
from trix.v1 import table_pb2

TABLE = "served"


async def test_a_seat_action_is_sent_again_when_a_replica_serves_its_shard_not_after_its_attempt(
    auth_nats: AuthNats,
) -> None:
    gateway = NatsConnection(auth_nats.url("gateway"), "gateway-served")
    await gateway.connect(give_up_after_s=30)
    reply = table_pb2.TableCommandReply(sequence=5).SerializeToString()
    try:
        async with Takeover(auth_nats, TABLE, reply) as takeover:
            tables = NatsTables(gateway, KEYS.player, timeout_s=5.0)
            await tables._replies()  # subscribed as at its first command
            await gateway.client.flush()
            header = table_pb2.ActionHeader(table_id=TABLE, seat=1, action_id="a-1")
            move = table_pb2.TableCommand(play_card=table_pb2.PlayCardRequest(header=header))
            loop = asyncio.get_running_loop()
            serving = takeover.start()
            t0 = loop.time()
            answer = await tables.command(TABLE, move, "ann", action_id="a-1")
            waited = loop.time() - t0
            await serving

            assert answer.sequence == 5
            assert takeover.heard_by_cut_off  # the first attempt went to the owner cut off
            # Sent again when the new owner said it serves: well within the attempt it waited on.
            assert takeover.after_s <= waited < COMMAND_ATTEMPT_S, waited
            assert not tables._by_cause and not tables._waiting  # nothing left waiting
    finally:
        await gateway.drain()
