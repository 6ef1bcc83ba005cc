#!/usr/bin/env python3
"""Write the dev overlay's secrets, fresh random values, into secrets/ (issue 18: no secret
is committed). kustomize's secretGenerator reads them (kustomization.yaml); run this once
before `kubectl apply -k deploy/k8s/overlays/dev` (`make k8s-dev-secrets`). Files that exist
are kept, so a second run does not rotate anything; `--force` writes new ones. Files are
mode 0600. The service-token signing keys (Ed25519, ADR 0028) and the TLS files (issue
41: a dev CA, the edge's certificate and the internal one)
are made with the platform's `trix.tls` (Python's `cryptography`): run it with the project's
Python (`make k8s-dev-secrets`).
"""

from __future__ import annotations

import argparse
import os
import secrets
from pathlib import Path

HERE = Path(__file__).resolve().parent / "secrets"
FILES: dict[str, tuple[str, ...]] = {
    # The Secret trix-secrets: the player-role token key (ADR 0015), the gateway's public
    # token key and the edge's secret (ADR 0018), the scoring admin token.
    "trix-secrets.env": (
        "player-token-key",
        "gateway-token-key",
        "edge-secret",
        "scoring-admin-token",
    ),
    # The Secret trix-nats-users: one password per NATS user (trix.natsio.permissions.USERS);
    # `make k8s-check` fails if a service of trix.declarations.SERVICES is missing here.
    "nats-users.env": ("gateway", "matchmaking", "table", "timers", "scoring", "competitions", "social", "provisioner"),
}


NAMESPACE = "trix"
EDGE_HOSTS = ("localhost", "envoy", f"envoy.{NAMESPACE}.svc")
"""The dev edge's names (port-forwarded to localhost, or the Service inside the cluster)."""
NATS_NODES = 3
"""The StatefulSet's replicas: each node's name is in the certificate as well as the wildcard,
since OpenSSL (Python's clients) matches no wildcard over a single-label parent such as
`*.nats-headless` (nats-server's Go routes do)."""
NATS_HOSTS = (
    "nats",
    "nats-headless",
    *(f"nats-{i}.nats-headless" for i in range(NATS_NODES)),
    "*.nats-headless",
    f"*.nats-headless.{NAMESPACE}.svc",
)


def internal_hosts() -> tuple[str, ...]:
    """Every name a service or NATS node is reached by inside the cluster (config.env's
    dns:///<service>:50051 targets, the NATS URLs' nats-<i>.nats-headless, the routes)."""
    from trix.declarations import SERVICES

    return (*(s.name for s in SERVICES), *NATS_HOSTS)


def write_tls(directory: Path, *, force: bool = False) -> list[Path]:
    """ca.crt, edge-tls.crt/.key and internal-tls.crt/.key (a new CA with `force` or when any is missing)."""
    from trix import tls

    names = ("ca.crt", "edge-tls.crt", "edge-tls.key", "internal-tls.crt", "internal-tls.key")
    if not force and all((directory / n).exists() for n in names):
        return []
    ca = tls.make_ca(directory / "ca", common_name="trix dev CA")
    out: list[Path] = []
    for name, hosts in (("edge-tls", EDGE_HOSTS), ("internal-tls", internal_hosts())):
        issued = tls.issue(ca, hosts, folder=directory / name)
        out += [issued.cert.replace(directory / f"{name}.crt"), issued.key.replace(directory / f"{name}.key")]
        issued.folder.rmdir()
    out.append(ca.ca_cert.replace(directory / "ca.crt"))
    # The CA's key stays beside the files (git-ignored) so `--force` is the only rotation.
    ca.ca_key.replace(directory / "ca.key")
    ca.folder.rmdir()
    return out


SIGNING_PREFIX = "trix-signing-"
"""The Secret `trix-signing-<service>` (key `private-key`) holds the private key of one service
that signs service tokens, read by that service alone (ADR 0028)."""
PUBLIC_KEYS = "trix-public-keys"
"""The Secret of every signer's public key (key: the signer), each verifier reading the ones its
declaration accepts (trix.declarations.service_token_callers)."""
ADMIN_KEY_FILE = "admin-signing-key"
"""The operators' private key (their tools sign with it): beside the files, in no Secret."""


def write_signing_keys(directory: Path, *, force: bool = False) -> list[Path]:
    """One private key per signer (trix.declarations.signers): each service's in its own Secret's
    file, the operators' in ADMIN_KEY_FILE, every public key in PUBLIC_KEYS (all anew with
    `force` or when any is missing, so that they always agree)."""
    from trix.declarations import signers
    from trix.runtime.identity import ADMIN, new_signing_key, public_key_of

    private = {s: new_signing_key() for s in signers()}
    paths = {s: directory / (ADMIN_KEY_FILE if s == ADMIN else f"{SIGNING_PREFIX}{s}.env") for s in private}
    public_path = directory / f"{PUBLIC_KEYS}.env"
    if not force and public_path.exists() and all(p.exists() for p in paths.values()):
        return []
    for signer, path in paths.items():
        _write_private(path, private[signer] + "\n" if signer == ADMIN else f"private-key={private[signer]}\n")
    _write_private(public_path, "".join(f"{s}={public_key_of(k)}\n" for s, k in private.items()))
    return [*paths.values(), public_path]


def _write_private(path: Path, text: str) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write(text)


def write(directory: Path = HERE, *, force: bool = False) -> list[Path]:
    """Write each missing (or, with `force`, every) file; the paths written."""
    directory.mkdir(parents=True, exist_ok=True)
    written = write_tls(directory, force=force)
    written += write_signing_keys(directory, force=force)
    for name, keys in FILES.items():
        path = directory / name
        kept = "" if force or not path.exists() else path.read_text()
        have = {line.split("=", 1)[0] for line in kept.splitlines() if "=" in line}
        missing = [key for key in keys if key not in have]
        if not missing:
            continue
        # A file kept from before a key was declared (a new service's NATS user) gets the
        # missing keys added; the existing ones are not rotated.
        # URL-safe: the NATS passwords are embedded in TRIX_NATS_URL. A leading letter: nats.conf
        # takes them as `$NATS_PASSWORD_<USER>`, and nats-server parses a value that begins with
        # a digit or `-` as a number or date ("All ISO8601 dates must be in full Zulu form").
        _write_private(path, kept + "".join(f"{key}=k{secrets.token_urlsafe(36)}\n" for key in missing))
        written.append(path)
    return written


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--force", action="store_true", help="replace existing files (rotates every dev secret)")
    parser.add_argument("--dir", type=Path, default=HERE, help="where to write (default: secrets/ beside this file)")
    args = parser.parse_args()
    for path in write(args.dir, force=args.force):
        print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
