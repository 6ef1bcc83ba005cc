"""The scoring service (issue 8): standings, history and records, ratings and
leaderboards, wallets and paid-table settlement (docs/rules.md §13).

Skeleton shared by every service: `__main__` (start, signals), `config` (frozen
dataclass from the environment), `service` (logic; imports neither grpc nor nats),
`grpc_api` (proto <-> domain only), `subscribers` (NATS handlers). Run it with
`python -m trix.scoring`.
"""
