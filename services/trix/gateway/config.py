"""Configuration of the gateway service, read once from the environment.

Owns `GatewayConfig`: the shared runtime settings (TRIX_GRPC_PORT, TRIX_NATS_URL, ...,
see `trix.runtime.config.RuntimeConfig`) plus the gateway's own. A bad value raises
`ConfigError` naming the variable; the process then exits with code 2.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass

from trix.runtime.config import RuntimeConfig, env_int, env_str

SERVICE = "gateway"


@dataclass(frozen=True)
class GatewayConfig:
    """Everything the gateway service reads from the environment."""

    runtime: RuntimeConfig
    """Settings shared by every service."""
    token_ttl_s: int
    """TRIX_GATEWAY_TOKEN_TTL_S: lifetime of a guest token in seconds."""
    matchmaking_target: str
    """TRIX_MATCHMAKING_TARGET: gRPC target of matchmaking (host:port), empty = not wired yet."""
    scoring_target: str
    """TRIX_SCORING_TARGET: gRPC target of scoring (host:port), empty = not wired yet."""

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> GatewayConfig:
        e = os.environ if env is None else env
        return cls(
            runtime=RuntimeConfig.from_env(SERVICE, e),
            token_ttl_s=env_int(e, "TRIX_GATEWAY_TOKEN_TTL_S", 86400, minimum=1),
            matchmaking_target=env_str(e, "TRIX_MATCHMAKING_TARGET", ""),
            scoring_target=env_str(e, "TRIX_SCORING_TARGET", ""),
        )
