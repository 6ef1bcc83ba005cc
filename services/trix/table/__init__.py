"""The table service (issue 4): the live tables this replica owns: validates and applies
actions through the engine, appends them to each table's JetStream log, publishes
events.

Skeleton shared by every service: `__main__` (start, signals), `config` (frozen
dataclass from the environment), `service` (logic; imports neither grpc nor nats),
`grpc_api` (proto <-> domain only), `subscribers` (NATS handlers). Run it with
`python -m trix.table`.
"""
