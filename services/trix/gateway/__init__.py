"""The gateway service (issue 9): players' sessions: authentication, one stream per
connected player, resume, per-seat filtering, rate limits, presence.

Skeleton shared by every service: `__main__` (start, signals), `config` (frozen
dataclass from the environment), `service` (logic; imports neither grpc nor nats),
`grpc_api` (proto <-> domain only), `subscribers` (NATS handlers). Run it with
`python -m trix.gateway`.
"""
