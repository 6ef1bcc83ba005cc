"""`trix loadtest`: a bot swarm that plays real games through the public gateway (issue 10).

Owns the load test: `scenarios` (steady, peak, churn, failover, smoke settings), `bots`
(one worker process running many asyncio mobile-like clients: sign in, quick match,
play with a think time, resume on disconnect), `echo` (the bare gRPC round-trip
baseline), `floor` (the cheapest chain that does an action's work), `report` (percentiles, timeline, JSON and
PNG chart), `arguments` (the command's arguments), `sampling` (CPU and memory of every
process, the box's pauses), `verification` (replay/verify/standings checks) and `runner`
(the command: platform, workers, finish phase, budgets). Decisions: docs/adr/0010-loadtest.md.
"""
