"""The load-test scenarios: pace, churn and failover settings per name.

Owns `Scenario` and `SCENARIOS`. A scenario only says how the bots behave; the size
(tables, duration) comes from the command line.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Scenario:
    name: str
    think_min_s: float
    """Think time before each action, uniform in [min, max] (per seat; one seat acts at a time)."""
    think_max_s: float
    disconnect_per_min: float = 0.0
    """Per player: expected network cuts per minute (then resume on a new Session)."""
    queue_churn: float = 0.0
    """Extra guests per table who join the queue and leave it (cancel) during the window."""
    table_replicas: int = 1
    kill_table_replica_at: float = -1.0
    """Fraction of the measured window after which the busiest table replica is SIGKILLed (<0: never)."""
    turn_timeout_s: int = 0
    """The tables' contract, doubling and card timers (docs/rules.md §9), asked in the bots' wishes
    (0: the defaults)."""


SCENARIOS: dict[str, Scenario] = {
    # human pace: one action per table every 2-3 s
    "steady": Scenario("steady", 2.0, 3.0),
    # as fast as the bots can play
    "peak": Scenario("peak", 0.0, 0.0),
    # human-ish pace, players cut and resume, guests join and leave the queue
    "churn": Scenario("churn", 0.5, 1.5, disconnect_per_min=2.0, queue_churn=0.25),
    # a table replica killed half way through the window
    "failover": Scenario("failover", 0.5, 1.5, table_replicas=3, kill_table_replica_at=0.5),
    # players seated, nobody acts within the window, timers too long to fire: what
    # a quiet seated table costs the platform
    "idle": Scenario("idle", 3600.0, 3600.0, turn_timeout_s=600),
}

SMOKE_ARGV = ["steady", "--tables", "20", "--duration", "30", "--max-errors", "0"]
"""`make loadtest-smoke` and the CI test in tests/loadtest: 20 tables, 30 s, zero errors."""

CI_SMOKE = {"--tables": "2", "--duration": "10"}
"""The size the CI test runs by default: a full game takes ~1,000 actions and the platform
finishes ~20-40 actions/s on the shared 2-core runner, so 20 tables cannot finish in the
~2 minutes CI allows; TRIX_LOADTEST_SMOKE_TABLES=20 runs the full smoke (ADR 0010)."""
