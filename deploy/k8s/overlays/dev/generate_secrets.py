#!/usr/bin/env python3
"""Write the dev overlay's secrets, fresh random values, into secrets/ (issue 18: no secret
is committed). kustomize's secretGenerator reads them (kustomization.yaml); run this once
before `kubectl apply -k deploy/k8s/overlays/dev` (`make k8s-dev-secrets`). Files that exist
are kept, so a second run does not rotate anything; `--force` writes new ones. Files are
mode 0600. Standard library only: it runs wherever kubectl does.
"""

from __future__ import annotations

import argparse
import os
import secrets
from pathlib import Path

HERE = Path(__file__).resolve().parent / "secrets"
FILES: dict[str, tuple[str, ...]] = {
    # The Secret trix-secrets: internal token keys per role (ADR 0015), the gateway's public
    # token key and the edge's secret (ADR 0018), the scoring admin token.
    "trix-secrets.env": (
        "player-token-key",
        "service-token-key",
        "gateway-token-key",
        "edge-secret",
        "scoring-admin-token",
    ),
    # The Secret trix-nats-users: one password per NATS user (trix.natsio.permissions.USERS);
    # `make k8s-check` fails if a service of trix.declarations.SERVICES is missing here.
    "nats-users.env": ("gateway", "matchmaking", "table", "timers", "scoring", "provisioner"),
}


def write(directory: Path = HERE, *, force: bool = False) -> list[Path]:
    """Write each missing (or, with `force`, every) file; the paths written."""
    directory.mkdir(parents=True, exist_ok=True)
    written = []
    for name, keys in FILES.items():
        path = directory / name
        if path.exists() and not force:
            continue
        # URL-safe: the NATS passwords are embedded in TRIX_NATS_URL.
        text = "".join(f"{key}={secrets.token_urlsafe(36)}\n" for key in keys)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as f:
            f.write(text)
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
