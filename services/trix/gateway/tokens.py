"""Public tokens of the gateway (ADR 0018).

Owns `HmacTokens`, the guest token: a compact HS256 JWT whose key id is derived from the
key; verification accepts exactly HS256 under the current or previous key (a rotation logs
nobody out), in constant time, then issuer and expiry; `refresh` re-signs under the current
key up to `max_age_s` after the sign-in. Owns `Principal`, who a verified token names
(`ports.TokenVerifier`, which a real identity provider could implement too). Pure
hashlib/hmac/json, the clock passed in; never logs a token.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import json
import re
from dataclasses import dataclass

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


def key_id(key: bytes) -> str:
    """The public id of a signing key (the token header's `kid`): a hash prefix, so every
    replica given the same key names it alike and the id reveals nothing of the key."""
    return hashlib.sha256(b"trix-gateway-kid-v1:" + key).hexdigest()[:16]


DEFAULT_MAX_AGE_S = 7 * 86400
"""How long after a sign-in refreshes go on, by default (then the client signs in again)."""


class HmacTokens:
    """Issues HS256 guest tokens under the current key; verifies those of the current and
    the previous key (`previous`, during a rotation)."""

    def __init__(self, key: bytes, ttl_s: int, *, previous: bytes = b"", max_age_s: int = DEFAULT_MAX_AGE_S) -> None:
        if len(key) < 16 or (previous and len(previous) < 16):
            raise ValueError("token key must be at least 16 bytes")
        self._key = key
        self.kid = key_id(key)
        self._keys = {self.kid: key}
        if previous and previous != key:
            self._keys[key_id(previous)] = previous
        self.ttl_s = ttl_s
        self.max_age_s = max_age_s

    @staticmethod
    def _mac(key: bytes, signing_input: str) -> bytes:
        return hmac.new(key, signing_input.encode(), hashlib.sha256).digest()

    def issue(self, player_id: str, display_name: str, now: float, *, auth_time: int | None = None) -> tuple[str, int]:
        """A token for the player and its expiry (unix seconds); `auth_time`: when he signed
        in (default now; a refresh passes the original one)."""
        if not PLAYER_ID.fullmatch(player_id):
            raise ValueError("bad player id")
        expires = int(now) + self.ttl_s
        header = _b64(json.dumps({"alg": ALGORITHM, "typ": "JWT", "kid": self.kid}, separators=(",", ":")).encode())
        claims = {
            "sub": player_id,
            "name": display_name,
            "iat": int(now),
            "exp": expires,
            "iss": ISSUER,
            "auth": int(now) if auth_time is None else auth_time,
        }
        payload = _b64(json.dumps(claims, separators=(",", ":"), ensure_ascii=False).encode())
        signing_input = f"{header}.{payload}"
        return f"{signing_input}.{_b64(self._mac(self._key, signing_input))}", expires

    def _claims(self, token: str, now: float) -> dict[str, object]:
        if not token or len(token) > MAX_TOKEN_CHARS:
            raise Unauthenticated("missing or oversized token")
        parts = token.split(".")
        if len(parts) != 3:
            raise Unauthenticated("malformed token")
        header = _json(parts[0])
        if header.get("alg") != ALGORITHM:  # rejects "none" and every other algorithm
            raise Unauthenticated("token algorithm not accepted")
        kid = header.get("kid")
        key = self._keys.get(kid) if isinstance(kid, str) else None
        if key is None:  # no key id, or a key this gateway no longer (or never) held
            raise Unauthenticated("token key not accepted: sign in again")
        if not hmac.compare_digest(_unb64(parts[2]), self._mac(key, f"{parts[0]}.{parts[1]}")):
            raise Unauthenticated("token signature does not verify")
        claims = _json(parts[1])
        sub, exp = claims.get("sub"), claims.get("exp")
        if not isinstance(sub, str) or not PLAYER_ID.fullmatch(sub) or not isinstance(exp, int):
            raise Unauthenticated("malformed token")
        if claims.get("iss") != ISSUER:
            raise Unauthenticated("token issuer not accepted")
        if exp <= now:
            raise Unauthenticated("token expired")
        return claims

    def verify(self, token: str, now: float) -> Principal:
        claims = self._claims(token, now)
        name = claims.get("name", "")
        exp = claims["exp"]
        assert isinstance(exp, int)
        return Principal(str(claims["sub"]), name if isinstance(name, str) else "", exp)

    def refresh(self, token: str, now: float) -> tuple[str, int]:
        """A new token (current key, a full lifetime) for a valid one, until `max_age_s`
        after the sign-in it descends from; Unauthenticated otherwise."""
        claims = self._claims(token, now)
        auth = claims.get("auth")
        if not isinstance(auth, int) or now - auth >= self.max_age_s:
            raise Unauthenticated("sign-in too old to refresh: sign in again")
        name = claims.get("name", "")
        return self.issue(str(claims["sub"]), name if isinstance(name, str) else "", now, auth_time=auth)


def hash_device_secret(device_secret: str) -> str:
    """The key a guest account is stored under: the secret itself is never stored."""
    return hashlib.sha256(b"trix-guest-v1:" + device_secret.encode()).hexdigest()
