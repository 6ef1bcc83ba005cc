"""Caller identity between services: HMAC-signed internal tokens.

Owns the token the gateway (for a player) or a backend service (timers, matchmaking,
admin tools) attaches to every table command: `v1.<role>.<name>.<expiry>.<hmac>`,
signed with HMAC-SHA256 under the internal secret shared through configuration
(ARCHITECTURE.md: "Internal calls carry the player's identity in metadata that
services accept only from the gateway (a signed internal token or mTLS), never from
a client"). A client cannot forge one without the secret, and the table never takes
a player id from a request body. Must not log tokens or the secret.

TODO(issue 5): move to the shared runtime once the gateway signs tokens too.
"""

from __future__ import annotations

import hashlib
import hmac
from dataclasses import dataclass

from trix.errors import Unauthenticated
from trix.rules import PLAYER_ID

TOKEN_HEADER = "Trix-Caller"
"""NATS header carrying the token of a table command."""
TOKEN_METADATA = "x-trix-caller"
"""gRPC metadata key carrying the token (forwarded unchanged to the NATS header)."""
ROLE_PLAYER = "player"
ROLE_SERVICE = "service"
DEFAULT_TTL_S = 300
_NAME = PLAYER_ID  # trix.rules: 1-128 of A-Z a-z 0-9 _ -


@dataclass(frozen=True)
class Caller:
    """Who sent a command: a player (through the gateway) or a backend service."""

    role: str
    name: str

    @property
    def is_service(self) -> bool:
        return self.role == ROLE_SERVICE

    def is_player(self, player_id: str) -> bool:
        return self.role == ROLE_PLAYER and bool(player_id) and hmac.compare_digest(self.name, player_id)


def _mac(secret: bytes, payload: str) -> str:
    return hmac.new(secret, payload.encode(), hashlib.sha256).hexdigest()


def sign(secret: bytes, role: str, name: str, now_s: float, ttl_s: float = DEFAULT_TTL_S) -> str:
    """A token for `name` in `role`, valid until now + ttl."""
    if role not in (ROLE_PLAYER, ROLE_SERVICE) or not _NAME.fullmatch(name):
        raise ValueError("bad role or name for an internal token")
    payload = f"v1.{role}.{name}.{int(now_s + ttl_s)}"
    return f"{payload}.{_mac(secret, payload)}"


def verify(secret: bytes, token: str | None, now_s: float) -> Caller:
    """The caller a token names; Unauthenticated if missing, malformed, expired or badly signed."""
    if not token:
        raise Unauthenticated("missing caller token")
    parts = token.split(".")
    if len(parts) != 5 or parts[0] != "v1":
        raise Unauthenticated("malformed caller token")
    _, role, name, expiry, mac = parts
    payload = f"v1.{role}.{name}.{expiry}"
    if not hmac.compare_digest(_mac(secret, payload), mac):
        raise Unauthenticated("bad caller token signature")
    if role not in (ROLE_PLAYER, ROLE_SERVICE) or not _NAME.fullmatch(name) or not expiry.isdigit():
        raise Unauthenticated("malformed caller token")
    if int(expiry) < now_s:
        raise Unauthenticated("expired caller token")
    return Caller(role, name)
