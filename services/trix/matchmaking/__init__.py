"""The matchmaking service: tickets, queues per variant/options/stake, private tables by
code, partner pairs, bot fill, rating window.

Skeleton shared by every service: `__main__` (start, signals), `config` (frozen
dataclass from the environment), `ports` (what the logic is given, as Protocols),
`service` (logic; imports neither grpc nor nats; its collaborators and pure pieces are
listed in its docstring), `grpc_api` (proto <-> domain only), `adapters` (outbound NATS:
the ports' implementations; `wallet` the scoring ones over gRPC), `entrypoints` (inbound
NATS: the partitions this replica matches, with `leases`), `bootstrap` (the one wiring
function). Run it with `python -m trix.matchmaking`.
"""
