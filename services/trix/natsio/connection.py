"""The NATS connection of a service: reconnects forever and re-provisions (ADR 0014, ADR 0021).

Owns `NatsConnection`: retries the first connection, reconnects forever afterwards,
provisions (or, as a service's own NATS user, only waits for) every declared stream and
bucket at start and after each reconnect, receives replies under its own inbox prefix, and
drains on shutdown. On a cluster it pings its server every half second and leaves one that
missed three pings for another node, so a lost node holds a service for seconds, not minutes.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable, Sequence

import structlog
from nats.aio.client import DEFAULT_INBOX_PREFIX, Client
from nats.js.client import JetStreamContext

from trix import tls
from trix.natsio import permissions
from trix.natsio.coalesce import new_client
from trix.natsio.names import kv_stream
from trix.natsio.provisioning import KV_BUCKETS, STREAMS, KvSpec, StreamSpec, provision, wait_provisioned
from trix.runtime.tasks import start_kept

log = structlog.get_logger("trix.natsio")

PING_INTERVAL_S = 0.5
"""Below a second: services whose node was stopped waited ~4 s to leave it, longer
than the other nodes took to answer; the 1.5-2 s without a pong still far above a loop's lag."""
MAX_OUTSTANDING_PINGS = 3
RECHECK_ATTEMPT_S = 0.5
"""After a reconnect: how long one request of the provisioning check waits."""
RECHECK_PAUSE_S = 0.25
"""After a reconnect: the longest pause between two provisioning checks."""


class NatsConnection:
    """One service's NATS client and JetStream context."""

    def __init__(
        self,
        servers: str | Sequence[str],
        name: str,
        *,
        streams: Sequence[StreamSpec] = STREAMS,
        buckets: Sequence[KvSpec] = KV_BUCKETS,
        reconnect_wait_s: float = 0.5,
        request_timeout_s: float = 5.0,
        stream_replicas: int = 1,
        inbox_prefix: str | None = None,
        read_window_s: float = 0.0,
        ca_file: str = "",
    ) -> None:
        self.servers = [s.strip() for s in servers.split(",")] if isinstance(servers, str) else list(servers)
        self.name = name
        self.user = permissions.user_of(self.servers[0]) if self.servers else None
        self.provisions = self.user not in permissions.SERVICE_USERS
        """False for a service's own user: it waits for the provisioner instead (ADR 0014)."""
        if not self.provisions:
            assert self.user is not None
            visible = set(permissions.streams_of(self.user))
            streams = [s for s in streams if s.name in visible]
            buckets = [b for b in buckets if kv_stream(b.bucket) in visible]
        if inbox_prefix is None and self.user in permissions.USERS:
            inbox_prefix = permissions.inbox_prefix(self.user)
        self.streams = tuple(streams)
        self.buckets = tuple(buckets)
        self.reconnect_wait_s = reconnect_wait_s
        self.request_timeout_s = request_timeout_s
        self.stream_replicas = stream_replicas
        self.inbox_prefix = inbox_prefix
        """Prefix of reply inboxes (default `_INBOX`); a user allowed to subscribe only under its
        own prefix (the gateway: `permissions.GATEWAY_INBOX_PREFIX`) must pass it."""
        self.read_window_s = read_window_s
        """Read the socket at most once per this many seconds (`trix.natsio.coalesce`, ADR 0019);
        0 reads as soon as bytes arrive."""
        self.tls = tls.client_context(ca_file)
        """TLS verifying the servers against `ca_file`; None: plain text."""
        self.nc: Client | None = None
        self.js: JetStreamContext | None = None
        self.provisioned = asyncio.Event()
        self.reconnects = 0
        self.reconnect_hooks: list[Callable[[], Awaitable[object]]] = []
        """Run after each reconnect, once provisioned (a reader catching up on what it missed)."""
        self.core_reconnect_hooks: list[Callable[[], Awaitable[object]]] = []
        """Run right after each reconnect, before the provisioning check (which waits out any
        stream still electing a leader: seconds on a cluster); core NATS only."""
        self._tasks: set[asyncio.Task[None]] = set()

    @property
    def client(self) -> Client:
        if self.nc is None:
            raise RuntimeError("NATS is not connected yet")
        return self.nc

    @property
    def jetstream(self) -> JetStreamContext:
        if self.js is None:
            raise RuntimeError("NATS is not connected yet")
        return self.js

    async def connect(self, *, attempt_timeout_s: float = 2.0, give_up_after_s: float | None = None) -> None:
        """Connect (retrying until `give_up_after_s`, None = forever) and provision."""
        loop = asyncio.get_running_loop()
        deadline = None if give_up_after_s is None else loop.time() + give_up_after_s
        delay = 0.2
        while True:
            try:
                nc = new_client(self.read_window_s)
                await nc.connect(
                    servers=self.servers,
                    name=self.name,
                    max_reconnect_attempts=-1,
                    reconnect_time_wait=self.reconnect_wait_s,  # type: ignore[arg-type,unused-ignore]
                    connect_timeout=max(1, int(attempt_timeout_s)),
                    # A server that stops answering (a SIGSTOPped or cut-off node of a
                    # cluster) is left for another within ~PING_INTERVAL_S * (MAX_PINGS + 1),
                    # not the client's default of minutes.
                    ping_interval=PING_INTERVAL_S,  # type: ignore[arg-type,unused-ignore]
                    max_outstanding_pings=MAX_OUTSTANDING_PINGS,
                    allow_reconnect=True,
                    disconnected_cb=self._on_disconnected,
                    reconnected_cb=self._on_reconnected,
                    error_cb=self._on_error,
                    closed_cb=self._on_closed,
                    inbox_prefix=self.inbox_prefix.encode() if self.inbox_prefix else DEFAULT_INBOX_PREFIX,
                    tls=self.tls,
                )
                self.nc = nc
                break
            except Exception as exc:
                if deadline is not None and loop.time() >= deadline:
                    raise
                log.warning("nats connect failed, retrying", servers=self.servers, error=repr(exc), retry_in_s=delay)
                await asyncio.sleep(delay)
                delay = min(delay * 2, 5.0)
        self.js = self.nc.jetstream(timeout=self.request_timeout_s)
        await self._provision()
        log.info("nats connected", servers=[redacted(s) for s in self.servers])

    async def _provision(self, *, again: bool = False) -> None:
        """Provision (or wait for the provisioner). `again`, a service's own user after a
        reconnect: each check waits `RECHECK_ATTEMPT_S` and is asked again after at most
        `RECHECK_PAUSE_S`, so the reconnect hooks run right after the streams elected their
        leaders (a stream electing answers nothing: with 5 s requests and pauses doubling to 5 s
        the timers caught up on what they missed seconds after NATS was back)."""
        quick = again and not self.provisions and self.nc is not None
        js = self.client.jetstream(timeout=RECHECK_ATTEMPT_S) if quick else self.jetstream
        delay, most = (0.05, RECHECK_PAUSE_S) if quick else (0.2, 5.0)
        failures = 0
        while True:
            try:
                if self.provisions:
                    report = await provision(js, self.streams, self.buckets, replicas=self.stream_replicas)
                else:
                    report = await wait_provisioned(js, self.streams, self.buckets)
                break
            except Exception as exc:  # noqa: BLE001 - JetStream may still be starting
                failures += 1
                if not quick or failures == 1:  # quick checks: the first failure said once
                    what = "jetstream provisioning failed" if self.provisions else "waiting for the provisioner"
                    log.warning(f"{what}, retrying", error=repr(exc), retry_in_s=delay)
                await asyncio.sleep(delay)
                delay = min(delay * 2, most)
        self.provisioned.set()
        log.info("jetstream provisioned", created=report.created, updated=report.updated)

    async def _on_disconnected(self) -> None:
        self.provisioned.clear()
        log.warning("nats disconnected")

    async def _on_reconnected(self) -> None:
        self.reconnects += 1
        log.info("nats reconnected", reconnects=self.reconnects)
        start_kept(self._tasks, self._after_reconnect())

    async def _after_reconnect(self) -> None:
        for hook in list(self.core_reconnect_hooks):
            try:
                await hook()
            except Exception as exc:  # noqa: BLE001 - a hook's failure must not stop the others
                log.warning("reconnect hook failed", error=type(exc).__name__)
        await self._provision(again=True)
        for hook in list(self.reconnect_hooks):
            try:
                await hook()
            except Exception as exc:  # noqa: BLE001 - a hook's failure must not stop the others
                log.warning("reconnect hook failed", error=type(exc).__name__)

    async def _on_error(self, exc: Exception) -> None:
        log.warning("nats error", error=repr(exc))

    async def _on_closed(self) -> None:
        log.info("nats connection closed")

    async def drain(self, timeout_s: float = 5.0) -> None:
        """Drain subscriptions and pending publishes, then close."""
        for task in list(self._tasks):
            task.cancel()
        nc = self.nc
        if nc is None or nc.is_closed:
            return
        try:
            await asyncio.wait_for(nc.drain(), timeout_s)
        except Exception as exc:  # noqa: BLE001 - shutting down anyway
            log.warning("nats drain failed, closing", error=repr(exc))
            with contextlib.suppress(Exception):  # the socket may be lost mid-close (reconnecting)
                await nc.close()


def redacted(url: str) -> str:
    """A server URL without its credentials (`nats://user:password@host` -> `nats://host`):
    what logs may say of it."""
    scheme, sep, rest = url.partition("://")
    if not sep:
        scheme, rest = "", url
    host = rest.rsplit("@", 1)[-1]
    return f"{scheme}{sep}{host}"
