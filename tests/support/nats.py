"""The one real nats-server of the tests: JetStream on a free loopback port, its store and
log in the test's directory, fsync on every write (`sync_interval: always`, as deployed).

`NatsServer` has no users (`url`); `AuthNats` has one user per declared service with the
permissions of `trix.natsio.permissions` (`url(user)`). Both can be stopped and started
again on the same port and store (`stop`, `start`), so a test can restart NATS.
"""

from __future__ import annotations

import secrets
import subprocess
import tempfile
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

from support.ports import wait_port
from support.processes import stop_process
from trix.declarations import SERVICES, ServiceDeclaration
from trix.natsio.permissions import PROVISIONER, USERS, authorization_block, user_url
from trix.natsio.provision import provision_now
from trix.processes import free_port, nats_server_binary

SERVICE_USERS = USERS
"""The services' users and the provisioner, which alone declares the streams (ADR 0014)."""


class _NatsProcess:
    """The process: its config file, start (waiting for the port), stop (SIGTERM, then kill)."""

    def __init__(self, workdir: Path, extra_conf: str = "") -> None:
        self.port = free_port()
        self.store = workdir / "jetstream"
        self.conf = workdir / "nats.conf"
        self.log = workdir / "nats.log"
        self.conf.write_text(
            f"listen: 127.0.0.1:{self.port}\n"
            f'jetstream {{\n  store_dir: "{self.store}"\n  sync_interval: always\n}}\n' + extra_conf
        )
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def server_url(self) -> str:
        return f"nats://127.0.0.1:{self.port}"

    def start(self) -> None:
        with open(self.log, "ab") as log:
            self.proc = subprocess.Popen(
                [nats_server_binary(), "-c", str(self.conf)], stdout=log, stderr=subprocess.STDOUT
            )
        wait_port(self.port)

    def stop(self) -> None:
        stop_process(self.proc, grace_s=10)
        self.proc = None


class NatsServer(_NatsProcess):
    """A JetStream nats-server without users."""

    def __init__(self, workdir: Path) -> None:
        super().__init__(workdir)

    @property
    def url(self) -> str:
        return self.server_url


class AuthNats(_NatsProcess):
    """A JetStream nats-server with one user per service (trix.natsio.permissions)."""

    def __init__(
        self, workdir: Path, users: tuple[str, ...] = SERVICE_USERS, services: Sequence[ServiceDeclaration] = SERVICES
    ) -> None:
        self.passwords = {u: secrets.token_hex(12) for u in users}
        super().__init__(workdir, authorization_block(self.passwords, services))

    def url(self, user: str) -> str:
        return user_url(self.server_url, user, self.passwords[user])

    def start(self) -> None:
        super().start()
        if PROVISIONER in self.passwords:
            # The services' users may not create streams: the provisioner declares them (ADR 0014).
            provision_now(self.url(PROVISIONER))


@contextmanager
def bare_server() -> Iterator[NatsServer]:
    """A `NatsServer` in a directory of its own, started, stopped and removed after (benchmarks)."""
    with tempfile.TemporaryDirectory() as tmp:
        server = NatsServer(Path(tmp))
        server.start()
        try:
            yield server
        finally:
            server.stop()
