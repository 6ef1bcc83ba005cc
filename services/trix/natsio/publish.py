"""Publishing to JetStream with a message id, retried with the same id.

Owns `publish_once`: every message gets a `Nats-Msg-Id` (the caller's idempotency
key, or a new one), and a publish whose acknowledgement is lost (timeout, no
responders while the server restarts, reconnecting) is retried with the *same* id,
so the stream's duplicate window stores it once. Returns the PubAck: a message is
acknowledged only when it is stored.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, TypeVar

import nats.errors
import nats.js.errors
import structlog
from nats.js.api import PubAck
from nats.js.client import KV_PRE_TEMPLATE, JetStreamContext
from nats.js.kv import KeyValue

from trix.natsio.connection import NatsConnection
from trix.natsio.names import kv_stream

MSG_ID_HEADER = "Nats-Msg-Id"
EXPECTED_LAST_SUBJECT_SEQ_HEADER = "Nats-Expected-Last-Subject-Sequence"

log = structlog.get_logger("trix.natsio.publish")

MAX_RETRY_DELAY_S = 0.25

RETRYABLE: tuple[type[BaseException], ...] = (
    asyncio.TimeoutError,
    nats.errors.TimeoutError,
    nats.errors.NoRespondersError,
    nats.js.errors.NoStreamResponseError,
    nats.js.errors.ServiceUnavailableError,
    nats.errors.ConnectionReconnectingError,
    nats.errors.StaleConnectionError,
    nats.errors.OutboundBufferLimitError,
)

IN_PROCESS: frozenset[int] = frozenset({10158, 10164})
"""JetStream errors of a clustered stream's leader that mean "not now", not "no": 10158
(JSStreamDuplicateMessageConflict, "duplicate message id is in process": an earlier attempt
with this message id is proposed but not applied yet, e.g. its ack was lost while the RAFT
group was slow) and 10164 (JSStreamWrongLastSequenceConstantErr, "wrong last sequence": an
expected-sequence check cannot be made while another message to the same subject is in
process). Sent again with the same id, the publish is stored, or answered as a duplicate,
or refused by the check for good (10071) once the one in process is applied."""


RETRYABLE_OR_REFUSED: tuple[type[BaseException], ...] = (*RETRYABLE, nats.js.errors.APIError)


def in_process(exc: BaseException) -> bool:
    """A JetStream refusal that only means another attempt is still in process (`IN_PROCESS`)."""
    # Not every APIError has an err_code: nats-py's KeyNotFoundError (a KV read's "no such key",
    # an APIError) is built without one.
    return isinstance(exc, nats.js.errors.APIError) and getattr(exc, "err_code", None) in IN_PROCESS


def transient(exc: BaseException) -> bool:
    """An error that says NATS did not answer now, not that it refused: `RETRYABLE`, or a
    leader's `IN_PROCESS` refusal, raised itself or as the cause of the error raised. A
    service start failing so (a NATS fault while its consumers are made) is started again
    (`trix.runtime.server.run_main`), never left exited."""
    cause: BaseException | None = exc
    while cause is not None:
        if isinstance(cause, RETRYABLE) or in_process(cause):
            return True
        cause = cause.__cause__
    return False


_T = TypeVar("_T")


WAIT_STEP_S = 0.05
"""Attempt timeouts are rounded down to this step (at least one step) before a context is
picked, so the contexts kept are a few dozen, not one per distinct time left."""


class JetStreams:
    """One JetStream context per request timeout, each made once, on the connection's client
    (which exists once connected): nats-py's context carries its requests' timeout, and an
    attempt that must end early needs a context of its own. And the connection's key-value
    buckets, looked up once each."""

    def __init__(self, nats: NatsConnection) -> None:
        self.nats = nats
        self._by_timeout: dict[float, JetStreamContext] = {}
        self._client: object = None
        self._direct: dict[str, bool] = {}
        """Per bucket: whether it answers direct gets (its stream's `allow_direct`), learnt
        from its stream's info on first use."""

    def waiting(self, timeout_s: float) -> JetStreamContext:
        client = self.nats.client
        if client is not self._client:  # a new connection: contexts bound to the old one go
            self._by_timeout.clear()
            self._client = client
        steps = int(timeout_s / WAIT_STEP_S + 1e-9)  # 0.35 / 0.05 is 6.999...: still 7 steps
        wait = max(1, steps) * WAIT_STEP_S
        js = self._by_timeout.get(wait)
        if js is None:
            js = self._by_timeout[wait] = client.jetstream(timeout=wait)
        return js

    async def key_value(self, bucket: str, timeout_s: float | None = None) -> KeyValue:
        """The bucket on the context of `timeout_s` (None: the connection's own). nats-py's
        `key_value` asks for the bucket's stream info on every call: a NATS request per
        lookup (the gateway made two per sign-in). Here only the first lookup of a
        bucket asks (and raises BucketNotFoundError if it is missing)."""
        js = self.nats.jetstream if timeout_s is None else self.waiting(timeout_s)
        direct = self._direct.get(bucket)
        if direct is None:
            kv = await js.key_value(bucket)
            self._direct[bucket] = kv._direct
            return kv
        return KeyValue(
            name=bucket, stream=kv_stream(bucket), pre=KV_PRE_TEMPLATE.format(bucket=bucket), js=js, direct=direct
        )


async def ask_until(
    call: Callable[[float], Awaitable[_T]],
    *,
    deadline_s: float,
    attempt_s: float,
    min_attempt_s: float | None = None,
    first_pause_s: float = 0.05,
    max_pause_s: float = MAX_RETRY_DELAY_S,
    in_process_too: bool = False,
    log_event: str | None = None,
    **log_fields: Any,
) -> _T:
    """`call(attempt timeout)` asked again while NATS does not answer (`RETRYABLE`; with
    `in_process_too`, also a leader's `IN_PROCESS` refusal) until `deadline_s` from now, with
    a doubling pause from `first_pause_s` to `max_pause_s` between attempts, then the last
    error is raised; any other error is raised at once. Each attempt waits `attempt_s`, or,
    with `min_attempt_s`, the time left (at least `min_attempt_s`), so that the last attempt
    ends by the deadline. On a NATS cluster a stream answers nothing while it elects a leader
    (seconds): a short attempt asked again is answered right after the election,
    a long one only when it times out. The one retry loop of the platform's NATS calls."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + deadline_s
    pause = first_pause_s
    attempt = 0
    while True:
        attempt += 1
        timeout = attempt_s
        if min_attempt_s is not None:
            timeout = round(max(min_attempt_s, min(attempt_s, deadline - loop.time())), 2)
        try:
            return await call(timeout)
        except RETRYABLE_OR_REFUSED as exc:
            if not isinstance(exc, RETRYABLE) and not (in_process_too and in_process(exc)):
                raise
            if loop.time() + pause + (min_attempt_s or 0.0) >= deadline:
                raise
            if log_event is not None:
                log.info(log_event, attempt=attempt, error=type(exc).__name__, **log_fields)
        await asyncio.sleep(pause)
        pause = min(2 * pause, max_pause_s)


WRONG_LAST_SEQUENCE = 10071
"""JSStreamWrongLastSequenceErrF: the subject's last sequence is not the one expected (a
compare-and-set lost, a key created that exists): a "no", unlike `IN_PROCESS`'s 10164."""


async def kv_write(kv: KeyValue, key: str, value: bytes, last: int, *, msg_ttl: float | None = None) -> int | None:
    """Compare-and-set of `key`: `value` stored if the key's last revision is `last` (0: the key
    is new, or deleted: it is created again), the new revision; None when it is not (another
    write won, or the key exists). nats-py's `create` and `update` turn a leader's "not now"
    (10164, `IN_PROCESS`: the check cannot be made while a write of the key is in process)
    into that "no", and `create` then into KeyNotFoundError when it reads no key (issue 42:
    a sign-in answered INTERNAL): here it is raised as the APIError it is, which callers
    retry (`ask_until(in_process_too=True)`) or answer UNAVAILABLE (`in_process`)."""
    subject = f"{kv._pre}{key}"
    headers = {EXPECTED_LAST_SUBJECT_SEQ_HEADER: str(last)}
    try:
        ack = await kv._js.publish(subject, value, headers=headers, msg_ttl=msg_ttl)
    except nats.js.errors.APIError as err:
        if getattr(err, "err_code", None) != WRONG_LAST_SEQUENCE:
            raise
        if last != 0:
            return None
        try:
            await kv.get(key)
        except nats.js.errors.KeyNotFoundError as missing:
            if missing.entry is None:  # the stream has a message of the key but this read none yet
                raise nats.js.errors.APIError(code=400, err_code=10164, description="wrong last sequence") from err
            return await kv_write(kv, key, value, int(missing.entry.revision or 0), msg_ttl=msg_ttl)  # deleted
        return None
    return int(ack.seq)


async def kv_create(kv: KeyValue, key: str, value: bytes) -> int | None:
    """`kv_write` of a new key for a writer that looks again when it loses (a lease, a lock): a
    leader's "in process" is answered as a create lost (None), as nats-py's `update` answers
    it, never the KeyNotFoundError nats-py's `create` raises then."""
    try:
        return await kv_write(kv, key, value, 0)
    except nats.js.errors.APIError as err:
        if in_process(err):
            return None
        raise


def new_msg_id() -> str:
    """A fresh message id for publishes without a natural idempotency key."""
    return uuid.uuid4().hex


async def publish_once(
    js: JetStreamContext,
    subject: str,
    payload: bytes,
    *,
    msg_id: str | None = None,
    headers: Mapping[str, str] | None = None,
    attempt_timeout_s: float = 2.0,
    deadline_s: float = 60.0,
) -> PubAck:
    """Publish and wait for the ack, retrying with the same Nats-Msg-Id until `deadline_s`.

    `PubAck.duplicate` is true when an earlier attempt had already been stored.
    Raises the last error when the deadline passes; non-retryable JetStream errors
    (e.g. a wrong expected sequence) are raised at once; those that mean another attempt is
    still in process (`IN_PROCESS`) are retried like a lost ack.
    """
    message_id = msg_id or new_msg_id()
    all_headers = {**(headers or {}), MSG_ID_HEADER: message_id}

    async def once(wait_s: float) -> PubAck:
        return await js.publish(subject, payload, timeout=wait_s, headers=dict(all_headers))

    # At most a quarter second between attempts (`MAX_RETRY_DELAY_S`): on a NATS cluster a
    # stream has no leader for the RAFT election after its leader died (seconds),
    # and the first attempt after the election should come right after it.
    return await ask_until(
        once,
        deadline_s=deadline_s,
        attempt_s=attempt_timeout_s,
        in_process_too=True,
        log_event="publish retry",
        subject=subject,
        msg_id=message_id,
    )
