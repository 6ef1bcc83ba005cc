"""Fixtures of the NATS cluster tests (issue 19): none of their own; each test starts and
stops its own `NatsCluster` (cluster_support.py)."""
