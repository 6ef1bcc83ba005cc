"""The timers' wiring: the NATS adapters, the service built on them, its entrypoints started.

Owns `start`, the one place the timers service is assembled (`__main__.build` runs it
in the runtime's lifespan; tests pass their own `NewTimers`).
"""

from __future__ import annotations

from collections.abc import Callable

from trix.natsio.connection import NatsConnection
from trix.timers.adapters import DEADLINES_BUCKET, KvDocStore, NatsTableCommands
from trix.timers.config import TimersConfig
from trix.timers.entrypoints import REPLICAS_BUCKET, TimersNats
from trix.timers.ports import DocStore, TableCommands
from trix.timers.service import TimersService

NewTimers = Callable[[TimersConfig, DocStore, TableCommands], TimersService]
"""Builds the service from its adapters (`TimersService` itself; tests add a clock, a replica id)."""


async def start(nats_conn: NatsConnection, config: TimersConfig, new_service: NewTimers = TimersService) -> TimersNats:
    """Once NATS is connected and provisioned: the adapters, the service built on them, and its
    subscriptions started (`TimersNats.service` is the service)."""
    js = nats_conn.jetstream
    deadlines = await js.key_value(DEADLINES_BUCKET)
    replicas = await js.key_value(REPLICAS_BUCKET)
    commands = NatsTableCommands(nats_conn, config.signer, config.command_timeout_s)
    running = TimersNats(nats_conn, new_service(config, KvDocStore(deadlines, js), commands), deadlines, replicas)
    await running.start()
    return running
