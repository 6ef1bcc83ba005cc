"""Configuration of the social service, read once from the environment.

Owns `SocialConfig`: the shared runtime settings (`trix.runtime.config.RuntimeConfig`) plus
its own. A bad value raises `ConfigError` naming the variable; the process exits with 2.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field

from trix.declarations import load_keys
from trix.natsio.online import BEAT_ENV, BEAT_S
from trix.runtime.config import RuntimeConfig, env_float, env_str
from trix.runtime.identity import Keys

SERVICE = "social"
LINK_BASE_ENV = "TRIX_SOCIAL_LINK_BASE"


@dataclass(frozen=True)
class SocialConfig:
    """Everything the social service reads from the environment."""

    runtime: RuntimeConfig
    keys: Keys = field(repr=False, default_factory=lambda: Keys())
    """TRIX_PLAYER_TOKEN_KEY (players' tokens, passed on by the gateway) and
    TRIX_ADMIN_PUBLIC_KEY (the operators' tools: ListReports; ADR 0028). Both required."""
    link_base: str = ""
    """TRIX_SOCIAL_LINK_BASE: where an invitation's link points (the web client's origin,
    e.g. `https://trix.example`); empty: a link relative to the client's own origin."""
    presence_beat_s: float = BEAT_S
    """TRIX_PRESENCE_BEAT_S: the gateways' beat period (`trix.natsio.online`): a player no
    gateway named for three periods is offline, his friends told within four."""

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> SocialConfig:
        e = os.environ if env is None else env
        return cls(
            runtime=RuntimeConfig.from_env(SERVICE, e),
            keys=load_keys(e, SERVICE),
            link_base=env_str(e, LINK_BASE_ENV, "").strip(),
            presence_beat_s=env_float(e, BEAT_ENV, BEAT_S, minimum=0.05),
        )
