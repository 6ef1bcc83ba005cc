"""`python -m trix.table`: start a table replica and serve until SIGTERM/SIGINT.

On SIGTERM the replica hands every shard over to the others before it exits (issue 5).
Exit codes: 0 after a graceful stop, 1 if it could not start, 2 on a bad
configuration value (the message names the variable).
"""

from __future__ import annotations

import sys

from trix.natsio.connection import NatsConnection
from trix.runtime.server import Runtime, lifespan, run_main
from trix.table import grpc_api, subscribers
from trix.table.config import SERVICE, TableConfig
from trix.table.service import TableService


def build(config: TableConfig, service: TableService | None = None) -> Runtime:
    """Wire the table's logic to the runtime (tests pass their own service: clock, seeds).
    Its lifespan is the replica (`subscribers.TableReplica`): leaving it hands the shards over."""
    table = service or TableService(config)
    bus = subscribers.TableBus(config.command_timeout_s)

    async def start(nats: NatsConnection) -> subscribers.TableReplica:
        return await subscribers.start(nats, table, bus)

    return Runtime(config.runtime, [grpc_api.binding(table, bus)], lifespan=lifespan(start))


def main() -> int:
    return run_main(SERVICE, TableConfig.from_env, build)


if __name__ == "__main__":
    sys.exit(main())
