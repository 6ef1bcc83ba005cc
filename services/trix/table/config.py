"""Configuration of the table service, read once from the environment.

Owns `TableConfig`: the shared runtime settings (TRIX_GRPC_PORT, TRIX_NATS_URL, ...,
see `trix.runtime.config.RuntimeConfig`) plus the table's own. A bad value raises
`ConfigError` naming the variable; the process then exits with code 2.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass

from trix.runtime.config import RuntimeConfig, env_int

SERVICE = "table"


@dataclass(frozen=True)
class TableConfig:
    """Everything the table service reads from the environment."""

    runtime: RuntimeConfig
    """Settings shared by every service."""
    snapshot_every: int
    """TRIX_TABLE_SNAPSHOT_EVERY: actions between two snapshots of a table."""

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> TableConfig:
        e = os.environ if env is None else env
        return cls(
            runtime=RuntimeConfig.from_env(SERVICE, e),
            snapshot_every=env_int(e, "TRIX_TABLE_SNAPSHOT_EVERY", 50, minimum=1),
        )
