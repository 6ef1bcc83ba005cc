"""Token keys of a test suite (ADR 0028): the player-role key, and each signer's own Ed25519
key (every service that signs, and the operators'), fixed per suite from a seed so that the
processes it starts and its clients agree; what a service under test is given of them is
what its declaration says (`trix.declarations.signing_env`), as `trix up` gives it."""

from __future__ import annotations

import hashlib
import hmac
import time

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from trix.declarations import declaration, load_keys, signers, signing_env
from trix.runtime.identity import (
    PLAYER_KEY_ENV,
    ROLE_PLAYER,
    ROLE_SERVICE,
    TOKEN_VERSION,
    Keys,
    sign,
    sign_service,
)


class SuiteKeys:
    """The keys of one test suite, named after `seed`."""

    def __init__(self, seed: str) -> None:
        self.player = f"{seed}-player-token-key-0123456789abcdef".encode()
        self.private = {s: hashlib.sha256(f"{seed}/{s}".encode()).hexdigest() for s in signers()}
        """Each signer's private key (64 hex digits), by its name."""

    def signing_key(self, signer: str) -> Ed25519PrivateKey:
        return Ed25519PrivateKey.from_private_bytes(bytes.fromhex(self.private[signer]))

    def token(self, role: str, name: str, ttl_s: float = 3600.0) -> str:
        """A player's token, or signer `name`'s own service token (signed with its own key)."""
        if role == ROLE_PLAYER:
            return sign(self.player, role, name, time.time(), ttl_s)
        return sign_service(self.signing_key(name), name, time.time(), ttl_s)

    def player_key_forgery(self, name: str, ttl_s: float = 300.0) -> str:
        """A service token in `name` MACed with the player-role key, as player tokens are: what
        a holder of the player key (the gateway) could make."""
        payload = f"{TOKEN_VERSION}.{ROLE_SERVICE}.{name}.{int(time.time() + ttl_s)}"
        return f"{payload}.{hmac.new(self.player, payload.encode(), hashlib.sha256).hexdigest()}"

    def env(self, service: str) -> dict[str, str]:
        """The token keys `service` is given: the player-role key if it holds it, its own private
        key if it signs, its accepted signers' public keys."""
        env = signing_env(service, self.private)
        if PLAYER_KEY_ENV in declaration(service).keys:
            env[PLAYER_KEY_ENV] = self.player.decode()
        return env

    def keys(self, service: str) -> Keys:
        """`Keys` as `service` loads them from `env(service)`."""
        return load_keys(self.env(service), service)
