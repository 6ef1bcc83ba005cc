"""`python -m trix.table`: start a table replica and serve until SIGTERM/SIGINT.

On SIGTERM the replica hands its shards over before it exits (ADR 0007). Exit codes: 0
after a graceful stop, 1 if it could not start, 2 on a bad configuration value (named).
"""

from __future__ import annotations

import sys

from trix.natsio.connection import NatsConnection
from trix.runtime.server import Runtime, Serving, lifespan, run_main
from trix.table import bootstrap, grpc_api
from trix.table.adapters import TableBus
from trix.table.config import SERVICE, TableConfig
from trix.table.ports import NewTable
from trix.table.service import TableService


def build(config: TableConfig, new_service: NewTable = TableService) -> Runtime:
    """The table's runtime: its lifespan builds the adapters, the service on them (`new_service`:
    tests add a clock and seeds) and runs the replica (`bootstrap.TableReplica`): leaving it
    hands the shards over."""

    async def start(nats: NatsConnection) -> Serving:
        replica = await bootstrap.start(nats, config, new_service)
        bus = TableBus(nats, config.command_timeout_s)
        return Serving([grpc_api.binding(replica.service, bus)], replica.service, replica)

    return Runtime(config.runtime, lifespan=lifespan(start))


def main() -> int:
    return run_main(SERVICE, TableConfig.from_env, build)


if __name__ == "__main__":
    sys.exit(main())
