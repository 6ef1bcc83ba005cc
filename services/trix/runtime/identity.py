"""The player's identity on internal calls: a short HMAC token the gateway signs.

Owns `sign` / `verify` of the internal identity token and the metadata key it travels
under (`x-trix-identity`). The gateway authenticates the player, then signs
`v1.<player_id>.<expires_unix>` with the key shared by the services
(`TRIX_INTERNAL_TOKEN_KEY`); a service trusts a player id only from a token that
verifies, never from a request field (ARCHITECTURE.md, "Durability and ownership").
`Identity` is what a service's gRPC adapter asks for the caller's player (matchmaking's
player calls, scoring's stake calls). Pure hashlib/hmac: no I/O; `sign` and `verify` take
the clock.
"""

from __future__ import annotations

import hashlib
import hmac
import time
from typing import TYPE_CHECKING, Any

from trix.errors import PermissionDenied, Unauthenticated
from trix.rules import PLAYER_ID

if TYPE_CHECKING:
    import grpc

IDENTITY_METADATA = "x-trix-identity"
"""gRPC metadata key of the internal identity token."""

TOKEN_VERSION = "v1"
_PLAYER = PLAYER_ID  # trix.rules: 1-128 of A-Z a-z 0-9 _ -


def _mac(key: bytes, payload: str) -> str:
    return hmac.new(key, payload.encode(), hashlib.sha256).hexdigest()


def sign(key: bytes, player_id: str, expires_at: int) -> str:
    """The token asserting `player_id` until `expires_at` (unix seconds)."""
    if not _PLAYER.fullmatch(player_id):
        raise ValueError(f"player id must be 1-128 of A-Z a-z 0-9 _ -: {player_id!r}")
    payload = f"{TOKEN_VERSION}.{player_id}.{int(expires_at)}"
    return f"{payload}.{_mac(key, payload)}"


def verify(key: bytes, token: str, now: float) -> str:
    """The player id of a valid, unexpired token; raises Unauthenticated otherwise."""
    parts = token.split(".")
    if len(parts) != 4 or parts[0] != TOKEN_VERSION:
        raise Unauthenticated("malformed identity token")
    version, player_id, expires, mac = parts
    if not _PLAYER.fullmatch(player_id) or not expires.isdigit():
        raise Unauthenticated("malformed identity token")
    if not hmac.compare_digest(mac, _mac(key, f"{version}.{player_id}.{expires}")):
        raise Unauthenticated("identity token signature does not verify")
    if int(expires) < now:
        raise Unauthenticated("identity token expired")
    return player_id


class Identity:
    """Who is calling: the player named by the gateway's verified token, never the request's.

    Without a configured key nothing verifies, so every player call is refused: identity
    comes only from the gateway (ARCHITECTURE.md), never from a client-supplied field."""

    def __init__(self, key: str) -> None:
        self.key = key.encode()

    def player(self, context: grpc.aio.ServicerContext[Any, Any], claimed: str) -> str:
        if not self.key:
            raise Unauthenticated("identity tokens cannot be checked: no identity key is configured")
        token = ""
        for k, v in context.invocation_metadata() or ():
            if k == IDENTITY_METADATA and isinstance(v, str):
                token = v
        if not token:
            raise Unauthenticated("missing identity token (calls must come through the gateway)")
        player = verify(self.key, token, time.time())
        if claimed and claimed != player:
            raise PermissionDenied("player_id differs from the caller's identity token")
        return player
