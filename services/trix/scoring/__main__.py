"""`python -m trix.scoring`: start the scoring service and serve until SIGTERM/SIGINT.

Exit codes: 0 after a graceful stop, 1 if it could not start, 2 on a bad
configuration value (the message names the variable).
"""

from __future__ import annotations

import sys

from trix.natsio.connection import NatsConnection
from trix.natsio.permissions import PRIVATE_STREAMS
from trix.natsio.provisioning import KV_BUCKETS, STREAMS
from trix.runtime.server import Runtime, lifespan, run_main
from trix.scoring import grpc_api, subscribers
from trix.scoring.config import SERVICE, ScoringConfig
from trix.scoring.service import ScoringService


def build(config: ScoringConfig, service: ScoringService | None = None) -> Runtime:
    """Wire the scoring's logic to the runtime. Its lifespan loads the journal and runs the
    event consumer (`subscribers.EventConsumer`)."""
    scoring = service or ScoringService(config)

    async def start(nats: NatsConnection) -> subscribers.EventConsumer:
        return await subscribers.start(nats, scoring)

    # Least privilege: the scoring's NATS user may not touch the table's private streams
    # (docs/rules.md §14), so it does not declare them either (the table service does).
    declared = (
        [s for s in STREAMS if s.name not in PRIVATE_STREAMS],
        [b for b in KV_BUCKETS if f"KV_{b.bucket}" not in PRIVATE_STREAMS],
    )
    return Runtime(config.runtime, [grpc_api.binding(scoring)], lifespan=lifespan(start), nats_declared=declared)


def main() -> int:
    return run_main(SERVICE, ScoringConfig.from_env, build)


if __name__ == "__main__":
    sys.exit(main())
