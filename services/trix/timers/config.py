"""Configuration of the timers service, read once from the environment.

Owns `TimersConfig`: the shared runtime settings (TRIX_GRPC_PORT, TRIX_NATS_URL, ...,
see `trix.runtime.config.RuntimeConfig`) plus the timers's own. A bad value raises
`ConfigError` naming the variable; the process then exits with code 2.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass

from trix.runtime.config import RuntimeConfig, env_float

SERVICE = "timers"


@dataclass(frozen=True)
class TimersConfig:
    """Everything the timers service reads from the environment."""

    runtime: RuntimeConfig
    """Settings shared by every service."""
    tick_s: float
    """TRIX_TIMERS_TICK_S: how often due deadlines are checked."""

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> TimersConfig:
        e = os.environ if env is None else env
        return cls(
            runtime=RuntimeConfig.from_env(SERVICE, e),
            tick_s=env_float(e, "TRIX_TIMERS_TICK_S", 0.1),
        )
