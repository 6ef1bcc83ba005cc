"""Configuration of the scoring service, read once from the environment.

Owns `ScoringConfig`: the shared runtime settings (TRIX_GRPC_PORT, TRIX_NATS_URL, ...,
see `trix.runtime.config.RuntimeConfig`) plus the scoring's own. A bad value raises
`ConfigError` naming the variable; the process then exits with code 2.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field

from trix.runtime.config import ConfigError, RuntimeConfig, env_str

SERVICE = "scoring"


@dataclass(frozen=True)
class ScoringConfig:
    """Everything the scoring service reads from the environment."""

    runtime: RuntimeConfig
    """Settings shared by every service."""
    admin_token: str
    """TRIX_SCORING_ADMIN_TOKEN: credential required to grant coins; empty = grants refused."""
    consumer: str = "scoring"
    """TRIX_SCORING_CONSUMER: durable name of the table-events consumer."""
    crash_at: str = ""
    """TRIX_SCORING_CRASH_AT: test builds only, `point:kind:n` (see `service.CrashPlan`); empty = never."""
    internal_token_key: str = field(default="", repr=False)
    """TRIX_INTERNAL_TOKEN_KEY: key of the internal identity tokens (`trix.runtime.identity`)
    a stake call must carry for its player; empty = every HoldStake / ReleaseStake refused."""

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> ScoringConfig:
        e = os.environ if env is None else env
        return cls(
            runtime=RuntimeConfig.from_env(SERVICE, e),
            admin_token=env_str(e, "TRIX_SCORING_ADMIN_TOKEN", ""),
            consumer=env_str(e, "TRIX_SCORING_CONSUMER", "scoring"),
            crash_at=_crash_at(env_str(e, "TRIX_SCORING_CRASH_AT", "")),
            internal_token_key=env_str(e, "TRIX_INTERNAL_TOKEN_KEY", ""),
        )


def _crash_at(value: str) -> str:
    """`point:kind:n` with point before_append/after_append/after_apply, kind settle/wallet/any."""
    if not value:
        return ""
    parts = value.split(":")
    if (
        len(parts) != 3
        or parts[0] not in ("before_append", "after_append", "after_apply")
        or parts[1] not in ("settle", "wallet", "any")
        or not parts[2].isdigit()
        or int(parts[2]) < 1
    ):
        raise ConfigError(f"TRIX_SCORING_CRASH_AT: not point:kind:n: {value!r}")
    return value
