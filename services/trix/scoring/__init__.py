"""The scoring service: standings, history and records, ratings and leaderboards,
wallets and paid-table settlement (docs/rules.md §13).

Skeleton shared by every service: `__main__` (start, signals), `config` (frozen
dataclass from the environment), `ports` (what the logic is given, as Protocols),
`service` (logic; imports neither grpc nor nats; with its pieces `state`, `audit`,
`ratings`), `grpc_api` (proto <-> domain only), `adapters` (outbound NATS: the ports'
implementations), `entrypoints` (inbound NATS: the consumer), `bootstrap` (the one
wiring function). Run it with `python -m trix.scoring`.
"""
