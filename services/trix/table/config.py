"""Configuration of the table service, read once from the environment.

Owns `TableConfig`: the shared runtime settings (TRIX_GRPC_PORT, TRIX_NATS_URL, ...,
see `trix.runtime.config.RuntimeConfig`) plus the table's own. A bad value raises
`ConfigError` naming the variable; the process then exits with code 2.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field

from trix.declarations import load_keys
from trix.runtime.config import RuntimeConfig, env_bool, env_float, env_int
from trix.runtime.identity import Keys

SERVICE = "table"


@dataclass(frozen=True)
class TableConfig:
    """Everything the table service reads from the environment."""

    runtime: RuntimeConfig
    """Settings shared by every service."""
    snapshot_every: int
    """TRIX_TABLE_SNAPSHOT_EVERY: log entries between two snapshots of a table."""
    keys: Keys = field(repr=False)
    """TRIX_PLAYER_TOKEN_KEY (players' tokens, signed by the gateway), TRIX_SERVICE_SIGNING_KEY
    (its own: it signs its CreateTable on a MatchFormed) and the public keys of the services
    whose tokens it accepts (`trix.declarations.service_token_callers`), all required."""
    command_timeout_s: float = 10.0
    """TRIX_TABLE_COMMAND_TIMEOUT_S: how long the gRPC API waits for the owner's reply."""
    purge_finished: bool = True
    """TRIX_TABLE_PURGE_FINISHED: purge a finished table's log, snapshot and seed once scoring has
    archived its record (ADR 0003); false keeps them (audits: `make fault-nats` reads every log
    after its run while scoring runs throughout)."""

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> TableConfig:
        e = os.environ if env is None else env
        return cls(
            runtime=RuntimeConfig.from_env(SERVICE, e),
            snapshot_every=env_int(e, "TRIX_TABLE_SNAPSHOT_EVERY", 50, minimum=1),
            keys=load_keys(e, SERVICE),
            command_timeout_s=env_float(e, "TRIX_TABLE_COMMAND_TIMEOUT_S", 10.0, minimum=0.1),
            purge_finished=env_bool(e, "TRIX_TABLE_PURGE_FINISHED", True),
        )
