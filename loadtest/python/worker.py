"""What one bot-swarm worker is told and what it reports: `WorkerConfig` (the parent's
orders to a worker process of `trix.loadtest.bots`) and `Stats` (what its bots accumulated
since the last tick, sent to the parent once a second)."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from trix.v1 import common_pb2

ERROR_SAMPLES = 10
"""Errors kept with their message in the summary (`error_samples`)."""


@dataclass(frozen=True)
class WorkerConfig:
    worker: int
    target: str
    run_id: str
    players: int
    """Table-seeking bots in this worker."""
    guests: int
    """Churn guests: join the queue, leave it (and play if matched first)."""
    think_min_s: float
    think_max_s: float
    disconnect_per_min: float
    ramp_s: float
    """Sign-ins are spread over this many seconds."""
    stop_at: float
    """Wall-clock time after which every bot stops."""
    max_actions: int
    """Actions per bot at most."""
    variant: int = common_pb2.VARIANT_TRIX
    separate_connections: bool = True
    seed: int = 1
    ramp_concurrency: int = 0
    """Players of this worker between sign-in and their first ticket at once (0: no limit):
    the ramp goes as fast as matchmaking answers instead of bursting past its deadlines."""
    turn_timeout_s: int = 0
    """docs/rules.md §9 timers asked for in the wish (0: the table defaults)."""
    ca_file: str = ""
    """TLS to the gateway verified against this CA (`--tls`, `--ca`); empty: plain text."""
    keep_accepted: bool = False
    """Report every accepted action's (table id, action id) (`--keep-accepted`: a fault run
    checks each is in its table's log)."""
    chat_every_s: float = 0.0
    """`--chat-every`: each table's seat-0 bot sends a chat line this often (0: no chat;
    `trix.loadtest.chat`)..."""
    chatting: Any = None
    """...once this multiprocessing Event is set (the measured window starts; None: at once)."""


@dataclass
class Stats:
    """Accumulated since the last tick."""

    actions: int = 0
    latencies_ms: list[float] = field(default_factory=list)
    view_ms: list[float] = field(default_factory=list)
    errors: Counter[str] = field(default_factory=Counter)
    retried: Counter[str] = field(default_factory=Counter)
    reconnects: int = 0
    new_tables: list[str] = field(default_factory=list)
    games: list[dict[str, Any]] = field(default_factory=list)
    lag_ms: list[float] = field(default_factory=list)
    """Event-loop lag samples (ms late of each LAG_PROBE_S sleep)."""
    error_samples: list[str] = field(default_factory=list)
    """The first few errors' code and client message (what went wrong, not only how often)."""
    accepted: list[tuple[str, str]] = field(default_factory=list)
    """(table id, action id) of each accepted action, with `WorkerConfig.keep_accepted` only."""
    chat_sent: int = 0
    """Chat lines the social service accepted and delivered (`trix.loadtest.chat`)."""
    chat_delivered: int = 0
    """Chat lines the bots received."""
    chat_refused: Counter[str] = field(default_factory=Counter)
    """Chat lines refused (by code) or not delivered."""

    def take(self) -> dict[str, Any]:
        out = {
            "actions": self.actions,
            "latencies_ms": self.latencies_ms,
            "view_ms": self.view_ms,
            "errors": dict(self.errors),
            "retried": dict(self.retried),
            "reconnects": self.reconnects,
            "new_tables": self.new_tables,
            "games": self.games,
            "lag_ms": self.lag_ms,
            "error_samples": self.error_samples,
            "accepted": self.accepted,
            "chat": {"sent": self.chat_sent, "delivered": self.chat_delivered, "refused": dict(self.chat_refused)},
        }
        self.chat_sent, self.chat_delivered, self.chat_refused = 0, 0, Counter()
        self.actions, self.latencies_ms, self.view_ms, self.lag_ms, self.error_samples = 0, [], [], [], []
        self.accepted = []
        self.errors, self.retried, self.reconnects, self.new_tables, self.games = Counter(), Counter(), 0, [], []
        return out
