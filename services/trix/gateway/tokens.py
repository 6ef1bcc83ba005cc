"""Public tokens of the gateway.

Owns:
- `HmacTokens`: the guest token, a compact JWT (RFC 7519) signed with HS256: header
  `{"alg":"HS256","typ":"JWT"}`, claims `sub` (player id), `name`, `iat`, `exp`, `iss`.
  Verification accepts exactly HS256 (never `alg: none`, never another algorithm),
  checks the signature in constant time, then the expiry.
- `TokenVerifier`, the port a real identity provider's verifier implements (e.g. RS256
  JWTs against its JWKS): the gateway only needs `verify(token, now) -> Principal`.
(The internal tokens it signs for a player are `trix.runtime.identity`'s.)

Pure hashlib/hmac/json: no grpc, no nats, no clock (now is passed in). Never logs a token.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import json
import re
from dataclasses import dataclass
from typing import Protocol

from trix.errors import Unauthenticated
from trix.rules import PLAYER_ID

ALGORITHM = "HS256"
ISSUER = "trix-gateway"
MAX_TOKEN_CHARS = 2048


@dataclass(frozen=True)
class Principal:
    """Who a verified token names."""

    player_id: str
    display_name: str
    expires_at: int


class TokenVerifier(Protocol):
    """Turns a bearer token into a principal; raises `Unauthenticated` otherwise."""

    def verify(self, token: str, now: float) -> Principal: ...


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _unb64(text: str) -> bytes:
    if not re.fullmatch(r"[A-Za-z0-9_-]*", text):
        raise Unauthenticated("malformed token")
    try:
        return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
    except (binascii.Error, ValueError):
        raise Unauthenticated("malformed token") from None


def _json(text: str) -> dict[str, object]:
    try:
        value = json.loads(_unb64(text))
    except (ValueError, UnicodeDecodeError):
        raise Unauthenticated("malformed token") from None
    if not isinstance(value, dict):
        raise Unauthenticated("malformed token")
    return value


class HmacTokens:
    """Issues and verifies HS256 guest tokens under one key."""

    def __init__(self, key: bytes, ttl_s: int) -> None:
        if len(key) < 16:
            raise ValueError("token key must be at least 16 bytes")
        self._key = key
        self.ttl_s = ttl_s

    def _mac(self, signing_input: str) -> bytes:
        return hmac.new(self._key, signing_input.encode(), hashlib.sha256).digest()

    def issue(self, player_id: str, display_name: str, now: float) -> tuple[str, int]:
        """A token for the player and its expiry (unix seconds)."""
        if not PLAYER_ID.fullmatch(player_id):
            raise ValueError("bad player id")
        expires = int(now) + self.ttl_s
        header = _b64(json.dumps({"alg": ALGORITHM, "typ": "JWT"}, separators=(",", ":")).encode())
        claims = {"sub": player_id, "name": display_name, "iat": int(now), "exp": expires, "iss": ISSUER}
        payload = _b64(json.dumps(claims, separators=(",", ":"), ensure_ascii=False).encode())
        signing_input = f"{header}.{payload}"
        return f"{signing_input}.{_b64(self._mac(signing_input))}", expires

    def verify(self, token: str, now: float) -> Principal:
        if not token or len(token) > MAX_TOKEN_CHARS:
            raise Unauthenticated("missing or oversized token")
        parts = token.split(".")
        if len(parts) != 3:
            raise Unauthenticated("malformed token")
        header = _json(parts[0])
        if header.get("alg") != ALGORITHM:  # rejects "none" and every other algorithm
            raise Unauthenticated("token algorithm not accepted")
        if not hmac.compare_digest(_unb64(parts[2]), self._mac(f"{parts[0]}.{parts[1]}")):
            raise Unauthenticated("token signature does not verify")
        claims = _json(parts[1])
        sub, exp, name = claims.get("sub"), claims.get("exp"), claims.get("name", "")
        if not isinstance(sub, str) or not PLAYER_ID.fullmatch(sub) or not isinstance(exp, int):
            raise Unauthenticated("malformed token")
        if claims.get("iss") != ISSUER:
            raise Unauthenticated("token issuer not accepted")
        if exp <= now:
            raise Unauthenticated("token expired")
        return Principal(sub, name if isinstance(name, str) else "", exp)


def hash_device_secret(device_secret: str) -> str:
    """The key a guest account is stored under: the secret itself is never stored."""
    return hashlib.sha256(b"trix-guest-v1:" + device_secret.encode()).hexdigest()
