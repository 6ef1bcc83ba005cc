"""`trix loadtest`: a bot swarm that plays real games through the public gateway (ADR 0010).

Owns the load test: `scenarios`, `bots` (asyncio mobile-like clients in worker processes),
`echo` and `floor` (baselines), `report`, `arguments`, `sampling` (CPU, memory, pauses),
`verification` (replay, verify, standings) and `runner` (the command).
"""
