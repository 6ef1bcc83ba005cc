"""`python -m trix.scoring`: start the scoring service and serve until SIGTERM/SIGINT.

Exit codes: 0 after a graceful stop, 1 if it could not start, 2 on a bad
configuration value (the message names the variable).
"""

from __future__ import annotations

import sys

from trix.natsio.connection import NatsConnection
from trix.natsio.permissions import PRIVATE_STREAMS
from trix.natsio.provisioning import KV_BUCKETS, STREAMS
from trix.runtime.server import Runtime, run_main
from trix.scoring import grpc_api, subscribers
from trix.scoring.config import SERVICE, ScoringConfig
from trix.scoring.service import ScoringService


class ScoringRuntime(Runtime):
    """The runtime plus the scoring's event consumer, stopped before NATS drains."""

    consumer: subscribers.EventConsumer | None = None

    async def stop(self) -> None:
        if self.consumer is not None:
            await self.consumer.stop()
            self.consumer = None
        await super().stop()


def build(config: ScoringConfig, service: ScoringService | None = None) -> ScoringRuntime:
    """Wire the scoring's logic to the runtime."""
    service = service or ScoringService(config)
    runtime: ScoringRuntime

    async def start_subscribers(nats: NatsConnection) -> None:
        runtime.consumer = await subscribers.start(nats, service)

    # Least privilege: the scoring's NATS user may not touch the table's private streams
    # (docs/rules.md §14), so it does not declare them either (the table service does).
    declared = (
        [s for s in STREAMS if s.name not in PRIVATE_STREAMS],
        [b for b in KV_BUCKETS if f"KV_{b.bucket}" not in PRIVATE_STREAMS],
    )
    runtime = ScoringRuntime(
        config.runtime, [grpc_api.binding(service)], start_subscribers=start_subscribers, nats_declared=declared
    )
    return runtime


def main() -> int:
    return run_main(SERVICE, ScoringConfig.from_env, build)


if __name__ == "__main__":
    sys.exit(main())
