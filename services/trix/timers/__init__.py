"""The timers service: a deadline for every pending decision (docs/rules.md §9),
disconnect grace and leaving (§10).

Skeleton shared by every service: `__main__` (start, signals), `config` (frozen
dataclass from the environment), `ports` (what the logic is given, as Protocols),
`service` (logic; imports neither grpc nor nats), `grpc_api` (proto <-> domain only),
`adapters` (outbound NATS: the ports' implementations), `entrypoints` (inbound NATS:
subscriptions and consumers), `bootstrap` (the one wiring function). The timers' pure
model: `document` (a table's document and its JSON), `folding` (events into it),
`schedule` (what is due, claimed, answered). Run it with `python -m trix.timers`.
"""
