"""Configuration of the matchmaking service, read once from the environment.

Owns `MatchmakingConfig`: the shared runtime settings (TRIX_GRPC_PORT, TRIX_NATS_URL, ...,
see `trix.runtime.config.RuntimeConfig`) plus the matchmaking's own. A bad value raises
`ConfigError` naming the variable; the process then exits with code 2.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass

from trix.runtime.config import RuntimeConfig, env_float, env_str

SERVICE = "matchmaking"


@dataclass(frozen=True)
class MatchmakingConfig:
    """Everything the matchmaking service reads from the environment."""

    runtime: RuntimeConfig
    """Settings shared by every service."""
    bot_fill_after_s: float
    """TRIX_MATCHMAKING_BOT_FILL_S: wait before bots fill a free table's empty seats."""
    scoring_target: str
    """TRIX_SCORING_TARGET: gRPC target of scoring for stakes (host:port), empty = not wired yet."""

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> MatchmakingConfig:
        e = os.environ if env is None else env
        return cls(
            runtime=RuntimeConfig.from_env(SERVICE, e),
            bot_fill_after_s=env_float(e, "TRIX_MATCHMAKING_BOT_FILL_S", 20.0),
            scoring_target=env_str(e, "TRIX_SCORING_TARGET", ""),
        )
