"""The timers' command to a table is sent again after a short attempt, within its deadline
(issue 42): an AutoAct that went to an owner cut off (its shards about to be taken over) is
never answered, and the bot's move should reach the new owner soon after it serves. With one
3 s request the move waited out the 3 s, and the next one came later still. Real nats-server
with the services' users; the timers' `NatsTableCommands`; two table-user connections subscribed to
the table's command subject standing for the owner cut off (it hears, never answers) and the new
one (it answers from its first second)."""

from __future__ import annotations

import asyncio

from nats.aio.msg import Msg

from support.keys import SuiteKeys
from support.nats import AuthNats
from support.takeover import Takeover
from trix.natsio import subjects
from trix.natsio.connection import NatsConnection
from trix.timers.adapters import COMMAND_ATTEMPT_S, NatsTableCommands
from trix.timers.ports import Outcome
from trix.v1 import table_pb2

TABLE = "cutoff"
NEW_OWNER_AFTER_S = 1.0


async def test_an_autoact_unanswered_by_an_owner_cut_off_reaches_the_new_owner_within_an_attempt(
    auth_nats: AuthNats,
) -> None:
    timers = NatsConnection(auth_nats.url("timers"), "timers-t")
    old_owner = NatsConnection(auth_nats.url("table"), "table-cut-off")
    table = NatsConnection(auth_nats.url("table"), "table-new-owner")
    await timers.connect(give_up_after_s=30)
    await old_owner.connect(give_up_after_s=30)
    await table.connect(give_up_after_s=30)
    heard_by_cut_off: list[bytes] = []
    answered: list[table_pb2.TableCommand] = []

    async def cut_off(msg: Msg) -> None:
        heard_by_cut_off.append(msg.data)  # no answer: its replies go nowhere

    async def new_owner(msg: Msg) -> None:
        answered.append(table_pb2.TableCommand.FromString(msg.data))
        await msg.respond(table_pb2.TableCommandReply(sequence=9).SerializeToString())

    subject = subjects.table_commands_of_shard(subjects.table_shard(TABLE))
    silent = await old_owner.client.subscribe(subject, cb=cut_off)
    await old_owner.client.flush()
    try:
        loop = asyncio.get_running_loop()
        serving: list[object] = []

        async def serve() -> None:
            await asyncio.sleep(NEW_OWNER_AFTER_S)
            serving.append(await table.client.subscribe(subject, cb=new_owner))
            await table.client.flush()

        takeover = asyncio.ensure_future(serve())
        commands = NatsTableCommands(timers, SuiteKeys("timers-tests").keys("timers").signer("timers"), timeout_s=3.0)
        t0 = loop.time()
        outcome = await commands.auto_act(TABLE, 2, 7)
        waited = loop.time() - t0
        await takeover

        assert outcome is Outcome.ACCEPTED
        # within an attempt (and a generous second for a loaded box) of the new owner serving
        assert NEW_OWNER_AFTER_S <= waited < NEW_OWNER_AFTER_S + COMMAND_ATTEMPT_S + 1.0, waited
        assert len(heard_by_cut_off) >= 2  # the same command, sent again after each attempt
        assert len(set(heard_by_cut_off)) == 1  # the same bytes each time (one turn, one seat)
        assert [c.auto_act.turn_seq for c in answered] == [7]
    finally:
        await silent.unsubscribe()
        await timers.drain()
        await old_owner.drain()
        await table.drain()


async def test_an_autoact_is_sent_again_when_a_replica_serves_its_shard_not_after_its_attempt(
    auth_nats: AuthNats,
) -> None:
    """The new owner says it serves the shard (`trix.table.served`, as the table's `ShardRouter`
    does once subscribed): the AutoAct waiting on the owner cut off is sent again then, not
    after its `COMMAND_ATTEMPT_S` (`support.takeover`)."""
    timers = NatsConnection(auth_nats.url("timers"), "timers-served")
    await timers.connect(give_up_after_s=30)
    reply = table_pb2.TableCommandReply(sequence=9).SerializeToString()
    try:
        async with Takeover(auth_nats, TABLE, reply) as takeover:
            signer = SuiteKeys("timers-tests").keys("timers").signer("timers")
            commands = NatsTableCommands(timers, signer, timeout_s=3.0)
            await commands.requests._inbox()  # subscribed as at its first command
            await timers.client.flush()
            loop = asyncio.get_running_loop()
            serving = takeover.start()
            t0 = loop.time()
            outcome = await commands.auto_act(TABLE, 2, 7)
            waited = loop.time() - t0
            await serving

            assert outcome is Outcome.ACCEPTED
            assert takeover.heard_by_cut_off  # the first attempt went to the owner cut off
            assert takeover.after_s <= waited < COMMAND_ATTEMPT_S, waited  # not waited out
    finally:
        await timers.drain()
