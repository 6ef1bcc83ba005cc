"""`python -m trix.timers`: start the timers service and serve until SIGTERM/SIGINT.

Exit codes: 0 after a graceful stop, 1 if it could not start, 2 on a bad
configuration value (the message names the variable).
"""

from __future__ import annotations

import sys

from trix.natsio.connection import NatsConnection
from trix.natsio.names import kv_stream
from trix.natsio.permissions import PRIVATE_STREAMS
from trix.natsio.provisioning import KV_BUCKETS, STREAMS
from trix.runtime.server import Runtime, Serving, lifespan, run_main
from trix.timers import bootstrap, grpc_api
from trix.timers.config import SERVICE, TimersConfig
from trix.timers.service import TimersService


def build(config: TimersConfig, new_service: bootstrap.NewTimers = TimersService) -> Runtime:
    """The timers's runtime: its lifespan builds the NATS adapters, the service on them
    (`new_service`: tests add a clock and a replica id) and runs `entrypoints.TimersNats`."""

    async def start(nats: NatsConnection) -> Serving:
        running = await bootstrap.start(nats, config, new_service)
        return Serving([grpc_api.binding(running.service)], running.service, running)

    # Least privilege: the timers' NATS user may not touch the table's private streams (docs/rules.md §14).
    declared = (
        [s for s in STREAMS if s.name not in PRIVATE_STREAMS],
        [b for b in KV_BUCKETS if kv_stream(b.bucket) not in PRIVATE_STREAMS],
    )
    return Runtime(config.runtime, lifespan=lifespan(start), nats_declared=declared)


def main() -> int:
    return run_main(SERVICE, TimersConfig.from_env, build)


if __name__ == "__main__":
    sys.exit(main())
