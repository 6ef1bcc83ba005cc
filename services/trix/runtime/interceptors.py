"""The server interceptor every service runs: context, metrics, errors, draining.

Owns, for each RPC:
- the logging context: `request_id` from the `x-request-id` metadata (or a new one),
  and `table_id` / `player_id` read from the request message when it has them, bound
  in structlog's contextvars for every log line of the call;
- the standard RPC metrics (`trix.runtime.metrics`), labelled by service and method only;
- the single domain-error -> status-code mapping: a `trix.errors.DomainError` becomes
  its status with its public message, counted by reason (`trix_rpc_refused_total`) and
  logged once a minute per method and reason (`RefusalLog`), not once each;
  `NotImplementedError` (an RPC of a later issue) becomes UNIMPLEMENTED naming the issue;
  anything else becomes INTERNAL with an error id that is logged once with the traceback,
  and the exception text is never sent;
- draining: response streams (sessions, health watches) are ended with UNAVAILABLE
  when the server starts shutting down, so the grace period waits only for unary calls.
"""

from __future__ import annotations

import asyncio
import inspect
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Mapping
from typing import Any

import grpc
import nats.errors
import nats.js.errors
import structlog
from google.rpc import error_details_pb2, status_pb2

from trix.errors import DomainError, ResourceExhausted, status_code_name
from trix.natsio.publish import in_process
from trix.runtime.metrics import RpcMetrics

NATS_TRANSIENT: tuple[type[Exception], ...] = (
    nats.errors.TimeoutError,
    nats.errors.NoRespondersError,
    nats.errors.ConnectionReconnectingError,
    nats.errors.StaleConnectionError,
    nats.js.errors.NoStreamResponseError,
    nats.js.errors.ServiceUnavailableError,
)
"""NATS errors that mean "not now" (UNAVAILABLE), never a bug (INTERNAL); so does a JetStream
leader's "in process" refusal (`trix.natsio.publish.in_process`)."""

REQUEST_ID_HEADER = "x-request-id"
_CONTEXT_FIELDS = ("table_id", "player_id")
_CODES_BY_VALUE: dict[int, grpc.StatusCode] = {c.value[0]: c for c in grpc.StatusCode}

log = structlog.get_logger("trix.runtime.rpc")

Behavior = Callable[..., Any]


def _code_of(context: grpc.aio.ServicerContext[Any, Any]) -> grpc.StatusCode:
    try:
        code: Any = context.code()
    except Exception:  # noqa: BLE001 - older grpc without ServicerContext.code()
        return grpc.StatusCode.UNKNOWN
    if code is None:
        return grpc.StatusCode.OK
    if isinstance(code, grpc.StatusCode):
        return code
    if isinstance(code, int):
        return _CODES_BY_VALUE.get(code, grpc.StatusCode.UNKNOWN)
    return grpc.StatusCode.UNKNOWN


def _context_from_request(request: Any) -> dict[str, str]:
    """table_id / player_id from a request message (top level or its `header`), if present."""
    found: dict[str, str] = {}
    candidates = [request]
    header = getattr(request, "header", None)
    if header is not None and not isinstance(header, (str, bytes)):
        candidates.append(header)
    for message in candidates:
        for name in _CONTEXT_FIELDS:
            value = getattr(message, name, None)
            if isinstance(value, str) and value and name not in found:
                found[name] = value
    return found


class _Call:
    """Book-keeping of one RPC: its labels, start time and final code."""

    def __init__(self, metrics: RpcMetrics, grpc_type: str, service: str, method: str) -> None:
        self.metrics = metrics
        self.labels = (grpc_type, service, method)
        self.code = grpc.StatusCode.OK
        self.start = time.perf_counter()
        metrics.started.labels(*self.labels).inc()

    def finish(self) -> None:
        self.metrics.handled.labels(*self.labels, self.code.name).inc()
        self.metrics.handling_seconds.labels(*self.labels).observe(time.perf_counter() - self.start)


REFUSAL_LOG_EVERY_S = 60.0
"""A refused call is counted (`trix_rpc_refused_total`); a log line is written for the first of
each method and reason a minute, with how many there were since (one line each made
a review's gateway.log 4,554 lines)."""


class RefusalLog:
    """One "rpc refused" line per (method, reason) per `every_s`, carrying `refused`: the calls
    refused that way since the previous line (this one included). Bounded: methods x reasons."""

    def __init__(self, every_s: float = REFUSAL_LOG_EVERY_S, clock: Callable[[], float] = time.monotonic) -> None:
        self.every_s = every_s
        self.clock = clock
        self._since: dict[tuple[str, str], tuple[float, int]] = {}

    def refused(self, method: str, reason: str, code: str, message: str) -> None:
        now = self.clock()
        last, count = self._since.get((method, reason), (now - self.every_s, 0))
        if now - last < self.every_s:
            self._since[(method, reason)] = (last, count + 1)
            return
        self._since[(method, reason)] = (now, 0)
        log.info("rpc refused", grpc_method=method, grpc_code=code, reason=reason, error=message, refused=count + 1)


class RuntimeInterceptor(grpc.aio.ServerInterceptor):
    """Context, metrics, error mapping and stream draining for every RPC of a server."""

    def __init__(self, metrics: RpcMetrics, unbuilt_issues: Mapping[str, int], stopping: asyncio.Event) -> None:
        self._metrics = metrics
        self._unbuilt = dict(unbuilt_issues)
        self._stopping = stopping
        self._refusals = RefusalLog()

    async def intercept_service(
        self,
        continuation: Callable[[grpc.HandlerCallDetails], Awaitable[grpc.RpcMethodHandler[Any, Any] | None]],
        handler_call_details: grpc.HandlerCallDetails,
    ) -> grpc.RpcMethodHandler[Any, Any] | None:
        handler = await continuation(handler_call_details)
        if handler is None:
            return None
        full_method: str = handler_call_details.method  # "/trix.v1.TableService/PlayCard"
        service, _, method = full_method.lstrip("/").partition("/")
        metadata: dict[str, Any] = {}
        for key, value in handler_call_details.invocation_metadata or ():
            metadata[key] = value
        raw_id = metadata.get(REQUEST_ID_HEADER)
        request_id = raw_id if isinstance(raw_id, str) and 0 < len(raw_id) <= 128 else uuid.uuid4().hex
        names = (service, method, request_id)

        if handler.unary_unary is not None:
            return grpc.unary_unary_rpc_method_handler(
                self._unary(handler.unary_unary, "unary", names, peek=True),
                request_deserializer=handler.request_deserializer,
                response_serializer=handler.response_serializer,
            )
        if handler.stream_unary is not None:
            return grpc.stream_unary_rpc_method_handler(
                self._unary(handler.stream_unary, "client_stream", names, peek=False),
                request_deserializer=handler.request_deserializer,
                response_serializer=handler.response_serializer,
            )
        if handler.unary_stream is not None:
            return grpc.unary_stream_rpc_method_handler(
                self._streaming(handler.unary_stream, "server_stream", names, peek=True),
                request_deserializer=handler.request_deserializer,
                response_serializer=handler.response_serializer,
            )
        if handler.stream_stream is not None:
            return grpc.stream_stream_rpc_method_handler(
                self._streaming(handler.stream_stream, "bidi_stream", names, peek=False),
                request_deserializer=handler.request_deserializer,
                response_serializer=handler.response_serializer,
            )
        return handler

    # -- wrappers -----------------------------------------------------------------

    def _unary(self, behavior: Behavior, grpc_type: str, names: tuple[str, str, str], *, peek: bool) -> Behavior:
        service, method, request_id = names

        async def wrapper(request: Any, context: grpc.aio.ServicerContext[Any, Any]) -> Any:
            fields = _context_from_request(request) if peek else {}
            with structlog.contextvars.bound_contextvars(request_id=request_id, **fields):
                call = _Call(self._metrics, grpc_type, service, method)
                try:
                    result = behavior(request, context)
                    if inspect.isawaitable(result):
                        result = await result
                    call.code = _code_of(context)
                    return result
                except BaseException as exc:
                    await self._handle(exc, call, context, service, method)
                    raise
                finally:
                    call.finish()

        return wrapper

    def _streaming(self, behavior: Behavior, grpc_type: str, names: tuple[str, str, str], *, peek: bool) -> Behavior:
        service, method, request_id = names

        async def produce(request: Any, context: grpc.aio.ServicerContext[Any, Any]) -> None:
            result = behavior(request, context)
            if inspect.isasyncgen(result) or isinstance(result, AsyncIterator):
                async for item in result:
                    await context.write(item)
            elif inspect.isawaitable(result):
                await result
            elif isinstance(result, Iterable):
                for item in result:
                    await context.write(item)

        async def wrapper(request: Any, context: grpc.aio.ServicerContext[Any, Any]) -> None:
            fields = _context_from_request(request) if peek else {}
            with structlog.contextvars.bound_contextvars(request_id=request_id, **fields):
                call = _Call(self._metrics, grpc_type, service, method)
                try:
                    work = asyncio.ensure_future(produce(request, context))
                    stop = asyncio.ensure_future(self._stopping.wait())
                    try:
                        await asyncio.wait({work, stop}, return_when=asyncio.FIRST_COMPLETED)
                    finally:
                        stop.cancel()
                        if not work.done():
                            work.cancel()
                            await asyncio.gather(work, return_exceptions=True)
                        elif not work.cancelled():
                            # Seen even when we are cancelled (the client left): a failed
                            # write to a gone client is not an error worth a log line.
                            work.exception()
                    if not work.cancelled() and work.done():
                        work.result()  # re-raises the handler's error, if any
                        call.code = _code_of(context)
                        return
                    call.code = grpc.StatusCode.UNAVAILABLE
                    await context.abort(grpc.StatusCode.UNAVAILABLE, "server is shutting down; reconnect")
                except BaseException as exc:
                    await self._handle(exc, call, context, service, method)
                    raise
                finally:
                    call.finish()

        return wrapper

    async def _handle(
        self,
        exc: BaseException,
        call: _Call,
        context: grpc.aio.ServicerContext[Any, Any],
        service: str,
        method: str,
    ) -> None:
        """Map an exception to a status; returns only when `exc` must propagate unchanged."""
        if isinstance(exc, grpc.aio.AbortError):
            if call.code == grpc.StatusCode.OK:
                call.code = _code_of(context)
            return
        if isinstance(exc, asyncio.CancelledError):
            call.code = grpc.StatusCode.CANCELLED
            return
        if isinstance(exc, DomainError):
            call.code = grpc.StatusCode[status_code_name(exc)]
            reason = type(exc).__name__
            self._metrics.refused.labels(service, method, reason).inc()
            self._refusals.refused(method, reason, call.code.name, exc.public_message)
            await context.abort(call.code, exc.public_message, trailing_metadata=_status_details(call.code, exc))
        if isinstance(exc, NotImplementedError):
            call.code = grpc.StatusCode.UNIMPLEMENTED
            issue = self._unbuilt.get(service)
            where = f"{service.rsplit('.', 1)[-1]}.{method}"
            message = f"{where} is not built yet: issue #{issue} builds it" if issue else f"{where} is not implemented"
            await context.abort(call.code, message)
        if not isinstance(exc, Exception):
            return  # KeyboardInterrupt, SystemExit, GeneratorExit: let them through
        if isinstance(exc, NATS_TRANSIENT) or in_process(exc):
            # NATS did not answer in time (a reconnect, a stream electing its leader after a
            # node died): not a bug, the call may be retried as it is.
            call.code = grpc.StatusCode.UNAVAILABLE
            log.warning("rpc unavailable: nats did not answer", grpc_method=method, error=type(exc).__name__)
            await context.abort(call.code, "briefly unavailable, try again")
        call.code = grpc.StatusCode.INTERNAL
        error_id = uuid.uuid4().hex[:16]
        log.error("unexpected error", grpc_method=method, error_id=error_id, exc_info=exc)
        await context.abort(grpc.StatusCode.INTERNAL, f"internal error (error id {error_id})")


STATUS_DETAILS_KEY = "grpc-status-details-bin"
"""The trailer of a status's details: a serialized `google.rpc.Status`."""


def _status_details(code: grpc.StatusCode, exc: DomainError) -> tuple[tuple[str, bytes], ...]:
    """A refused rate limit's delay as `google.rpc.RetryInfo` in the status details;
    nothing for other errors."""
    if not isinstance(exc, ResourceExhausted) or exc.retry_after_s is None:
        return ()
    info = error_details_pb2.RetryInfo()
    info.retry_delay.FromNanoseconds(exc.retry_delay_ns())
    status = status_pb2.Status(code=code.value[0], message=exc.public_message)
    status.details.add().Pack(info)
    return ((STATUS_DETAILS_KEY, status.SerializeToString()),)
