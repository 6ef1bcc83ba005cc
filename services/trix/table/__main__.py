"""`python -m trix.table`: start a table replica and serve until SIGTERM/SIGINT.

On SIGTERM the replica hands every shard over to the others before it exits (issue 5).
Exit codes: 0 after a graceful stop, 1 if it could not start, 2 on a bad
configuration value (the message names the variable).
"""

from __future__ import annotations

import sys

from trix.natsio.connection import NatsConnection
from trix.runtime.server import Runtime, ServiceBinding, run_main
from trix.table import grpc_api, subscribers
from trix.table.config import SERVICE, TableConfig
from trix.table.service import TableService


class TableRuntime(Runtime):
    """The runtime of a table replica: hands its shards over before the usual shutdown."""

    def __init__(self, config: TableConfig, service: TableService, bus: subscribers.TableBus) -> None:
        self.service = service
        self.replica: subscribers.TableReplica | None = None
        bindings: list[ServiceBinding] = [grpc_api.binding(service, bus)]

        async def start_subscribers(nats: NatsConnection) -> None:
            self.replica = await subscribers.start(nats, service, bus)

        super().__init__(config.runtime, bindings, start_subscribers=start_subscribers)

    async def stop(self) -> None:
        replica, self.replica = self.replica, None
        if replica is not None:
            nats = self.nats
            if nats is not None and nats.nc is not None and nats.nc.is_connected:
                await replica.handover()
            else:
                await replica.close()
        await super().stop()


def build(config: TableConfig, service: TableService | None = None) -> Runtime:
    """Wire the table's logic to the runtime (tests pass their own service: clock, seeds)."""
    service = service or TableService(config)
    bus = subscribers.TableBus(config.command_timeout_s)
    return TableRuntime(config, service, bus)


def main() -> int:
    return run_main(SERVICE, TableConfig.from_env, build)


if __name__ == "__main__":
    sys.exit(main())
