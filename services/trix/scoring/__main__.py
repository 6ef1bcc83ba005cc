"""`python -m trix.scoring`: start the scoring service and serve until SIGTERM/SIGINT.

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
from trix.scoring import bootstrap, grpc_api
from trix.scoring.config import SERVICE, ScoringConfig
from trix.scoring.service import ScoringService


def build(config: ScoringConfig, new_service: bootstrap.NewScoring = ScoringService) -> Runtime:
    """The scoring's runtime: its lifespan builds the service on the journal (`new_service`),
    loads it and runs the event consumer (`entrypoints.EventConsumer`)."""

    async def start(nats: NatsConnection) -> Serving:
        consumer = await bootstrap.start(nats, config, new_service)
        return Serving([grpc_api.binding(consumer.service)], consumer.service, consumer)

    # Least privilege: the scoring's NATS user may not touch the table's private streams
    # (docs/rules.md §14), so it does not declare them either (the table service does).
    declared = (
        [s for s in STREAMS if s.name not in PRIVATE_STREAMS],
        [b for b in KV_BUCKETS if kv_stream(b.bucket) not in PRIVATE_STREAMS],
    )
    return Runtime(config.runtime, lifespan=lifespan(start), nats_declared=declared)


def main() -> int:
    return run_main(SERVICE, ScoringConfig.from_env, build)


if __name__ == "__main__":
    sys.exit(main())
