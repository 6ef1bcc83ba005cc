"""The gateway service: players' sessions: authentication, one stream per connected
player, resume, per-seat filtering, rate limits, presence.

Layout (as in every service): `__main__` (start, signals), `config` (frozen dataclass from
the environment), `ports` (the `Protocol`s the logic reaches through), `service` (logic;
imports neither grpc nor nats) with `session` (one player's stream), `outbox`, `limits`
and `validation`, `tokens` (public tokens), `adapters` (outbound: NATS) and `upstream`
(outbound: gRPC to matchmaking and scoring), `grpc_api` (inbound: proto <-> domain only),
`bootstrap` (the wiring). No inbound NATS: the gateway only asks. Run it with
`python -m trix.gateway`.
"""
