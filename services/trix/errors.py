"""The domain error hierarchy and its single mapping to gRPC status codes.

Owns: the exceptions domain logic raises (services' `service.py` modules raise these,
never grpc errors) and `STATUS_CODE_NAMES`, the one table the runtime's interceptor
uses to turn them into status codes. Must not import grpc or nats: the table maps to
status code *names*; the runtime resolves them to `grpc.StatusCode`.

Every domain error carries a message that is safe to show a player (e.g. the engine's
reason for an illegal move). Anything that is not a DomainError is unexpected and
becomes INTERNAL with an error id; its text never reaches a client.
"""

from __future__ import annotations


class DomainError(Exception):
    """Base of every expected, client-visible error. `str(err)` is shown to the client."""

    code_name = "UNKNOWN"

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.public_message = message


class InvalidArgument(DomainError):
    """A malformed request: bad id, unknown enum value, out-of-range number."""

    code_name = "INVALID_ARGUMENT"


class NotFound(DomainError):
    """An unknown table, ticket, player or record."""

    code_name = "NOT_FOUND"


class AlreadyExists(DomainError):
    """Creating something that exists with different content (a player already queued)."""

    code_name = "ALREADY_EXISTS"


class IllegalMove(DomainError):
    """A move the rules forbid now (docs/rules.md), or an action out of turn."""

    code_name = "FAILED_PRECONDITION"


class StaleTurn(DomainError):
    """The client's sequence or an AutoAct's turn_seq is no longer current: retry on fresh state."""

    code_name = "ABORTED"


class PermissionDenied(DomainError):
    """The caller is known but may not do this (another player's seat, admin calls)."""

    code_name = "PERMISSION_DENIED"


class Unauthenticated(DomainError):
    """No valid credential: missing, expired or badly signed token."""

    code_name = "UNAUTHENTICATED"


class ResourceExhausted(DomainError):
    """A rate limit, a message size limit, or an insufficient balance for a stake. A rate
    limit names `retry_after_s`, the delay to wait: sent as `google.rpc.RetryInfo` in the
    status details."""

    code_name = "RESOURCE_EXHAUSTED"

    def __init__(self, message: str, retry_after_s: float | None = None) -> None:
        super().__init__(message)
        self.retry_after_s = retry_after_s

    def retry_delay_ns(self) -> int:
        """`retry_after_s` in nanoseconds, rounded up to the millisecond, at least 1 ms."""
        return max(1, -(-int((self.retry_after_s or 0.0) * 1e9) // 1_000_000)) * 1_000_000


class Unavailable(DomainError):
    """A dependency (NATS, a table owner during handover) is briefly unavailable; retry."""

    code_name = "UNAVAILABLE"


class NotBuilt(DomainError):
    """An RPC whose implementation belongs to a later issue."""

    code_name = "UNIMPLEMENTED"

    def __init__(self, what: str, issue: int) -> None:
        super().__init__(f"{what} is not built yet: issue #{issue} builds it")
        self.issue = issue


# The single domain-error -> gRPC status-code table, most specific class first.
STATUS_CODE_NAMES: tuple[tuple[type[DomainError], str], ...] = tuple(
    (cls, cls.code_name)
    for cls in (
        InvalidArgument,
        NotFound,
        AlreadyExists,
        IllegalMove,
        StaleTurn,
        PermissionDenied,
        Unauthenticated,
        ResourceExhausted,
        Unavailable,
        NotBuilt,
    )
)


def status_code_name(err: DomainError) -> str:
    """The gRPC status code name for a domain error (its class's entry in the table)."""
    for cls, name in STATUS_CODE_NAMES:
        if isinstance(err, cls):
            return name
    return "UNKNOWN"


def error_kind(err: DomainError) -> str:
    """The name a domain error travels under between services (TableCommandReply.error.kind)."""
    return type(err).__name__


_KINDS: dict[str, type[DomainError]] = {cls.__name__: cls for cls, _ in STATUS_CODE_NAMES}


def from_kind(kind: str, message: str) -> DomainError:
    """Rebuild a domain error received from another service; unknown kinds become DomainError."""
    cls = _KINDS.get(kind)
    if cls is None or cls is NotBuilt:
        return DomainError(message)
    return cls(message)
