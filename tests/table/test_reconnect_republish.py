"""After its NATS connection comes back, a table owner publishes each live table's last batch
again (issue 19): events travel on core NATS, at most once, so a batch sent into a dying
connection would be lost for every reader, the timers included, and a turn could wait with
nobody knowing it started. Real nats-server (restarted on its port, its store kept), the
table service in-process, the C engine."""

from __future__ import annotations

import asyncio

from conftest import InProcessTable
from support.table import GatewayClient, create_request, token
from support.waiting import eventually
from trix.natsio import subjects
from trix.v1 import common_pb2, events_pb2, table_pb2

PLAYERS = ("ann", "ben", "cat", "dan")


async def test_the_last_batch_of_a_live_table_is_published_again_after_a_reconnect(
    table_service: InProcessTable, gateway: GatewayClient
) -> None:
    batches: list[list[int]] = []

    async def on_batch(msg: object) -> None:
        data = getattr(msg, "data", b"")
        batches.append([e.sequence for e in events_pb2.TableEventBatch.FromString(data).events])

    t = "reconnects"
    await gateway.nc.subscribe(subjects.table_feed(t), cb=on_batch)
    await gateway.nc.flush()
    request = create_request(t, common_pb2.VARIANT_TRIX, PLAYERS)
    await gateway.request(t, table_pb2.TableCommand(create_table=request), token("service", "table"))
    await eventually(lambda: batches, 20, "the creation's batch")
    last = batches[-1]
    assert last, "the creation published events"

    # The owner's connection drops (its socket closed under it) while the reader's stays up.
    nats_conn = table_service.runtime.nats
    before = nats_conn.reconnects
    nats_conn.client._transport.close()  # a cut TCP connection, as a network fault leaves it
    await eventually(lambda: nats_conn.reconnects > before, 30, "the owner's reconnect")
    await eventually(lambda: len(batches) >= 2, 60, "the last batch published again after the reconnect")
    assert batches[1] == last  # the same events (readers drop what they have by sequence)
    await asyncio.sleep(0.5)
    assert len(batches) == 2  # once per reconnect, and nothing invented
