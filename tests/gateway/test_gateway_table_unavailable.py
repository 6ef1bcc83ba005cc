"""A table command answered UNAVAILABLE is sent again by the gateway, same bytes, same action
id, within its deadline (issue 19): while a shard changes hands (the replica answering no
longer, or not yet, may write the table) the player's move waits for the owner instead of
coming back to the client, which would retry only after its own pause. In `make
fault-nats`, a table replica's host cut off cost play 8.6 s at p95 while NATS itself was
fine. Real nats-server with the services' users, the real table service (C engine) behind
`trix.table.codec.handle_command` on the table's command subject, the gateway's `NatsTables`."""

from __future__ import annotations

import asyncio
import random
import time

from nats.aio.msg import Msg

from support.nats import AuthNats
from support.table import KEYS, choose_move, create_request, read_log, table_env
from trix.gateway.adapters import NatsTables
from trix.natsio import subjects
from trix.natsio.connection import NatsConnection
from trix.runtime.identity import TOKEN_HEADER, Caller
from trix.table.adapters import JetStreamStore, NatsSink
from trix.table.codec import handle_command
from trix.table.config import TableConfig
from trix.table.service import TableService
from trix.v1 import common_pb2, table_pb2

PLAYERS = ("ann", "ben", "cat", "dan")
TABLE = "handover"


async def test_a_move_answered_unavailable_during_a_handover_is_applied_once_when_the_owner_can_write(
    auth_nats: AuthNats,
) -> None:
    table_url = auth_nats.url("table")
    table_conn = NatsConnection(table_url, "table-a")
    gateway_conn = NatsConnection(auth_nats.url("gateway"), "gateway-a")
    await table_conn.connect(give_up_after_s=30)
    await gateway_conn.connect(give_up_after_s=30)
    writable = [True]
    service = TableService(
        TableConfig.from_env(table_env(table_url)),
        JetStreamStore(table_conn, lambda _table: "table-a/1"),
        NatsSink(table_conn),
        may_write=lambda _table: writable[0],
        on_stale_writer=lambda _table: None,
        new_seed=lambda: random.Random(7).randbytes(32),
    )
    answered: list[str] = []

    async def answer(msg: Msg) -> None:
        reply = await handle_command(service, msg.data, (msg.headers or {}).get(TOKEN_HEADER))
        answered.append(table_pb2.TableCommandReply.FromString(reply).error.kind)
        await msg.respond(reply)

    sub = await table_conn.client.subscribe(subjects.table_commands_of_shard(subjects.table_shard(TABLE)), cb=answer)
    try:
        request = create_request(TABLE, common_pb2.VARIANT_TRIX, PLAYERS, seeds=("a", "b", "c", "d"))
        await service.create_table(Caller("service", "table"), request)
        tables = NatsTables(gateway_conn, KEYS.player, timeout_s=5.0)
        table = service.tables[TABLE]
        seat = table.to_act()[0]
        ask = table_pb2.TableCommand(get_seat_view=table_pb2.GetSeatViewRequest(table_id=TABLE, seat=seat))
        view = (await tables.command(TABLE, ask, PLAYERS[seat])).get_seat_view.view
        move = choose_move(view, random.Random(3))
        assert move is not None

        # The replica answering may not write (its lease lapsed, the new owner not writing
        # yet) for 1 s: the gateway's retries meet UNAVAILABLE, then the write.
        writable[0] = False
        asyncio.get_running_loop().call_later(1.0, lambda: writable.__setitem__(0, True))
        t0 = time.monotonic()
        reply = await tables.command(TABLE, move, PLAYERS[seat])
        waited = time.monotonic() - t0

        assert not reply.HasField("error")
        assert answered.count("Unavailable") >= 2  # refused, sent again, refused again...
        assert 1.0 <= waited < 3.0  # ...and applied within a pause of the owner writing
        log = await read_log(table_conn.jetstream, TABLE)
        assert [i for i, _ in log].count(_action_id(move)) == 1  # applied once
    finally:
        await sub.unsubscribe()
        await gateway_conn.drain()
        await table_conn.drain()


def _action_id(command: table_pb2.TableCommand) -> str:
    kind = command.WhichOneof("command")
    assert kind is not None
    action_id: str = getattr(command, kind).header.action_id
    return action_id
