"""Configuration of the timers service, read once from the environment.

Owns `TimersConfig`: the shared runtime settings (TRIX_GRPC_PORT, TRIX_NATS_URL, ...,
see `trix.runtime.config.RuntimeConfig`) plus the timers's own. A bad value raises
`ConfigError` naming the variable; the process then exits with code 2.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field

from trix.declarations import load_keys
from trix.runtime.config import ConfigError, RuntimeConfig, env_float
from trix.runtime.identity import Keys, ServiceSigner

SERVICE = "timers"
TOKEN_TTL_S = 300.0
"""Lifetime of the timers' service tokens."""
FINISHED_DOC_TTL_S = 24 * 3600.0


def _ttl(env: Mapping[str, str], name: str, default: float) -> float:
    """0 (none) or whole seconds from 1 (a message TTL is counted in whole seconds)."""
    value = env_float(env, name, default)
    if 0 < value < 1 or not value.is_integer():
        raise ConfigError(f"{name}: 0 or a whole number of seconds from 1: {value!r}")
    return value


@dataclass(frozen=True)
class TimersConfig:
    """Everything the timers service reads from the environment."""

    runtime: RuntimeConfig
    """Settings shared by every service."""
    tick_s: float
    """TRIX_TIMERS_TICK_S: longest sleep of the scheduler between two looks at the due deadlines
    (default 1). It sleeps until the earliest deadline still pending, woken earlier when a new
    due time comes before it; the bound only limits how late a deadline fires after the wall
    clock steps forward."""
    keys: Keys = field(repr=False, default_factory=Keys)
    """TRIX_SERVICE_SIGNING_KEY: its own key, its AutoAct and Leave tokens are signed with (the
    table verifies them with its public key), and TRIX_ADMIN_PUBLIC_KEY: the operators' tokens
    it answers GetPresence to (`trix.declarations.load_keys`). Required."""
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
    finished_doc_ttl_s: float = FINISHED_DOC_TTL_S
    """TRIX_TIMERS_FINISHED_DOC_TTL_S: how long a finished table's document stays in the
    `timer_deadlines` bucket after the write that finished it (default a day; 0 = for ever).
    Events that come late for the table read that it is finished; none comes a day late."""
    fetch_linger_s: float = 0.02
    """TRIX_TIMERS_FETCH_LINGER_S: after a fetch that did not fill its batch, wait this long before
    the next one, so events arriving meanwhile come in one fetch (each fetch is a pull request,
    a "no messages" answer and a lingering request: 2-3 NATS messages per event at low load).
    Far below any deadline; 0 = fetch again at once."""

    @property
    def signer(self) -> ServiceSigner:
        """Its own service tokens, in its name, which the table checks on AutoAct, Leave and
        reclaims; one signature per half lifetime (TOKEN_TTL_S)."""
        return self.keys.signer(SERVICE, TOKEN_TTL_S)

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> TimersConfig:
        e = os.environ if env is None else env
        return cls(
            runtime=RuntimeConfig.from_env(SERVICE, e),
            tick_s=env_float(e, "TRIX_TIMERS_TICK_S", 1.0, minimum=0.001),
            keys=load_keys(e, SERVICE),
            claim_timeout_s=env_float(e, "TRIX_TIMERS_CLAIM_TIMEOUT_S", 5.0, minimum=0.1),
            takeover_s=env_float(e, "TRIX_TIMERS_TAKEOVER_S", 1.0),
            command_timeout_s=env_float(e, "TRIX_TIMERS_COMMAND_TIMEOUT_S", 3.0, minimum=0.1),
            heartbeat_s=env_float(e, "TRIX_TIMERS_HEARTBEAT_S", 1.0, minimum=0.05),
            fetch_linger_s=env_float(e, "TRIX_TIMERS_FETCH_LINGER_S", 0.02, minimum=0.0),
            finished_doc_ttl_s=_ttl(e, "TRIX_TIMERS_FINISHED_DOC_TTL_S", FINISHED_DOC_TTL_S),
        )
