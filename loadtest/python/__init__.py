"""`trix loadtest`: a bot swarm that plays real games through the public gateway (issue 10).

Owns the load test: `scenarios` (steady, peak, churn, failover, smoke settings), `bots`
(one worker process running many asyncio mobile-like clients: sign in, quick match,
play with a think time, resume on disconnect), `echo` (the bare gRPC round-trip
baseline), `report` (percentiles, timeline, JSON and PNG chart) and `runner` (the
command: platform, workers, process sampling, finish phase, replay/verify/standings
checks, budgets). Decisions: docs/adr/0010-loadtest.md.
"""
