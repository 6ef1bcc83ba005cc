"""`python -m trix.social`: start the social service and serve until SIGTERM/SIGINT.

Exit codes: 0 after a graceful stop, 1 if it could not start, 2 on a bad configuration value.
"""

from __future__ import annotations

import sys
import time

from trix.declarations import SOCIAL
from trix.natsio.connection import NatsConnection
from trix.natsio.provisioning import KV_BUCKETS, STREAMS, KvSpec, StreamSpec
from trix.runtime.server import Runtime, Serving, lifespan, run_main
from trix.social import bootstrap, grpc_api
from trix.social.config import SERVICE, SocialConfig


def build(config: SocialConfig, clock: bootstrap.Clock = time.monotonic) -> Runtime:
    """The social runtime: its lifespan loads the friendships and presence and starts the
    feeds; it serves `SocialService`."""

    async def start(nats: NatsConnection) -> Serving:
        feeds = await bootstrap.start(nats, config, clock)
        return Serving([grpc_api.binding(feeds.service, config.keys)], feeds.service, feeds)

    # Least privilege: only the streams and buckets it uses are checked at start.
    used = set(SOCIAL.grants.streams)
    declared: tuple[list[StreamSpec], list[KvSpec]] = (
        [s for s in STREAMS if s.name in used],
        [b for b in KV_BUCKETS if b.bucket in SOCIAL.buckets],
    )
    return Runtime(config.runtime, lifespan=lifespan(start), nats_declared=declared)


def main() -> int:
    return run_main(SERVICE, SocialConfig.from_env, build)


if __name__ == "__main__":
    sys.exit(main())
