"""`python -m trix.competitions`: start the competitions service and serve until SIGTERM/SIGINT.

Exit codes: 0 after a graceful stop, 1 if it could not start, 2 on a bad configuration value.
"""

from __future__ import annotations

import sys
import time

from trix.competitions import bootstrap, grpc_api
from trix.competitions.config import SERVICE, CompetitionsConfig
from trix.competitions.ports import Digests, EventLog, Tables
from trix.competitions.service import CompetitionsService
from trix.declarations import COMPETITIONS
from trix.natsio.connection import NatsConnection
from trix.natsio.names import COMPETITIONS_STREAM, TABLE_RESULTS_STREAM
from trix.natsio.provisioning import KV_BUCKETS, STREAMS, KvSpec, StreamSpec
from trix.runtime.server import Runtime, Serving, lifespan, run_main


def wall_clock_ms() -> int:
    return time.time_ns() // 1_000_000


def wall_clock_service(
    config: CompetitionsConfig, events: EventLog, tables: Tables, digests: Digests
) -> CompetitionsService:
    return CompetitionsService(config, events, tables, digests, clock_ms=wall_clock_ms)


def build(config: CompetitionsConfig, new_service: bootstrap.NewCompetitions = wall_clock_service) -> Runtime:
    """The competitions runtime: its lifespan rebuilds the competitions from their events,
    starts the ticker and joins the replicas' competition shard leases; it serves
    `CompetitionsService`."""

    async def start(nats: NatsConnection) -> Serving:
        replica = await bootstrap.start(nats, config, new_service)
        return Serving([grpc_api.binding(replica.service)], replica.service, replica)

    # Least privilege: only the streams and buckets it uses are checked at start.
    declared: tuple[list[StreamSpec], list[KvSpec]] = (
        [s for s in STREAMS if s.name in (COMPETITIONS_STREAM, TABLE_RESULTS_STREAM)],
        [b for b in KV_BUCKETS if b.bucket in COMPETITIONS.buckets],
    )
    return Runtime(config.runtime, lifespan=lifespan(start), nats_declared=declared)


def main() -> int:
    return run_main(SERVICE, CompetitionsConfig.from_env, build)


if __name__ == "__main__":
    sys.exit(main())
