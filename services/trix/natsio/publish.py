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
from collections.abc import Mapping

import nats.errors
import nats.js.errors
import structlog
from nats.js.api import PubAck
from nats.js.client import JetStreamContext

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
or refused by the check for good (10071) once the one in process is applied (issue 19)."""


RETRYABLE_OR_REFUSED: tuple[type[BaseException], ...] = (*RETRYABLE, nats.js.errors.APIError)


def in_process(exc: BaseException) -> bool:
    """A JetStream refusal that only means another attempt is still in process (`IN_PROCESS`)."""
    return isinstance(exc, nats.js.errors.APIError) and exc.err_code in IN_PROCESS


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
    loop = asyncio.get_running_loop()
    deadline = loop.time() + deadline_s
    delay = 0.05
    attempt = 0
    while True:
        attempt += 1
        try:
            return await js.publish(subject, payload, timeout=attempt_timeout_s, headers=dict(all_headers))
        except RETRYABLE_OR_REFUSED as exc:
            if not isinstance(exc, RETRYABLE) and not in_process(exc):
                raise
            if loop.time() + delay >= deadline:
                raise
            log.info("publish retry", subject=subject, msg_id=message_id, attempt=attempt, error=type(exc).__name__)
            await asyncio.sleep(delay)
            # At most a quarter second between attempts: on a NATS cluster a stream has no
            # leader for the RAFT election after its leader died (seconds, issue 19), and the
            # first attempt after the election should come right after it.
            delay = min(delay * 2, MAX_RETRY_DELAY_S)
