"""`python -m trix.timers`: start the timers service and serve until SIGTERM/SIGINT.

Exit codes: 0 after a graceful stop, 1 if it could not start, 2 on a bad
configuration value (the message names the variable).
"""

from __future__ import annotations

import sys

from trix.natsio.connection import NatsConnection
from trix.natsio.permissions import PRIVATE_STREAMS
from trix.natsio.provisioning import KV_BUCKETS, STREAMS
from trix.runtime.server import Runtime, lifespan, run_main
from trix.timers import grpc_api, subscribers
from trix.timers.config import SERVICE, TimersConfig
from trix.timers.service import TimersService


def build(config: TimersConfig, service: TimersService | None = None) -> Runtime:
    """Wire the timers's logic to the runtime (tests pass their own service: clock, replica id).
    Its lifespan's running part is `subscribers.TimersNats`."""
    timers = service or TimersService(config)

    async def start(nats: NatsConnection) -> subscribers.TimersNats:
        return await subscribers.start(nats, timers)

    # Least privilege: the timers' NATS user may not touch the table's private streams (docs/rules.md §14).
    declared = (
        [s for s in STREAMS if s.name not in PRIVATE_STREAMS],
        [b for b in KV_BUCKETS if f"KV_{b.bucket}" not in PRIVATE_STREAMS],
    )
    return Runtime(config.runtime, [grpc_api.binding(timers)], lifespan=lifespan(start), nats_declared=declared)


def main() -> int:
    return run_main(SERVICE, TimersConfig.from_env, build)


if __name__ == "__main__":
    sys.exit(main())
