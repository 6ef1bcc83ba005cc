"""The lifecycle of a service process: start, serve, shut down gracefully (ADR 0020).

Owns `Runtime` (grpc.aio on loopback with the runtime interceptor, health, optional
reflection, metrics, the NATS connection) and `run_main` (every service's `__main__`: bad
config exits 2 naming the variable; serve until SIGTERM/SIGINT; exit 0). A service is one
`Lifespan`, entered once NATS is ready; gRPC is bound only after it yielded, so no call
reaches a service that does not exist yet. On shutdown the lifespan is left first, then
NOT_SERVING, a drain delay, streams end UNAVAILABLE, in-flight calls get a grace, NATS drains.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import signal
import sys
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Protocol, TypeVar

import grpc
import grpc.experimental.aio
import structlog
from grpc_health.v1 import health_pb2, health_pb2_grpc
from grpc_health.v1._async import HealthServicer
from grpc_reflection.v1alpha import reflection

from trix import tls
from trix.natsio.connection import NatsConnection
from trix.natsio.provisioning import KV_BUCKETS, STREAMS, KvSpec, StreamSpec
from trix.natsio.publish import transient
from trix.runtime import eventloop
from trix.runtime.config import EXIT_CONFIG_ERROR, ConfigError, RuntimeConfig
from trix.runtime.interceptors import RuntimeInterceptor
from trix.runtime.logs import configure_logging
from trix.runtime.metrics import MetricsEndpoint, RpcMetrics

log = structlog.get_logger("trix.runtime")

HEALTH_SERVICE = "grpc.health.v1.Health"
LIFESPAN_STOP_S = 20.0
"""Leaving a service's lifespan (its consumers, subscriptions, a table replica's handover of
its shards) may take this plus the shutdown grace; past it the pending tasks are logged
(`dump_tasks`) and the shutdown goes on, instead of hanging until the process is killed."""
STOP_SLACK_S = 5.0
"""A gRPC server's stop may take its grace and this much more; past it the shutdown goes on
(NATS drains, the process exits) instead of waiting forever on a stop that never completes."""


@dataclass(frozen=True)
class ServiceBinding:
    """One gRPC service a runtime serves."""

    full_name: str
    """Fully qualified proto name, e.g. `trix.v1.TableService` (health reports it)."""
    register: Callable[[grpc.aio.Server], None]
    """Adds the servicer to a server (the generated `add_XServicer_to_server`)."""
    unbuilt_issue: int | None = None
    """The issue that builds this service's not-yet-implemented RPCs (named in UNIMPLEMENTED)."""


class Stoppable(Protocol):
    """A service's running NATS side: its subscriptions, consumers and background tasks."""

    async def stop(self) -> None: ...


@dataclass(frozen=True)
class Serving:
    """What a service's lifespan yields: the gRPC services to serve, bound to the service it
    built with its adapters, the service itself, and its running NATS side (stopped when
    the lifespan is left; None when nothing of its own runs)."""

    bindings: Sequence[ServiceBinding]
    service: object
    running: Stoppable | None = None


Lifespan = Callable[[NatsConnection], contextlib.AbstractAsyncContextManager[Serving]]
"""A service: entered once NATS is up, before gRPC serves; left before NATS drains (module docstring)."""


def lifespan(start: Callable[[NatsConnection], Awaitable[Serving]]) -> Lifespan:
    """The `Lifespan` of a service that `start` builds (adapters, then the service, then its
    subscriptions): left by stopping what runs (`Serving.running`)."""

    @contextlib.asynccontextmanager
    async def span(nats: NatsConnection) -> AsyncIterator[Serving]:
        serving = await start(nats)
        try:
            yield serving
        finally:
            if serving.running is not None:
                await serving.running.stop()

    return span


class Runtime:
    """One service process's gRPC server, health, metrics and NATS connection."""

    def __init__(
        self,
        config: RuntimeConfig,
        services: Sequence[ServiceBinding] = (),
        *,
        lifespan: Lifespan | None = None,
        nats_declared: tuple[Sequence[StreamSpec], Sequence[KvSpec]] | None = None,
        nats_inbox_prefix: str | None = None,
        grpc_options: Sequence[tuple[str, int]] = (),
    ) -> None:
        self.config = config
        self.nats_declared = nats_declared
        """The streams and buckets this service provisions (default: all; a least-privilege
        NATS user may not touch the table service's private ones)."""
        self.nats_inbox_prefix = nats_inbox_prefix
        """Reply-inbox prefix of a NATS user confined to its own inboxes (the gateway)."""
        self.grpc_options = tuple(grpc_options)
        """Extra grpc.aio server options, e.g. message size limits (the gateway)."""
        self.services = tuple(services)
        """The gRPC services served: those given here (a service without NATS), then the
        lifespan's (`Serving.bindings`) once it yielded."""
        self.lifespan = lifespan
        self.service: object | None = None
        """The service the lifespan built (`Serving.service`); kept after a stop (tests read it)."""
        self.running: object | None = None
        """The service's running NATS side (`Serving.running`), while it runs."""
        self._lifespan_exit = contextlib.AsyncExitStack()
        self.metrics = RpcMetrics()
        self.health = HealthServicer()
        self.nats: NatsConnection | None = None
        self.grpc_port = 0
        self.metrics_port = -1
        self._stopping = asyncio.Event()
        self._server: grpc.aio.Server | None = None
        self._health_server: grpc.aio.Server | None = None
        self.health_port = -1
        self._metrics_endpoint: MetricsEndpoint | None = None
        self._stopped = False

    @property
    def address(self) -> str:
        return f"{self.config.grpc_host}:{self.grpc_port}"

    async def _set_all(self, status: health_pb2.HealthCheckResponse.ServingStatus.ValueType) -> None:
        for name in ("", *(s.full_name for s in self.services)):
            await self.health.set(name, status)

    async def start(self) -> None:
        """Start metrics and NATS, enter the lifespan (the service is built), then serve gRPC
        (NOT_SERVING while it registers) and report SERVING."""
        hold_grpc_aio()
        cfg = self.config
        if cfg.metrics_port >= 0:
            self._metrics_endpoint = MetricsEndpoint(self.metrics.registry, cfg.grpc_host, cfg.metrics_port)
            self.metrics_port = self._metrics_endpoint.port
            log.info("metrics listening", metrics_port=self.metrics_port, path="/metrics")
        if cfg.nats_enabled:
            streams, buckets = self.nats_declared or (STREAMS, KV_BUCKETS)
            self.nats = NatsConnection(
                cfg.nats_url,
                name=cfg.instance,
                stream_replicas=cfg.nats_stream_replicas,
                streams=streams,
                buckets=buckets,
                inbox_prefix=self.nats_inbox_prefix,
                read_window_s=cfg.nats_read_window_s,
                ca_file=cfg.tls_ca_file,
            )
            await self.nats.connect()
            if self.lifespan is not None:
                serving = await self._lifespan_exit.enter_async_context(self.lifespan(self.nats))
                self.service, self.running = serving.service, serving.running
                self.services = (*self.services, *serving.bindings)
        elif self.lifespan is not None:
            raise RuntimeError(f"{cfg.service} needs NATS (TRIX_NATS_URL is none)")
        interceptor = RuntimeInterceptor(
            self.metrics,
            {s.full_name: s.unbuilt_issue for s in self.services if s.unbuilt_issue is not None},
            self._stopping,
        )
        server = grpc.aio.server(interceptors=[interceptor], options=[("grpc.so_reuseport", 0), *self.grpc_options])
        for service in self.services:
            service.register(server)
        health_pb2_grpc.add_HealthServicer_to_server(self.health, server)
        await self._set_all(health_pb2.HealthCheckResponse.NOT_SERVING)
        if cfg.reflection:
            names = [s.full_name for s in self.services]
            reflection.enable_server_reflection([*names, HEALTH_SERVICE, reflection.SERVICE_NAME], server)
        bind = f"{cfg.grpc_host}:{cfg.grpc_port}"
        if cfg.tls_cert_file:  # TLS only: a plain-text client is refused
            self.grpc_port = server.add_secure_port(bind, tls.server_credentials(cfg.tls_cert_file, cfg.tls_key_file))
        else:
            self.grpc_port = server.add_insecure_port(bind)
        if self.grpc_port == 0:
            raise RuntimeError(f"cannot bind gRPC to {cfg.grpc_host}:{cfg.grpc_port}")
        await server.start()
        self._server = server
        if cfg.grpc_health_port >= 0:
            await self._start_health_server(cfg)
        log.info("grpc listening", grpc_port=self.grpc_port, address=self.address, reflection=cfg.reflection)
        await self._set_all(health_pb2.HealthCheckResponse.SERVING)
        log.info("serving", grpc_port=self.grpc_port, metrics_port=self.metrics_port)

    async def _start_health_server(self, cfg: RuntimeConfig) -> None:
        """The health service alone in plain text (TRIX_GRPC_HEALTH_PORT): Kubernetes' gRPC
        probes cannot speak TLS; nothing else is served there."""
        server = grpc.aio.server(options=[("grpc.so_reuseport", 0)])
        health_pb2_grpc.add_HealthServicer_to_server(self.health, server)
        self.health_port = server.add_insecure_port(f"{cfg.grpc_host}:{cfg.grpc_health_port}")
        if self.health_port == 0:
            raise RuntimeError(f"cannot bind the health port {cfg.grpc_host}:{cfg.grpc_health_port}")
        await server.start()
        self._health_server = server

    async def stop(self) -> None:
        """Graceful shutdown; safe to call more than once and after a failed start."""
        if self._stopped:
            return
        self._stopped = True
        cfg = self.config
        log.info("shutting down", grace_s=cfg.shutdown_grace_s)
        try:
            await asyncio.wait_for(self._lifespan_exit.aclose(), LIFESPAN_STOP_S + cfg.shutdown_grace_s)
        except TimeoutError:  # what it waits on goes to the log; the rest of the shutdown still runs
            dump_tasks()
            log.error("stopping the service's NATS side did not finish; shutting down anyway")
        except Exception:  # the rest of the shutdown still runs
            log.exception("stopping the service's NATS side failed")
        self.running = None
        await self.health.enter_graceful_shutdown()
        if self._server is not None:
            await asyncio.sleep(cfg.drain_delay_s)
            self._stopping.set()
            try:
                await asyncio.wait_for(self._server.stop(cfg.shutdown_grace_s), cfg.shutdown_grace_s + STOP_SLACK_S)
            except TimeoutError:
                log.warning("grpc server stop did not complete; shutting down anyway", waited_s=STOP_SLACK_S)
        if self._health_server is not None:
            await self._health_server.stop(0)
        if self.nats is not None:
            await self.nats.drain(timeout_s=max(1.0, cfg.shutdown_grace_s))
        if self._metrics_endpoint is not None:
            self._metrics_endpoint.close()
        log.info("stopped")


def _await_chain(coro: object) -> list[str]:
    """Where a coroutine waits: its frame, then each awaited coroutine/generator's frame."""
    lines: list[str] = []
    seen = 0
    while coro is not None and seen < 30:
        seen += 1
        frame = getattr(coro, "cr_frame", None) or getattr(coro, "gi_frame", None) or getattr(coro, "ag_frame", None)
        if frame is not None:
            lines.append(f"{frame.f_code.co_filename}:{frame.f_lineno} {frame.f_code.co_name}")
        else:
            lines.append(f"<{type(coro).__name__}>")
        coro = getattr(coro, "cr_await", None) or getattr(coro, "gi_yieldfrom", None) or getattr(coro, "ag_await", None)
    return lines


_GRPC_AIO_HELD = False


def hold_grpc_aio() -> None:
    """Keep grpc.aio's poller for the life of the process (call in a running loop; once is
    enough). grpc shuts its poller down whenever the last aio object goes and joins its thread,
    and that join can hang for ever when the loop stopped reading the poller's socket first
    (grpc/grpc#40989, #22365): a stopped service then never exited, and a test process hung
    between two tests. Held, there is no shutdown to race; the thread ends with the process."""
    global _GRPC_AIO_HELD
    if not _GRPC_AIO_HELD:
        grpc.experimental.aio.init_grpc_aio()
        _GRPC_AIO_HELD = True


def dump_tasks() -> None:
    """SIGUSR1: every pending asyncio task's await chain, as one JSON log record, for finding
    what a live process waits on (`kill -USR1 <pid>`). Names code locations only, never data."""
    tasks = {f"{task.get_name()}#{i}": _await_chain(task.get_coro()) for i, task in enumerate(asyncio.all_tasks())}
    log.warning("asyncio tasks", count=len(tasks), tasks=tasks)


START_AGAIN = -1
"""`serve`'s answer when the start failed on a NATS fault and no stop was asked meanwhile."""

START_AGAIN_FIRST_S = 0.5
START_AGAIN_MOST_S = 5.0


async def serve(runtime: Runtime, start_again_in_s: float | None = None, give_up_at: float = float("inf")) -> int:
    """Run until SIGTERM or SIGINT, then shut down; 0 on a clean stop, 1 if start failed.
    With `start_again_in_s`, a start that failed on a NATS fault (`transient`: a consumer or
    watcher not made, a bucket not opened while a stream elects its leader or a node is
    down) before `give_up_at` (`time.monotonic()`) is stopped, and after that pause
    `START_AGAIN` (`run_main` builds it again) unless a stop was asked meanwhile (0)."""
    loop = asyncio.get_running_loop()
    stop_requested = asyncio.Event()

    def on_signal(signame: str) -> None:
        log.info("signal received", signal=signame)
        stop_requested.set()

    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, on_signal, sig.name)
    loop.add_signal_handler(signal.SIGUSR1, dump_tasks)
    starting = asyncio.ensure_future(runtime.start())
    waiting = asyncio.ensure_future(stop_requested.wait())
    await asyncio.wait({starting, waiting}, return_when=asyncio.FIRST_COMPLETED)
    if not starting.done():
        starting.cancel()
        await asyncio.gather(starting, return_exceptions=True)
        await runtime.stop()
        return 0
    failure = starting.exception()
    if failure is not None:
        if start_again_in_s is None or not transient(failure) or time.monotonic() >= give_up_at:
            log.error("start failed", exc_info=failure)
            waiting.cancel()
            await runtime.stop()
            return 1
        log.warning("start failed on a nats fault, starting again", error=repr(failure), retry_in_s=start_again_in_s)
        await runtime.stop()
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(waiting, start_again_in_s)
        return 0 if stop_requested.is_set() else START_AGAIN
    await waiting
    await runtime.stop()
    return 0


class HasRuntimeConfig(Protocol):
    """A service's config: its own fields plus the shared `runtime` settings."""

    @property
    def runtime(self) -> RuntimeConfig: ...


C = TypeVar("C", bound=HasRuntimeConfig)


GC_THRESHOLDS = (5000, 10, 10)
"""Every service process's cyclic-garbage thresholds (Python's default: 700, 10, 10), set by
`run_main`. Measured on the gateway at 400 tables (ADR 0012): with the default a
run paid three full collections (up to 0.17 s of CPU each, 0.3-0.8 s of wall time on a
loaded box: a stall of every player of the replica), mostly while 1,600 players signed in,
and the steady play still a young one every 3 s; with 5,000 none was full and the steady
play collected nothing (its objects die young, by reference count). Every generation is
still collected, so cyclic garbage (a closed session's tasks and frames) is still freed.
ADR 0024 measured the oldest generation's threshold at 1 (a full collection per ~100,000
objects of net growth): a gateway filling with 4,000 players paid ten full collections of
0.1-0.34 s instead of one of 0.54 s, most of what they scanned dying soon after by
reference count; 10 it stays, and what that one collection leaves is frozen (GC_FREEZE_S)."""


GC_PAUSE_LOG_S = 0.05
"""A collection of the oldest generation that stops the process longer than this is logged
(`gc pause`, with its duration and the objects it scanned): every caller of the process
waited that long."""

GC_FREEZE_S = 0.03
"""A full collection longer than this moves what survived it to the permanent generation
(`gc.freeze`), so later full collections scan only what came after (ADR 0024): the gateway's
4,000 sessions are a million tracked objects (grpc.aio calls, tasks, coroutines, contexts)
that a full collection scanned for 0.5-0.9 s, a stall of every player of the replica, every
few minutes of steady play."""

GC_FREEZE_PROMOTED = True
"""What survives a collection of the middle generation (and so moves to the oldest) is frozen
at once (ADR 0024), not left for a full collection to scan: in a 1,000-table run the
gateway's ramp still left two long full collections, 1.0 s and, two minutes later, 0.68 s
scanning the 487,000 objects of the sessions opened after the first: a stall of every player.
What is frozen is either alive (a session's calls, tasks and coroutines) or freed by reference
counting; only cyclic garbage waits for the thaw."""

GC_THAW_GROWTH = 3.0
GC_THAW_MIN = 400_000
GC_THAW_EVERY_S = 600.0
"""The frozen objects are given back to the collector (`gc.unfreeze`, then one complete
collection) once they outnumber GC_THAW_GROWTH times the objects alive after the last
complete collection, and at least GC_THAW_MIN, at most once per GC_THAW_EVERY_S: an object
frozen alive that later became cyclic garbage (a closed session's tasks and frames) is freed
then. The long pause of a complete collection comes at most that often (logged as `gc
pause`); memory stays bounded by the growth and the garbage of that long."""


class _GcPolicy:
    """The oldest generation's collections (`gc.callbacks`): the long ones logged, what a long
    one left frozen, the frozen given back when they grew too many (see GC_FREEZE_S)."""

    def __init__(self) -> None:
        self.started = 0.0
        self.log = structlog.get_logger("trix.runtime.gc")
        self.live = 0
        """Objects alive after the last complete collection."""
        self.complete = True
        """Nothing but start-up (never garbage) is frozen: the next full collection scans every
        object that can be garbage."""
        self.completed_at = time.monotonic()
        self.thaws = 0
        self.thawing = False
        """Unfrozen, waiting for the complete collection: nothing is frozen meanwhile."""

    def __call__(self, phase: str, info: dict[str, int]) -> None:
        generation = info.get("generation")
        if generation == 1:
            if phase == "stop" and GC_FREEZE_PROMOTED and not self.thawing:
                gc.freeze()  # the two young generations are empty now: this moves the promoted
            return
        if generation != 2:
            return
        if phase == "start":
            self.started = time.perf_counter()
            return
        took = time.perf_counter() - self.started
        survivors = -1
        if took > GC_PAUSE_LOG_S or self.complete:
            survivors = len(gc.get_objects(2))  # a full collection leaves every survivor in generation 2
        if took > GC_PAUSE_LOG_S:
            self.log.warning(
                "gc pause",
                seconds=round(took, 3),
                collected=info.get("collected"),
                tracked=survivors,
                frozen=gc.get_freeze_count(),
            )
        if self.complete:
            self.live, self.complete, self.completed_at = survivors, False, time.monotonic()
            self.thawing = False
        if took > GC_FREEZE_S:
            gc.freeze()
        if self.thawing or time.monotonic() - self.completed_at < GC_THAW_EVERY_S:
            return
        frozen = gc.get_freeze_count()  # walks the frozen: only once the interval is over
        if frozen > max(GC_THAW_GROWTH * self.live, GC_THAW_MIN):
            gc.unfreeze()
            self.thaws += 1
            self.complete = self.thawing = True
            self.log.info("gc thaw", frozen=frozen, live=self.live)


def tune_gc() -> None:
    """Collect once, freeze what start-up made (modules, descriptors, config: never garbage)
    so no later collection scans it, then set GC_THRESHOLDS; log the long full collections
    and freeze what they leave (`_GcPolicy`)."""
    gc.collect()
    gc.freeze()
    gc.set_threshold(*GC_THRESHOLDS)
    gc.callbacks.append(_GcPolicy())


def run_main(service: str, load_config: Callable[[], C], build: Callable[[C], Runtime]) -> int:
    """Entry point of `python -m trix.<service>`: returns the process exit code."""
    try:
        config = load_config()
    except ConfigError as err:
        print(f"trix {service}: configuration error: {err}", file=sys.stderr)
        return EXIT_CONFIG_ERROR
    rc = config.runtime
    configure_logging(rc.service, rc.instance, rc.log_level)
    tune_gc()  # the service's own process only (never a test process that builds one)
    pause = START_AGAIN_FIRST_S
    give_up_at = time.monotonic() + rc.start_again_for_s
    try:
        # A start that failed on a NATS fault is built and started again on a new event loop
        # (the old one's tasks cancelled with it: nothing half-started is left running), for
        # TRIX_START_AGAIN_FOR_S at most: a fault that outlasts it (NATS gone, a JetStream
        # request never answered) is the supervisor's, whose restarts (trix up's backoff,
        # Kubernetes') begin only once this process has exited; the two never overlap.
        while (code := eventloop.run(serve(build(config), pause, give_up_at))) == START_AGAIN:
            pause = min(2 * pause, START_AGAIN_MOST_S)
        return code
    except KeyboardInterrupt:
        return 0
