"""The table service: the live tables this replica owns: validates and applies actions
through the engine, appends them to each table's JetStream log, publishes events.

Layout (as in every service): `__main__` (start, signals), `config` (frozen dataclass from
the environment), `ports` (the `Protocol`s the logic reaches through), `service` (logic;
imports neither grpc nor nats) with `table` (one live table), `validation`, `views` and
`conversions`, `leases` (shard leases) with `balancing` (their pure decision), `codec`
(TableCommand <-> service), `adapters` (outbound: NATS storage, events, leases),
`entrypoints` (inbound: the shard router, lease watchers, consumers), `grpc_api` (inbound:
proto <-> commands), `bootstrap` (the wiring). Run it with `python -m trix.table`.
"""
