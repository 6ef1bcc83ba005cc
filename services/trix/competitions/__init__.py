"""Competitions (issue 43): knockout and points tournaments with entry fees, prizes, a live
bracket and a result every entrant can check (docs/adr/0026).

This package is the competitions service's pure core, the skeleton of docs/architecture.md's
"one package per service": its domain modules import neither grpc nor nats nor the engine,
take time and randomness from their callers and are deterministic, so the same code runs the
competition live and re-runs it from its published file to check it:

- `options`: what an organiser may set, each option validated with a message a client can show;
- `registration`: who is in before the start (approval, leaving with half the fee back);
- `model`: entrants, units (a player, or a team of two in partnership), a table's seating and
  its outcome, the order of a finished table;
- `seating`: the seating seed's commitment, the roster at the start (the 75 % rule, bot fill),
  the draw and the first round;
- `knockout` and `points`: the two formats, round by round, and their final ranking;
- `run`: one competition's rounds (no round started twice, no one seated twice in a round);
- `money`: holds, refunds, prizes and the house fee as a ledger-entry plan with idempotency
  keys, coins conserved;
- `digest`: the competition file and its one digest; `verify`: its checks, run by
  `trix verify-competition` (`verify_cli`).

The service is built on this core: `ports`, `adapters`, `entrypoints` (the ticker), `state`
(the fold of a competition's events), `service`, `grpc_api` (proto/trix/v1/competitions.proto),
`ownership` (one owner per competition: the shard leases of `trix.natsio.leases`) and
`bootstrap`.
"""
