"""The secrets `trix up` gives each service process, and only those (ADR 0014, ADR 0028):
no child inherits one from the environment (`INHERITED_NOT`); each gets the token keys its
declaration names, its own signing key and its accepted signers' public keys, the edge's
secret if the edge calls it, and scoring alone the operators' admin token (as in deploy/k8s)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from trix.declarations import EDGE, ServiceDeclaration, signing_env
from trix.gateway.config import EDGE_SECRET_ENV
from trix.runtime.identity import GATEWAY_KEY_ENV, GATEWAY_PREVIOUS_KEY_ENV, PLAYER_KEY_ENV, SERVICE_KEY_ENV
from trix.scoring.config import SCORING_ADMIN_ENV

INHERITED_NOT = (
    "TRIX_NATS_URL",
    PLAYER_KEY_ENV,
    SERVICE_KEY_ENV,
    GATEWAY_KEY_ENV,
    GATEWAY_PREVIOUS_KEY_ENV,
    EDGE_SECRET_ENV,
    SCORING_ADMIN_ENV,
)
"""Variables of `trix up`'s own environment no child inherits: each is given as it needs."""


def secrets_of(
    declared: ServiceDeclaration,
    *,
    keys: Mapping[str, str],
    signing_keys: Mapping[str, str],
    declarations: Sequence[ServiceDeclaration],
    edge_secret: str,
    environ: Mapping[str, str],
) -> dict[str, str]:
    """The secret variables of one process of service `declared`: `keys` are the shared token
    keys by variable (the player-role key, the gateways' public-token key), `signing_keys` the
    signers' private keys by signer, `environ` the operator's (the admin token, a previous
    gateway key kept for rotation)."""
    env = {var: keys[var] for var in declared.keys if var != SERVICE_KEY_ENV}
    env.update(signing_env(declared.name, signing_keys, declarations))
    if declared.name == "scoring" and environ.get(SCORING_ADMIN_ENV):
        env[SCORING_ADMIN_ENV] = environ[SCORING_ADMIN_ENV]
    if EDGE in declared.callers:  # the edge's secret, for the service behind it
        env[EDGE_SECRET_ENV] = edge_secret
    if GATEWAY_KEY_ENV in declared.keys and environ.get(GATEWAY_PREVIOUS_KEY_ENV):
        env[GATEWAY_PREVIOUS_KEY_ENV] = environ[GATEWAY_PREVIOUS_KEY_ENV]
    return env
