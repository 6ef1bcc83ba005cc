"""Configuration of the gateway service, read once from the environment.

Owns `GatewayConfig`: the shared runtime settings (TRIX_GRPC_PORT, TRIX_NATS_URL, ...,
see `trix.runtime.config.RuntimeConfig`) plus the gateway's own. A bad value raises
`ConfigError` naming the variable; the process then exits with code 2. Secrets are
never part of `repr`.
"""

from __future__ import annotations

import os
import secrets
from collections.abc import Mapping
from dataclasses import dataclass, field

from trix.runtime.config import ConfigError, RuntimeConfig, env_float, env_int, env_str
from trix.runtime.identity import PLAYER_KEY_ENV, load_key

SERVICE = "gateway"
MIN_SECRET_BYTES = 16


def _secret(e: Mapping[str, str], name: str) -> bytes:
    raw = env_str(e, name, "")
    if raw and len(raw.encode()) < MIN_SECRET_BYTES:
        raise ConfigError(f"{name}: at least {MIN_SECRET_BYTES} bytes")
    return raw.encode() if raw else b""


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
    token_key: bytes = field(default=b"", repr=False)
    """TRIX_GATEWAY_TOKEN_KEY: HMAC key of the public guest tokens (HS256). Unset: a random key
    per process, so tokens do not survive a restart (set it with several replicas)."""
    player_key: bytes = field(default=b"", repr=False)
    """TRIX_PLAYER_TOKEN_KEY: the player-role key of the internal tokens it signs for an
    authenticated player (the table, matchmaking and scoring verify them; trix.runtime.identity).
    Required. The gateway never holds the service-role key (issue 18)."""
    call_timeout_s: float = 5.0
    """TRIX_GATEWAY_CALL_TIMEOUT_S: deadline of every internal call (NATS request or gRPC)."""
    rate_per_s: float = 20.0
    """TRIX_GATEWAY_RATE_PER_S: messages a connection may send per second (token bucket)."""
    rate_burst: int = 40
    """TRIX_GATEWAY_RATE_BURST: bucket size of the rate limit."""
    max_message_bytes: int = 16384
    """TRIX_GATEWAY_MAX_MESSAGE_BYTES: largest message a client may send (RESOURCE_EXHAUSTED above)."""
    outbox_size: int = 2048
    """TRIX_GATEWAY_OUTBOX: messages queued for a slow client before its session is closed."""
    accept_wait_s: float = 0.5
    """TRIX_GATEWAY_ACCEPT_WAIT_MS (in ms): to a client that takes EventBatch messages, an
    action's acceptance and its events go out as one message (issue 16); this bounds how long
    one waits for the other (they arrive within a millisecond of each other; 0 = never waits)."""

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> GatewayConfig:
        e = os.environ if env is None else env
        token_key = _secret(e, "TRIX_GATEWAY_TOKEN_KEY") or secrets.token_bytes(32)
        return cls(
            runtime=RuntimeConfig.from_env(SERVICE, e),
            token_ttl_s=env_int(e, "TRIX_GATEWAY_TOKEN_TTL_S", 86400, minimum=1),
            matchmaking_target=env_str(e, "TRIX_MATCHMAKING_TARGET", ""),
            scoring_target=env_str(e, "TRIX_SCORING_TARGET", ""),
            token_key=token_key,
            player_key=load_key(e, PLAYER_KEY_ENV),
            call_timeout_s=env_float(e, "TRIX_GATEWAY_CALL_TIMEOUT_S", 5.0, minimum=0.05),
            rate_per_s=env_float(e, "TRIX_GATEWAY_RATE_PER_S", 20.0, minimum=0.1),
            rate_burst=env_int(e, "TRIX_GATEWAY_RATE_BURST", 40, minimum=1),
            max_message_bytes=env_int(e, "TRIX_GATEWAY_MAX_MESSAGE_BYTES", 16384, minimum=256),
            outbox_size=env_int(e, "TRIX_GATEWAY_OUTBOX", 2048, minimum=16),
            accept_wait_s=min(env_float(e, "TRIX_GATEWAY_ACCEPT_WAIT_MS", 500.0), 5000.0) / 1000,
        )
