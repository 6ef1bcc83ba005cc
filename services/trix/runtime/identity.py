"""The player's identity on internal calls: a short HMAC token the gateway signs.

Owns `sign` / `verify` of the internal identity token and the metadata key it travels
under (`x-trix-identity`). The gateway authenticates the player, then signs
`v1.<player_id>.<expires_unix>` with the key shared by the services
(`TRIX_INTERNAL_TOKEN_KEY`); a service trusts a player id only from a token that
verifies, never from a request field (ARCHITECTURE.md, "Durability and ownership").
Pure hashlib/hmac: no grpc, no I/O; the clock is passed in.
"""

from __future__ import annotations

import hashlib
import hmac
import re

from trix.errors import Unauthenticated

IDENTITY_METADATA = "x-trix-identity"
"""gRPC metadata key of the internal identity token."""

TOKEN_VERSION = "v1"
_PLAYER = re.compile(r"^[A-Za-z0-9_-]{1,128}$")


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
