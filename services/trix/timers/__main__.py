"""`python -m trix.timers`: start the timers service and serve until SIGTERM/SIGINT.

Exit codes: 0 after a graceful stop, 1 if it could not start, 2 on a bad
configuration value (the message names the variable).
"""

from __future__ import annotations

import sys

from trix.natsio.connection import NatsConnection
from trix.natsio.permissions import PRIVATE_STREAMS
from trix.natsio.provisioning import KV_BUCKETS, STREAMS
from trix.runtime.server import Runtime, run_main
from trix.timers import grpc_api, subscribers
from trix.timers.config import SERVICE, TimersConfig
from trix.timers.service import TimersService


class TimersRuntime(Runtime):
    """The runtime plus the timers' consumers and scheduler, stopped before NATS drains."""

    running: subscribers.TimersNats | None = None

    async def stop(self) -> None:
        if self.running is not None:
            await self.running.stop()
            self.running = None
        await super().stop()


def build(config: TimersConfig, service: TimersService | None = None) -> TimersRuntime:
    """Wire the timers's logic to the runtime (tests pass their own service: clock, replica id)."""
    service = service or TimersService(config)
    runtime: TimersRuntime

    async def start_subscribers(nats: NatsConnection) -> None:
        runtime.running = await subscribers.start(nats, service)

    # Least privilege: the timers' NATS user may not touch the table's private streams (docs/rules.md §14).
    declared = (
        [s for s in STREAMS if s.name not in PRIVATE_STREAMS],
        [b for b in KV_BUCKETS if f"KV_{b.bucket}" not in PRIVATE_STREAMS],
    )
    runtime = TimersRuntime(
        config.runtime, [grpc_api.binding(service)], start_subscribers=start_subscribers, nats_declared=declared
    )
    return runtime


def main() -> int:
    return run_main(SERVICE, TimersConfig.from_env, build)


if __name__ == "__main__":
    sys.exit(main())
