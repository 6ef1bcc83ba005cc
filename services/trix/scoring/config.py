"""Configuration of the scoring service, read once from the environment.

Owns `ScoringConfig`: the shared runtime settings (TRIX_GRPC_PORT, TRIX_NATS_URL, ...,
see `trix.runtime.config.RuntimeConfig`) plus the scoring's own. A bad value raises
`ConfigError` naming the variable; the process then exits with code 2.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass

from trix.runtime.config import RuntimeConfig, env_str

SERVICE = "scoring"


@dataclass(frozen=True)
class ScoringConfig:
    """Everything the scoring service reads from the environment."""

    runtime: RuntimeConfig
    """Settings shared by every service."""
    admin_token: str
    """TRIX_SCORING_ADMIN_TOKEN: credential required to grant coins; empty = grants refused."""

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> ScoringConfig:
        e = os.environ if env is None else env
        return cls(
            runtime=RuntimeConfig.from_env(SERVICE, e),
            admin_token=env_str(e, "TRIX_SCORING_ADMIN_TOKEN", ""),
        )
