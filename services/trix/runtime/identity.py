"""Caller identity between services: one token format with a role (ADR 0015), a key per
service (ADR 0028).

Owns the internal token `v2.<role>.<name>.<expires>.<signature>`, verified with the key of
the role it claims: `player` tokens (an HMAC under TRIX_PLAYER_TOKEN_KEY, signed by the
gateway) and `service` tokens (Ed25519: each service signs in its own name with its own
private key, TRIX_SERVICE_SIGNING_KEY, and a verifier holds only the public keys of the
services it accepts, `TRIX_<NAME>_PUBLIC_KEY`: no service can sign as another), the
spectator invitations of a private table, and the loading of keys (a missing or bad one
refused naming its variable). A service trusts a player id only from a token that verifies.
No I/O, the clock passed in; never logs a token or a key.
"""

from __future__ import annotations

import base64
import binascii
import contextvars
import hashlib
import hmac
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey
from cryptography.hazmat.primitives.serialization import Encoding, NoEncryption, PrivateFormat, PublicFormat

from trix.errors import PermissionDenied, Unauthenticated
from trix.rules import PLAYER_ID
from trix.runtime.config import ConfigError

if TYPE_CHECKING:
    import grpc

PLAYER_KEY_ENV = "TRIX_PLAYER_TOKEN_KEY"
"""The player-role key: the gateway signs, the table, matchmaking and scoring verify."""
SERVICE_KEY_ENV = "TRIX_SERVICE_SIGNING_KEY"
"""A service's own private key (Ed25519, 64 hex digits): it signs service tokens in its own
name, each signing service its own key (the table, the timers, matchmaking; ADR 0028)."""
ADMIN = "admin"
"""The operators' tools as a signer of service tokens: their key pair is the operators' (the
private key never given to a service), its public key given to the services that accept them."""
GATEWAY_KEY_ENV = "TRIX_GATEWAY_TOKEN_KEY"
"""The key of the public (players') tokens: only the gateway holds it, every replica the same
one (ADR 0018); a token names it by key id."""
GATEWAY_PREVIOUS_KEY_ENV = "TRIX_GATEWAY_TOKEN_PREVIOUS_KEY"
"""Optional: the gateway's previous public-token key, still accepted during a rotation."""
MIN_KEY_BYTES = 32
SIGNING_KEY_HEX = 64
"""An Ed25519 key, private (its seed) or public, written as 64 hex digits."""
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
DISPLAY_NAME_METADATA = "x-trix-display-name-bin"
"""gRPC metadata key of the calling player's display name as the gateway knows it (UTF-8 bytes:
a binary key, names are not ASCII), on its calls to the social service, which cleans and
filters it before anyone is shown it."""
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
"""Create a table (CreateTable: the table's MatchFormed consumer, in its own name, on matchmaking's word)."""
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
}
"""What a service token may do at the table, by the service it names (and whose own key signed
it: the table accepts the table's, the timers' and the operators' keys only, ADR 0028): one RPC
family a scope; a name not listed (scoring's, matchmaking's) may do none of it. A check is one set
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


def public_key_env(name: str) -> str:
    """The variable holding the public key of signer `name` (a service or ADMIN)."""
    return f"TRIX_{name.upper()}_PUBLIC_KEY"


@dataclass(frozen=True, eq=False)
class Keys:
    """The keys a process holds: no key of a role = tokens of that role are refused (and cannot
    be signed); a service token is accepted only in the name of a service in `trusted`."""

    player: bytes = field(default=b"", repr=False)
    """The player-role key (HMAC): the gateway signs, the services verify."""
    signing: Ed25519PrivateKey | None = field(default=None, repr=False)
    """This service's own private key: it signs service tokens in its own name only."""
    trusted: Mapping[str, Ed25519PublicKey] = field(default_factory=dict, repr=False)
    """The public keys of the signers whose service tokens it accepts, by their name."""

    def signer(self, name: str, ttl_s: float = DEFAULT_TTL_S) -> ServiceSigner:
        """`name`'s tokens signed with this process's own key (ValueError if it holds none)."""
        if self.signing is None:
            raise ValueError(f"{name} holds no signing key ({SERVICE_KEY_ENV})")
        return ServiceSigner(self.signing, name, ttl_s)


def _mac(key: bytes, payload: str) -> str:
    return hmac.new(key, payload.encode(), hashlib.sha256).hexdigest()


def sign(key: bytes, role: str, name: str, now: float, ttl_s: float = DEFAULT_TTL_S) -> str:
    """A player token for `name` until now + ttl under the player-role `key` (service tokens:
    `sign_service`, with the service's own private key)."""
    if role != ROLE_PLAYER or not _NAME.fullmatch(name):
        raise ValueError("bad role or name for a player token (a service signs with sign_service)")
    if len(key) < MIN_KEY_BYTES:
        raise ValueError("an internal token key must have at least 32 bytes")
    payload = f"{TOKEN_VERSION}.{role}.{name}.{int(now + ttl_s)}"
    return f"{payload}.{_mac(key, payload)}"


def sign_service(key: Ed25519PrivateKey, name: str, now: float, ttl_s: float = DEFAULT_TTL_S) -> str:
    """A service token for `name` until now + ttl, signed with `key`: it verifies only where
    `key`'s public key is trusted as `name`'s (a service signs with its own key, in its name)."""
    if not _NAME.fullmatch(name):
        raise ValueError("bad name for a service token")
    payload = f"{TOKEN_VERSION}.{ROLE_SERVICE}.{name}.{int(now + ttl_s)}"
    signature = base64.urlsafe_b64encode(key.sign(payload.encode())).rstrip(b"=").decode()
    return f"{payload}.{signature}"


class ServiceSigner:
    """A service's own tokens, in its own name: one signature per half lifetime, the same token
    sent meanwhile (a verifier caches it: `VerifiedTokens`), so no command pays a signature."""

    def __init__(self, key: Ed25519PrivateKey, name: str, ttl_s: float = DEFAULT_TTL_S) -> None:
        self.key = key
        self.name = name
        self.ttl_s = ttl_s
        self._token = ""
        self._renew_at = 0.0

    def token(self, now: float | None = None) -> str:
        now = time.time() if now is None else now
        if now >= self._renew_at:
            self._token = sign_service(self.key, self.name, now, self.ttl_s)
            self._renew_at = now + self.ttl_s / 2
        return self._token


def _verify_signature(keys: Keys, role: str, name: str, payload: str, signature: str) -> None:
    if role == ROLE_PLAYER:
        if not hmac.compare_digest(_mac(keys.player, payload), signature):
            raise Unauthenticated("caller token signature does not verify")
        return
    public = keys.trusted.get(name) if _NAME.fullmatch(name) else None
    if public is None:
        raise Unauthenticated("tokens in that service's name are not accepted here")
    try:
        public.verify(base64.urlsafe_b64decode(signature + "=" * (-len(signature) % 4)), payload.encode())
    except (InvalidSignature, ValueError, binascii.Error):
        raise Unauthenticated("caller token signature does not verify") from None


def verify(keys: Keys, token: str | None, now: float, *, roles: tuple[str, ...] = ROLES) -> Caller:
    """The caller a token names, checked under the key of the role it claims (a service token
    under the public key of the service it names); Unauthenticated if missing, malformed, of a
    role or service not accepted here, badly signed or expired."""
    if not token:
        raise Unauthenticated("missing caller token (calls must come through the gateway or a service)")
    parts = token.split(".")
    if len(parts) != 5 or parts[0] != TOKEN_VERSION:
        raise Unauthenticated("malformed caller token")
    _, role, name, expires, signature = parts
    held = bool(keys.player) if role == ROLE_PLAYER else bool(keys.trusted) if role == ROLE_SERVICE else False
    if role not in roles or not held:
        raise Unauthenticated(f"{role if role in ROLES else 'unknown'}-role tokens are not accepted here")
    _verify_signature(keys, role, name, f"{TOKEN_VERSION}.{role}.{name}.{expires}", signature)
    if not _NAME.fullmatch(name) or not expires.isdigit():
        raise Unauthenticated("malformed caller token")
    if int(expires) < now:
        raise Unauthenticated("expired caller token")
    return Caller(role, name)


class VerifiedTokens:
    """`verify` with memory: a token verified once is known until it expires, so a caller that
    sends the same token with every command (the gateway signs a player's again every minute,
    a service its own every half lifetime: `ServiceSigner`) costs one HMAC or one Ed25519
    verification a minute, not one per command. Keyed by the whole token, so only those very
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


def new_signing_key() -> str:
    """A fresh Ed25519 private key, as TRIX_SERVICE_SIGNING_KEY takes it (64 hex digits)."""
    raw = Ed25519PrivateKey.generate().private_bytes(Encoding.Raw, PrivateFormat.Raw, NoEncryption())
    return raw.hex()


def public_key_of(private_hex: str) -> str:
    """The public key (64 hex digits) of a private key written as `new_signing_key` writes it."""
    key = Ed25519PrivateKey.from_private_bytes(bytes.fromhex(private_hex))
    return key.public_key().public_bytes(Encoding.Raw, PublicFormat.Raw).hex()


def _hex_key(env: Mapping[str, str], name: str) -> bytes:
    raw = env.get(name, "").strip()
    if not raw:
        raise ConfigError(f"{name}: required (an Ed25519 key, {SIGNING_KEY_HEX} hex digits)")
    if len(raw) != SIGNING_KEY_HEX or raw.strip("0123456789abcdefABCDEF"):
        raise ConfigError(f"{name}: an Ed25519 key is {SIGNING_KEY_HEX} hex digits")
    return bytes.fromhex(raw)


def load_signing_key(env: Mapping[str, str], name: str = SERVICE_KEY_ENV) -> Ed25519PrivateKey:
    """A service's own private key from the environment: ConfigError naming `name` if unset or bad."""
    return Ed25519PrivateKey.from_private_bytes(_hex_key(env, name))


def load_trusted(env: Mapping[str, str], signers: tuple[str, ...]) -> dict[str, Ed25519PublicKey]:
    """The public keys of `signers` (`TRIX_<NAME>_PUBLIC_KEY` each, all required) by name."""
    return {s: Ed25519PublicKey.from_public_bytes(_hex_key(env, public_key_env(s))) for s in signers}


def metadata_token(context: grpc.aio.ServicerContext[Any, Any], key: str = IDENTITY_METADATA) -> str:
    for k, v in context.invocation_metadata() or ():
        if k == key and isinstance(v, str):
            return v
    return ""


class Identity:
    """Who is calling a gRPC service: the caller named by a verified token, never the request.

    `player(context, claimed)` is the player of a player token (PermissionDenied if the
    request claims another); a service token (signed by one of `services`, whose public keys
    this process holds) acts for the claimed player, as matchmaking's stake calls do."""

    def __init__(self, keys: Keys, *, services: tuple[str, ...] = ()) -> None:
        self.keys = keys
        self.services = services
        self.tokens = VerifiedTokens(keys)
        """Each token verified once until it expires (an Ed25519 verification is ~0.1 ms)."""

    def caller(self, context: grpc.aio.ServicerContext[Any, Any]) -> Caller:
        token = metadata_token(context)
        if not token:
            raise Unauthenticated("missing identity token (calls must come through the gateway)")
        roles = (ROLE_PLAYER, ROLE_SERVICE) if self.services else (ROLE_PLAYER,)
        caller = self.tokens.verify(token, time.time(), roles=roles)
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
            own = self.tokens.verify(metadata_token(context, PLAYER_METADATA), time.time(), roles=(ROLE_PLAYER,))
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
