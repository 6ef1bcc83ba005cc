"""Caller identity between services: one HMAC token format with a role, one key per role (ADR 0015).

Owns the internal token `v2.<role>.<name>.<expires>.<mac>`, verified with the key of the
role it claims: `player` tokens (signed by the gateway with TRIX_PLAYER_TOKEN_KEY) and
`service` tokens (TRIX_SERVICE_TOKEN_KEY, never held by the gateway), the spectator
invitations of a private table, and `load_key` (refuses a missing or short key naming the
variable). A service trusts a player id only from a token that verifies. Pure hashlib/hmac,
no I/O, the clock passed in; never logs a token or a key.
"""

from __future__ import annotations

import contextvars
import hashlib
import hmac
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from trix.errors import PermissionDenied, Unauthenticated
from trix.rules import PLAYER_ID
from trix.runtime.config import ConfigError

if TYPE_CHECKING:
    import grpc

PLAYER_KEY_ENV = "TRIX_PLAYER_TOKEN_KEY"
"""The player-role key: the gateway signs, the table, matchmaking and scoring verify."""
SERVICE_KEY_ENV = "TRIX_SERVICE_TOKEN_KEY"
"""The service-role key: the timers, matchmaking and the table sign, the table and scoring verify."""
GATEWAY_KEY_ENV = "TRIX_GATEWAY_TOKEN_KEY"
"""The key of the public (players') tokens: only the gateway holds it, every replica the same
one (ADR 0018); a token names it by key id."""
GATEWAY_PREVIOUS_KEY_ENV = "TRIX_GATEWAY_TOKEN_PREVIOUS_KEY"
"""Optional: the gateway's previous public-token key, still accepted during a rotation."""
MIN_KEY_BYTES = 32
# Which keys each service holds: its declaration (`trix.declarations.keys_of`).
TOKEN_HEADER = "Trix-Caller"
"""NATS header carrying the token of a table command."""
TOKEN_METADATA = "x-trix-caller"
"""gRPC metadata key of the table's API carrying the token (forwarded to the NATS header)."""
IDENTITY_METADATA = "x-trix-identity"
"""gRPC metadata key of the token on matchmaking's and scoring's calls."""
PLAYER_METADATA = "x-trix-player"
"""gRPC metadata key of the player's own token that a service's call on their behalf carries
(matchmaking's HoldStake): scoring holds coins only on the player's own signed-in request."""
PLAYER_TOKEN: contextvars.ContextVar[str] = contextvars.ContextVar("trix_player_token", default="")
"""The verified player token of the gRPC call being served (`Identity.caller`), so a call this
one makes on that player's behalf can carry it (PLAYER_METADATA); per call (its own task)."""

ROLE_PLAYER = "player"
ROLE_SERVICE = "service"
ROLES = (ROLE_PLAYER, ROLE_SERVICE)
TOKEN_VERSION = "v2"
DEFAULT_TTL_S = 300.0
_NAME = PLAYER_ID  # trix.rules: 1-128 of A-Z a-z 0-9 _ -


SCOPE_CREATE = "create"
"""Create a table (CreateTable: the table's MatchFormed consumer, as matchmaking's word)."""
SCOPE_SEAT = "seat"
"""Act for a seat as the platform decides (AutoAct, a §10 leave, a reclaim: the timers)."""
SCOPE_PUBLIC = "public"
"""Read any table's public view and events (a private one's too)."""
SCOPE_HANDS = "hands"
"""Read any seat's view and events: its hand (the table's own and the operators' only)."""
SERVICE_SCOPES: dict[str, frozenset[str]] = {
    "table": frozenset({SCOPE_CREATE, SCOPE_PUBLIC, SCOPE_HANDS}),
    "admin": frozenset({SCOPE_CREATE, SCOPE_SEAT, SCOPE_PUBLIC, SCOPE_HANDS}),  # the operators' tools
    "timers": frozenset({SCOPE_SEAT, SCOPE_PUBLIC}),
    "matchmaking": frozenset({SCOPE_CREATE}),
}
"""What a service token may do at the table, by the service it names:
one RPC family a scope; a name not listed (scoring's) may do none of it. A check is one set
lookup on the verified (cached) caller, no crypto per action."""
NO_SCOPES: frozenset[str] = frozenset()


@dataclass(frozen=True)
class Caller:
    """Who sent a call: a player (through the gateway) or a backend service."""

    role: str
    name: str
    scopes: frozenset[str] = field(init=False, compare=False, repr=False)
    """A service's scopes (SERVICE_SCOPES, by its name); a player has none."""

    def __post_init__(self) -> None:
        scopes = SERVICE_SCOPES.get(self.name, NO_SCOPES) if self.role == ROLE_SERVICE else NO_SCOPES
        object.__setattr__(self, "scopes", scopes)

    @property
    def is_service(self) -> bool:
        return self.role == ROLE_SERVICE

    def may(self, scope: str) -> bool:
        """Whether this service caller holds `scope` (never a player)."""
        return scope in self.scopes

    def is_player(self, player_id: str) -> bool:
        return self.role == ROLE_PLAYER and bool(player_id) and hmac.compare_digest(self.name, player_id)


@dataclass(frozen=True)
class Keys:
    """The keys a process holds: empty = tokens of that role are refused (and cannot be signed)."""

    player: bytes = field(default=b"", repr=False)
    service: bytes = field(default=b"", repr=False)

    def of(self, role: str) -> bytes:
        return self.player if role == ROLE_PLAYER else self.service if role == ROLE_SERVICE else b""


def _mac(key: bytes, payload: str) -> str:
    return hmac.new(key, payload.encode(), hashlib.sha256).hexdigest()


def sign(key: bytes, role: str, name: str, now: float, ttl_s: float = DEFAULT_TTL_S) -> str:
    """A token for `name` in `role` until now + ttl, under `key` (the key of that role)."""
    if role not in ROLES or not _NAME.fullmatch(name):
        raise ValueError("bad role or name for an internal token")
    if len(key) < MIN_KEY_BYTES:
        raise ValueError("an internal token key must have at least 32 bytes")
    payload = f"{TOKEN_VERSION}.{role}.{name}.{int(now + ttl_s)}"
    return f"{payload}.{_mac(key, payload)}"


def verify(keys: Keys, token: str | None, now: float, *, roles: tuple[str, ...] = ROLES) -> Caller:
    """The caller a token names, checked under the key of the role it claims; Unauthenticated
    if missing, malformed, of a role not accepted here, badly signed or expired."""
    if not token:
        raise Unauthenticated("missing caller token (calls must come through the gateway or a service)")
    parts = token.split(".")
    if len(parts) != 5 or parts[0] != TOKEN_VERSION:
        raise Unauthenticated("malformed caller token")
    _, role, name, expires, mac = parts
    if role not in roles or not keys.of(role):
        raise Unauthenticated(f"{role if role in ROLES else 'unknown'}-role tokens are not accepted here")
    if not hmac.compare_digest(_mac(keys.of(role), f"{TOKEN_VERSION}.{role}.{name}.{expires}"), mac):
        raise Unauthenticated("caller token signature does not verify")
    if not _NAME.fullmatch(name) or not expires.isdigit():
        raise Unauthenticated("malformed caller token")
    if int(expires) < now:
        raise Unauthenticated("expired caller token")
    return Caller(role, name)


class VerifiedTokens:
    """`verify` with memory: a token verified once is known until it expires, so a caller that
    sends the same token with every command (the gateway signs a player's again every minute)
    costs one HMAC a minute, not one per command. Keyed by the whole token, so only those very
    bytes are let through, under the same role check, and only until their own expiry; at most
    `max_tokens` at once (the expired ones dropped first, all if none is)."""

    def __init__(self, keys: Keys, max_tokens: int = 20000) -> None:
        self.keys = keys
        self.max_tokens = max_tokens
        self._known: dict[str, tuple[Caller, int]] = {}

    def verify(self, token: str | None, now: float, *, roles: tuple[str, ...] = ROLES) -> Caller:
        known = self._known.get(token) if token else None
        if known is not None and known[0].role in roles and now <= known[1]:
            return known[0]
        caller = verify(self.keys, token, now, roles=roles)
        assert token is not None  # verified
        if len(self._known) >= self.max_tokens:
            self._known = {t: k for t, k in self._known.items() if now <= k[1]}
            if len(self._known) >= self.max_tokens:
                self._known.clear()
        self._known[token] = (caller, int(token.rsplit(".", 2)[1]))
        return caller


INVITATION_VERSION = "inv1"
"""First field of a spectator invitation; an internal token starts with `v2`, so neither can
ever stand for the other (their MACs cover different first fields)."""
DEFAULT_INVITATION_TTL_S = 3600.0


def sign_invitation(
    key: bytes, table_id: str, inviter: str, now: float, ttl_s: float = DEFAULT_INVITATION_TTL_S
) -> str:
    """An invitation to watch `table_id` (a private table: watched by its players only, or with
    an invitation from one of them), made by the gateway for `inviter`, a player seated there,
    under the player-role key; `inv1.<table>.<inviter>.<expires>.<mac>`. Whoever holds it may
    watch that table's public events until it expires; the table verifies it
    (`verify_invitation`) and that the inviter holds a seat."""
    if not _NAME.fullmatch(table_id) or not _NAME.fullmatch(inviter):
        raise ValueError("bad table or inviter for an invitation")
    if len(key) < MIN_KEY_BYTES:
        raise ValueError("an invitation key must have at least 32 bytes")
    payload = f"{INVITATION_VERSION}.{table_id}.{inviter}.{int(now + ttl_s)}"
    return f"{payload}.{_mac(key, payload)}"


def verify_invitation(key: bytes, invitation: str, table_id: str, now: float) -> str:
    """The inviter of a valid invitation to `table_id`; PermissionDenied, with a message a client
    can show, if it is malformed, badly signed, for another table or expired."""
    parts = invitation.split(".")
    if len(parts) != 5 or parts[0] != INVITATION_VERSION or not key:
        raise PermissionDenied("the invitation is not valid: ask a player of the table for a new one")
    _, table, inviter, expires, mac = parts
    if not hmac.compare_digest(_mac(key, f"{INVITATION_VERSION}.{table}.{inviter}.{expires}"), mac):
        raise PermissionDenied("the invitation is not valid: ask a player of the table for a new one")
    if not _NAME.fullmatch(inviter) or not expires.isdigit():
        raise PermissionDenied("the invitation is not valid: ask a player of the table for a new one")
    if not hmac.compare_digest(table, table_id):
        raise PermissionDenied("the invitation is for another table")
    if int(expires) < now:
        raise PermissionDenied("the invitation expired: ask a player of the table for a new one")
    return inviter


def load_key(env: Mapping[str, str], name: str) -> bytes:
    """A required token key from the environment: ConfigError naming `name` if unset or short."""
    raw = env.get(name, "").strip()
    if not raw:
        raise ConfigError(f"{name}: required (a secret of at least {MIN_KEY_BYTES} bytes)")
    if len(raw.encode()) < MIN_KEY_BYTES:
        raise ConfigError(f"{name}: at least {MIN_KEY_BYTES} bytes")
    return raw.encode()


def metadata_token(context: grpc.aio.ServicerContext[Any, Any], key: str = IDENTITY_METADATA) -> str:
    for k, v in context.invocation_metadata() or ():
        if k == key and isinstance(v, str):
            return v
    return ""


class Identity:
    """Who is calling a gRPC service: the caller named by a verified token, never the request.

    `player(context, claimed)` is the player of a player token (PermissionDenied if the
    request claims another); a service token (when this process holds the service key and
    `services` allows it) acts for the claimed player, as matchmaking's stake calls do."""

    def __init__(self, keys: Keys, *, services: tuple[str, ...] = ()) -> None:
        self.keys = keys
        self.services = services

    def caller(self, context: grpc.aio.ServicerContext[Any, Any]) -> Caller:
        token = metadata_token(context)
        if not token:
            raise Unauthenticated("missing identity token (calls must come through the gateway)")
        roles = (ROLE_PLAYER, ROLE_SERVICE) if self.services else (ROLE_PLAYER,)
        caller = verify(self.keys, token, time.time(), roles=roles)
        if caller.is_service and caller.name not in self.services:
            raise PermissionDenied(f"service {caller.name} may not make this call")
        if not caller.is_service:
            PLAYER_TOKEN.set(token)
        return caller

    def requested_by(self, context: grpc.aio.ServicerContext[Any, Any], claimed: str) -> str:
        """The player whose own signed-in request this call is: a player token naming `claimed`,
        or a service token (as `player`) carrying that player's token too (PLAYER_METADATA), so
        a compromised service alone cannot spend a player's coins."""
        caller = self.caller(context)
        if caller.is_service:
            own = verify(self.keys, metadata_token(context, PLAYER_METADATA), time.time(), roles=(ROLE_PLAYER,))
            if not own.is_player(claimed):
                raise PermissionDenied("only the player's own request may hold their coins")
            return claimed
        return self.player(context, claimed)

    def player(self, context: grpc.aio.ServicerContext[Any, Any], claimed: str) -> str:
        caller = self.caller(context)
        if caller.is_service:
            return claimed
        if claimed and claimed != caller.name:
            raise PermissionDenied("player_id differs from the caller's identity token")
        return caller.name
