"""The embedded platform: `trix up`'s supervisor used as a library by `trix play` without
`--server`, `trix demo`, the load tester and the tests.

Owns the library's settings: NATS and every service on loopback with shared internal
secrets, quiet logs, no per-address sign-in bounds (every local player comes from
127.0.0.1), quick bot fill, an edge whose port falls back to a free one; the gateway's
target and the edge's URL once started. Use it as `with EmbeddedPlatform(...) as platform:`
(or `async with`), or call `start` and `stop`.
"""

from __future__ import annotations

import os
import secrets
import tempfile
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from trix.natsio.serverconf import LocalNode
from trix.startstop import StartStop
from trix.supervisor import Supervisor


class EmbeddedPlatform(StartStop):
    """`trix up` as a library: start NATS, the provisioner and the five services, stop them all."""

    def __init__(
        self,
        state_dir: Path,
        *,
        fresh: bool = False,
        env: dict[str, str] | None = None,
        edge: bool = False,
        edge_port: int = 0,
        web_dir: Path | None = None,
        edge_stream_idle_s: float = 600.0,
        nats_cluster: int = 1,
        replicas: Mapping[str, int] | None = None,
        nats_sync_always: bool = True,
        nats_hosts: Sequence[str] = (),
        nats_launcher: Callable[[LocalNode, list[str]], list[str]] | None = None,
        tls: bool = False,
    ) -> None:
        self.env = {
            "TRIX_GATEWAY_TOKEN_KEY": secrets.token_hex(32),
            # Every player of a local platform (bots, the load test's thousands) signs in from
            # 127.0.0.1: the per-address bounds of sign-ins and new accounts would refuse them.
            "TRIX_GATEWAY_SIGNIN_BURST": "1000000",
            "TRIX_GATEWAY_NEW_ACCOUNTS_BURST": "1000000",
            "TRIX_MATCHMAKING_BOT_FILL_S": "0",
            "TRIX_DRAIN_DELAY_S": "0",
            "TRIX_METRICS_PORT": "0",  # the process binds a free port itself: no race with other programs
            **(env or {}),
        }
        """What every service is given on top of `trix up`'s environment."""
        self.supervisor = Supervisor(
            state_dir=state_dir.resolve(),
            fresh=fresh,
            replicas=replicas,
            grace_s=5.0,
            ready_timeout_s=90.0,
            # The services' log files under <state>/logs: quiet by default, TRIX_LOG_LEVEL to debug.
            log_level=os.environ.get("TRIX_LOG_LEVEL", "warning"),
            edge=edge,
            edge_port=edge_port,  # the first try (0: a free one); a taken one falls back to free ports
            edge_port_fallback=True,
            web_dir=web_dir,
            edge_stream_idle_s=edge_stream_idle_s,
            nats_cluster=nats_cluster,
            nats_sync_always=nats_sync_always,
            nats_hosts=nats_hosts,
            nats_launcher=nats_launcher,
            service_env=self.env,
            give_up_after=3,  # e.g. its port was taken meanwhile: restarted, but not forever
            announce=False,
            tls=tls,
        )
        self.gateway_target = ""
        self.edge_url = ""
        """http://127.0.0.1:<port> of the Envoy edge (gRPC-Web, HTTP/JSON, the browser client at /)
        when started with edge=True; https://localhost:<port> with tls=True."""

    def start(self, timeout_s: float = 90.0) -> str:
        """Start everything; the gateway's target once every service is SERVING."""
        sup = self.supervisor
        sup.start(timeout_s)
        gateway = next(c for c in sup.services if c.name.startswith("gateway"))
        self.gateway_target = f"127.0.0.1:{gateway.grpc_port}"  # with tls, its certificate names 127.0.0.1
        if sup.edge:
            self.edge_url = sup.web_url.rstrip("/")
        return self.gateway_target

    @property
    def ca_file(self) -> str | None:
        """The CA a client verifies the gateway and the edge with (tls=True); None: plain text."""
        pki = self.supervisor.pki
        return str(pki.ca_cert) if pki is not None else None

    def stop(self) -> None:
        self.supervisor.stop()


def temp_state_dir(prefix: str) -> Path:
    return Path(tempfile.mkdtemp(prefix=prefix))
