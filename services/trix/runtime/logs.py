"""Structured JSON logs with request context.

Owns the structlog configuration: one JSON object per line on stderr with
`timestamp`, `level`, `event`, `service`, `instance` and whatever is bound in the
contextvars (`request_id`, `table_id`, `player_id`, set by the interceptor). The
standard library's logging (grpc, nats-py) goes through the same renderer. Never log
a hand, a server seed or a token (docs/rules.md §14).
"""

from __future__ import annotations

import logging
import sys
from typing import Any

import structlog

_LEVELS = {"debug": logging.DEBUG, "info": logging.INFO, "warning": logging.WARNING, "error": logging.ERROR}


def configure_logging(service: str, instance: str, level: str = "info") -> None:
    """Configure structlog and stdlib logging for one service process."""
    numeric = _LEVELS.get(level, logging.INFO)

    def add_service(_logger: Any, _name: str, event: dict[str, Any]) -> dict[str, Any]:
        event.setdefault("service", service)
        event.setdefault("instance", instance)
        return event

    shared: list[Any] = [
        structlog.contextvars.merge_contextvars,
        structlog.processors.add_log_level,
        structlog.processors.TimeStamper(fmt="iso", utc=True),
        add_service,
    ]
    structlog.configure(
        processors=[
            *shared,
            structlog.processors.format_exc_info,
            structlog.processors.JSONRenderer(),
        ],
        wrapper_class=structlog.make_filtering_bound_logger(numeric),
        logger_factory=structlog.PrintLoggerFactory(file=sys.stderr),
        cache_logger_on_first_use=False,
    )
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(
        structlog.stdlib.ProcessorFormatter(
            foreign_pre_chain=shared,
            processors=[
                structlog.stdlib.ProcessorFormatter.remove_processors_meta,
                structlog.processors.format_exc_info,
                structlog.processors.JSONRenderer(),
            ],
        )
    )
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(max(numeric, logging.INFO))


def get_logger(name: str | None = None) -> Any:
    """A structlog logger; `name` is added as `logger`."""
    log = structlog.get_logger()
    return log.bind(logger=name) if name else log
