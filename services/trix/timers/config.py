"""Configuration of the timers service, read once from the environment.

Owns `TimersConfig`: the shared runtime settings (TRIX_GRPC_PORT, TRIX_NATS_URL, ...,
see `trix.runtime.config.RuntimeConfig`) plus the timers's own. A bad value raises
`ConfigError` naming the variable; the process then exits with code 2.
"""

from __future__ import annotations

import os
import secrets
from collections.abc import Mapping
from dataclasses import dataclass, field

from trix.runtime.config import ConfigError, RuntimeConfig, env_float, env_str

SERVICE = "timers"
MIN_SECRET_BYTES = 16


@dataclass(frozen=True)
class TimersConfig:
    """Everything the timers service reads from the environment."""

    runtime: RuntimeConfig
    """Settings shared by every service."""
    tick_s: float
    """TRIX_TIMERS_TICK_S: longest sleep of the scheduler between two looks at the due deadlines
    (it also wakes on every change; default 1)."""
    internal_secret: bytes = field(repr=False, default=b"")
    """TRIX_INTERNAL_TOKEN_SECRET: key of the HMAC caller token the table checks on AutoAct and
    Leave (the same key as the table's). Unset: a random key, so the table refuses every command."""
    claim_timeout_s: float = 5.0
    """TRIX_TIMERS_CLAIM_TIMEOUT_S: a claimed deadline whose outcome is not recorded within this
    time (the claiming replica died) is claimed again and re-sent; the table applies it once."""
    takeover_s: float = 1.0
    """TRIX_TIMERS_TAKEOVER_S: a replica fires a table it is not the preferred replica of only this
    long after the deadline (the preferred one is dead or slow)."""
    command_timeout_s: float = 3.0
    """TRIX_TIMERS_COMMAND_TIMEOUT_S: how long to wait for the table's answer to AutoAct or Leave."""
    heartbeat_s: float = 1.0
    """TRIX_TIMERS_HEARTBEAT_S: how often a replica renews its heartbeat (the bucket TTL is 5 s)."""
    fetch_linger_s: float = 0.02
    """TRIX_TIMERS_FETCH_LINGER_S: after a fetch that did not fill its batch, wait this long before
    the next one, so events arriving meanwhile come in one fetch (each fetch is a pull request,
    a "no messages" answer and a lingering request: 2-3 NATS messages per event at low load,
    issue 10). Far below any deadline; 0 = fetch again at once."""

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> TimersConfig:
        e = os.environ if env is None else env
        raw = env_str(e, "TRIX_INTERNAL_TOKEN_SECRET", "")
        if raw and len(raw.encode()) < MIN_SECRET_BYTES:
            raise ConfigError(f"TRIX_INTERNAL_TOKEN_SECRET: at least {MIN_SECRET_BYTES} bytes")
        return cls(
            runtime=RuntimeConfig.from_env(SERVICE, e),
            tick_s=env_float(e, "TRIX_TIMERS_TICK_S", 1.0, minimum=0.001),
            internal_secret=raw.encode() if raw else secrets.token_bytes(32),
            claim_timeout_s=env_float(e, "TRIX_TIMERS_CLAIM_TIMEOUT_S", 5.0, minimum=0.1),
            takeover_s=env_float(e, "TRIX_TIMERS_TAKEOVER_S", 1.0),
            command_timeout_s=env_float(e, "TRIX_TIMERS_COMMAND_TIMEOUT_S", 3.0, minimum=0.1),
            heartbeat_s=env_float(e, "TRIX_TIMERS_HEARTBEAT_S", 1.0, minimum=0.05),
            fetch_linger_s=env_float(e, "TRIX_TIMERS_FETCH_LINGER_S", 0.02, minimum=0.0),
        )
