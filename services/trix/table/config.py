"""Configuration of the table service, read once from the environment.

Owns `TableConfig`: the shared runtime settings (TRIX_GRPC_PORT, TRIX_NATS_URL, ...,
see `trix.runtime.config.RuntimeConfig`) plus the table's own. A bad value raises
`ConfigError` naming the variable; the process then exits with code 2.
"""

from __future__ import annotations

import os
import secrets
from collections.abc import Mapping
from dataclasses import dataclass, field

from trix.runtime.config import ConfigError, RuntimeConfig, env_float, env_int, env_str

SERVICE = "table"
MIN_SECRET_BYTES = 16


@dataclass(frozen=True)
class TableConfig:
    """Everything the table service reads from the environment."""

    runtime: RuntimeConfig
    """Settings shared by every service."""
    snapshot_every: int
    """TRIX_TABLE_SNAPSHOT_EVERY: log entries between two snapshots of a table."""
    internal_secret: bytes = field(repr=False)
    """TRIX_INTERNAL_TOKEN_SECRET: key of the HMAC-signed caller tokens (trix.table.identity).
    Unset: a random key, so no command is accepted (safe default)."""
    command_timeout_s: float = 10.0
    """TRIX_TABLE_COMMAND_TIMEOUT_S: how long the gRPC API waits for the owner's reply."""

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> TableConfig:
        e = os.environ if env is None else env
        raw = env_str(e, "TRIX_INTERNAL_TOKEN_SECRET", "")
        if raw and len(raw.encode()) < MIN_SECRET_BYTES:
            raise ConfigError(f"TRIX_INTERNAL_TOKEN_SECRET: at least {MIN_SECRET_BYTES} bytes")
        return cls(
            runtime=RuntimeConfig.from_env(SERVICE, e),
            snapshot_every=env_int(e, "TRIX_TABLE_SNAPSHOT_EVERY", 50, minimum=1),
            internal_secret=raw.encode() if raw else secrets.token_bytes(32),
            command_timeout_s=env_float(e, "TRIX_TABLE_COMMAND_TIMEOUT_S", 10.0, minimum=0.1),
        )
