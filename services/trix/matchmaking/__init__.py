"""The matchmaking service (issue 6): tickets, queues per variant/options/stake, private
tables by code, partner pairs, bot fill, rating window.

Skeleton shared by every service: `__main__` (start, signals), `config` (frozen
dataclass from the environment), `service` (logic; imports neither grpc nor nats; with its pieces `wishes`,
`records`, `ports`, `matching`),
`grpc_api` (proto <-> domain only), `subscribers` (NATS handlers). Run it with
`python -m trix.matchmaking`.
"""
