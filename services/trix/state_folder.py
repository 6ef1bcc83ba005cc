"""What `trix up` keeps in its state folder besides the data: the NATS users' passwords, the
gateways' secrets and the signers' private keys (generated once, in files only their owner may read), the NATS nodes'
config files and the URLs to them.
"""

from __future__ import annotations

import json
import os
import secrets
from collections.abc import Sequence
from pathlib import Path

from trix.gateway.config import EDGE_SECRET_ENV
from trix.natsio import permissions
from trix.runtime.identity import GATEWAY_KEY_ENV, new_signing_key

NATS_USERS_FILE = "nats-users.json"
"""The state folder's NATS passwords, one per user of `trix.natsio.permissions.USERS` (mode 0600)."""


def write_private(path: Path, text: str) -> None:
    """Write a file only its owner may read (it holds passwords)."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write(text)
    os.chmod(path, 0o600)


def nats_passwords(state_dir: Path, users: Sequence[str] = permissions.USERS) -> dict[str, str]:
    """The state folder's NATS passwords of `users`: read, or generated once (and any user added since)."""
    path = state_dir / NATS_USERS_FILE
    known: dict[str, str] = {}
    if path.exists():
        loaded = json.loads(path.read_text())
        known = {u: str(p) for u, p in loaded.items() if u in users and p}
    passwords = {u: known.get(u) or secrets.token_urlsafe(24) for u in users}
    if passwords != known or path.stat().st_mode & 0o077:
        write_private(path, json.dumps(passwords, indent=2) + "\n")
    return passwords


GATEWAY_SECRETS_FILE = "gateway-secrets.json"
"""The state folder's public-token key and edge secret (mode 0600; ADR 0018): every gateway
replica gets the same key, and players' tokens survive a restart on the same folder."""


def gateway_secrets(state_dir: Path) -> dict[str, str]:
    """TRIX_GATEWAY_TOKEN_KEY and TRIX_GATEWAY_EDGE_SECRET: from the environment when set, else
    the state folder's (generated once)."""
    path = state_dir / GATEWAY_SECRETS_FILE
    known: dict[str, str] = {}
    if path.exists():
        known = {k: str(v) for k, v in json.loads(path.read_text()).items() if v}
    stored = {var: known.get(var) or secrets.token_hex(32) for var in (GATEWAY_KEY_ENV, EDGE_SECRET_ENV)}
    if stored != known or path.stat().st_mode & 0o077:
        write_private(path, json.dumps(stored, indent=2) + "\n")
    return {var: os.environ.get(var, "") or value for var, value in stored.items()}


SIGNING_KEYS_FILE = "signing-keys.json"
"""The state folder's Ed25519 private keys, one per signer of service tokens (each service
that signs, and the operators' tools: `trix.declarations.signers`; mode 0600, ADR 0028)."""


def signing_keys(state_dir: Path, signers: Sequence[str]) -> dict[str, str]:
    """Each signer's private key (64 hex digits), generated once per state folder and kept."""
    path = state_dir / SIGNING_KEYS_FILE
    known: dict[str, str] = {}
    if path.exists():
        known = {k: str(v) for k, v in json.loads(path.read_text()).items() if v}
    stored = {**known, **{s: known.get(s) or new_signing_key() for s in signers}}
    if stored != known or path.stat().st_mode & 0o077:
        write_private(path, json.dumps(stored, indent=2) + "\n")
    return {s: stored[s] for s in signers}


def nats_conf_paths(state_dir: Path) -> list[Path]:
    """The config of each NATS node `trix up` runs on `state_dir`: `nats.conf` for the single
    node, `nats-1.conf`, `nats-2.conf`, ... for a cluster."""
    single = state_dir / "nats.conf"
    if single.exists():
        return [single]
    return sorted(state_dir.glob("nats-[0-9]*.conf"), key=lambda p: int(p.stem.split("-")[1]))


def nats_url_of(state_dir: Path, user: str) -> str:
    """The URL, with `user`'s password, of the NATS server(s) `trix up` runs on `state_dir`
    (a cluster: every node's URL, comma-separated, as TRIX_NATS_URL takes them)."""
    password = nats_passwords(state_dir)[user]
    urls = []
    for path in nats_conf_paths(state_dir):
        conf = path.read_text()
        listen = next(line.split(":", 1)[1].strip() for line in conf.splitlines() if line.startswith("listen:"))
        urls.append(permissions.user_url(f"nats://{listen}", user, password))
    return ",".join(urls)
