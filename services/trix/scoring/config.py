"""Configuration of the scoring service, read once from the environment.

Owns `ScoringConfig`: the shared runtime settings (TRIX_GRPC_PORT, TRIX_NATS_URL, ...,
see `trix.runtime.config.RuntimeConfig`) plus the scoring's own. A bad value raises
`ConfigError` naming the variable; the process then exits with code 2.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field

from trix.declarations import load_keys
from trix.natsio.names import SCORING_CONSUMER
from trix.runtime.config import ConfigError, RuntimeConfig, env_bool, env_str
from trix.runtime.identity import Keys

SERVICE = "scoring"


MIN_ADMIN_TOKEN_BYTES = 16
SCORING_ADMIN_ENV = "TRIX_SCORING_ADMIN_TOKEN"
"""The operators' credential of scoring (grants, audits): scoring's only (`trix up`, deploy/k8s)."""


def _admin_token(raw: str) -> str:
    if raw and len(raw.encode()) < MIN_ADMIN_TOKEN_BYTES:
        raise ConfigError(f"TRIX_SCORING_ADMIN_TOKEN: at least {MIN_ADMIN_TOKEN_BYTES} bytes (it grants coins)")
    return raw


def _consumer(raw: str) -> str:
    """The durable's name: only the declared one, the only one the scoring NATS user is granted."""
    if raw != SCORING_CONSUMER:
        raise ConfigError(
            f"TRIX_SCORING_CONSUMER: must be {SCORING_CONSUMER!r}, the durable the scoring NATS user is granted "
            "(trix.declarations)"
        )
    return raw


@dataclass(frozen=True)
class ScoringConfig:
    """Everything the scoring service reads from the environment."""

    runtime: RuntimeConfig
    """Settings shared by every service."""
    admin_token: str
    """TRIX_SCORING_ADMIN_TOKEN: credential required to grant coins, at least
    MIN_ADMIN_TOKEN_BYTES (a shorter one stops the service: exit 2); empty = grants refused."""
    consumer: str = SCORING_CONSUMER
    """TRIX_SCORING_CONSUMER: durable name of the table-events consumer; only the declared one
    (`trix.natsio.names.SCORING_CONSUMER`, granted to the scoring user) is accepted."""
    replay_records: bool = True
    """TRIX_SCORING_REPLAY_RECORDS: replay a started game's record and compare it with its
    GameEnded before paying or rating (`trix.scoring.audit`). Only the wallet and
    rating tests, which publish hand-made records, turn it off."""
    keys: Keys = field(default_factory=Keys, repr=False)
    """TRIX_PLAYER_TOKEN_KEY and TRIX_MATCHMAKING_PUBLIC_KEY: a stake call carries a player's
    token (the gateway's) for that player or matchmaking's service token, signed with
    matchmaking's own key (`trix.declarations.load_keys`); both required. Scoring signs nothing."""

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> ScoringConfig:
        e = os.environ if env is None else env
        return cls(
            runtime=RuntimeConfig.from_env(SERVICE, e),
            admin_token=_admin_token(env_str(e, SCORING_ADMIN_ENV, "")),
            consumer=_consumer(env_str(e, "TRIX_SCORING_CONSUMER", SCORING_CONSUMER)),
            replay_records=env_bool(e, "TRIX_SCORING_REPLAY_RECORDS", True),
            keys=load_keys(e, SERVICE),
        )
