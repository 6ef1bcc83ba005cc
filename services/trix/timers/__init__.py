"""The timers service (issue 7): a deadline for every pending decision (docs/rules.md §9),
disconnect grace and leaving (§10).

Skeleton shared by every service: `__main__` (start, signals), `config` (frozen
dataclass from the environment), `service` (logic; imports neither grpc nor nats),
`grpc_api` (proto <-> domain only), `subscribers` (NATS handlers). Run it with
`python -m trix.timers`.
"""
