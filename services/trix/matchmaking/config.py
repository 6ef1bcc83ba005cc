"""Configuration of the matchmaking service, read once from the environment.

Owns `MatchmakingConfig`: the shared runtime settings (TRIX_GRPC_PORT, TRIX_NATS_URL, ...,
see `trix.runtime.config.RuntimeConfig`) plus the matchmaking's own. A bad value raises
`ConfigError` naming the variable; the process then exits with code 2.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field

from trix.declarations import load_keys
from trix.runtime.config import RuntimeConfig, env_float, env_int, env_str
from trix.runtime.identity import Keys

SERVICE = "matchmaking"


@dataclass(frozen=True)
class MatchmakingConfig:
    """Everything the matchmaking service reads from the environment."""

    runtime: RuntimeConfig
    """Settings shared by every service."""
    bot_fill_after_s: float = 20.0
    """TRIX_MATCHMAKING_BOT_FILL_S: wait before bots fill a free table's empty seats."""
    scoring_target: str = ""
    """TRIX_SCORING_TARGET: gRPC target of scoring for stakes (host:port), empty = paid tickets refused."""
    ticket_ttl_s: float = 300.0
    """TRIX_MATCHMAKING_TICKET_TTL_S: a queued ticket expires after this long without a match."""
    lobby_ttl_s: float = 1800.0
    """TRIX_MATCHMAKING_LOBBY_TTL_S: a private table or rematch that never starts expires after this."""
    rating_window_base: float = 100.0
    """TRIX_MATCHMAKING_RATING_WINDOW: rating distance accepted at once."""
    rating_window_growth_per_s: float = 10.0
    """TRIX_MATCHMAKING_RATING_GROWTH: how much the window widens per second of waiting."""
    rating_window_max: float = 3000.0
    """TRIX_MATCHMAKING_RATING_MAX: the widest window."""
    default_rating: float = 1500.0
    """TRIX_MATCHMAKING_DEFAULT_RATING: rating of a player the rating source does not know."""
    rating_scale: float = 20.0
    """TRIX_MATCHMAKING_RATING_SCALE: matchmaking points per point of scoring's rating (mu - 3 sigma,
    ADR 0004): a player's rating here is default + scale * scoring's."""
    partitions: int = 16
    """TRIX_MATCHMAKING_PARTITIONS: queue partitions replicas lease (all replicas must agree)."""
    tick_s: float = 0.05
    """TRIX_MATCHMAKING_TICK_S: how often an owned partition is matched."""
    claim_timeout_s: float = 3.0
    """TRIX_MATCHMAKING_CLAIM_TIMEOUT_S: a claim older than this is recovered by the partition owner."""
    seat_grace_s: float = 60.0
    """TRIX_MATCHMAKING_SEAT_GRACE_S: a matched player counts as seated this long even before the
    table service indexes the table, unless its index says that game is over already."""
    retention_s: float = 600.0
    """TRIX_MATCHMAKING_RETENTION_S: a cancelled or expired ticket (and the player's lock naming it)
    is purged this long after it finished; a retried enqueue with the same request id within it
    gets the same ticket back."""
    matched_retention_s: float = 7200.0
    """TRIX_MATCHMAKING_MATCHED_RETENTION_S: a matched ticket, its match record and a formed or closed
    lobby are purged this long after they finished (a rematch needs the match record: a game and
    the rematch must fit in it; keep it above TRIX_MATCHMAKING_SEAT_GRACE_S)."""
    rating_timeout_s: float = 0.3
    """TRIX_MATCHMAKING_RATING_TIMEOUT_S: how long an enqueue waits for scoring's rating before it
    uses the default (matching never waits on scoring)."""
    keys: Keys = field(default_factory=Keys, repr=False)
    """TRIX_PLAYER_TOKEN_KEY (verifies the gateway's player tokens) and TRIX_SERVICE_SIGNING_KEY
    (its own: signs its stake calls to scoring), both required (trix.declarations.load_keys)."""

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> MatchmakingConfig:
        e = os.environ if env is None else env
        return cls(
            runtime=RuntimeConfig.from_env(SERVICE, e),
            bot_fill_after_s=env_float(e, "TRIX_MATCHMAKING_BOT_FILL_S", 20.0),
            scoring_target=env_str(e, "TRIX_SCORING_TARGET", ""),
            ticket_ttl_s=env_float(e, "TRIX_MATCHMAKING_TICKET_TTL_S", 300.0, minimum=1.0),
            lobby_ttl_s=env_float(e, "TRIX_MATCHMAKING_LOBBY_TTL_S", 1800.0, minimum=1.0),
            rating_window_base=env_float(e, "TRIX_MATCHMAKING_RATING_WINDOW", 100.0),
            rating_window_growth_per_s=env_float(e, "TRIX_MATCHMAKING_RATING_GROWTH", 10.0),
            rating_window_max=env_float(e, "TRIX_MATCHMAKING_RATING_MAX", 3000.0),
            default_rating=env_float(e, "TRIX_MATCHMAKING_DEFAULT_RATING", 1500.0),
            rating_scale=env_float(e, "TRIX_MATCHMAKING_RATING_SCALE", 20.0),
            partitions=env_int(e, "TRIX_MATCHMAKING_PARTITIONS", 16, minimum=1, maximum=99),
            tick_s=env_float(e, "TRIX_MATCHMAKING_TICK_S", 0.05, minimum=0.005),
            claim_timeout_s=env_float(e, "TRIX_MATCHMAKING_CLAIM_TIMEOUT_S", 3.0, minimum=0.1),
            seat_grace_s=env_float(e, "TRIX_MATCHMAKING_SEAT_GRACE_S", 60.0),
            retention_s=env_float(e, "TRIX_MATCHMAKING_RETENTION_S", 600.0, minimum=0.1),
            matched_retention_s=env_float(e, "TRIX_MATCHMAKING_MATCHED_RETENTION_S", 7200.0, minimum=0.1),
            rating_timeout_s=env_float(e, "TRIX_MATCHMAKING_RATING_TIMEOUT_S", 0.3, minimum=0.01),
            keys=load_keys(e, SERVICE),
        )
