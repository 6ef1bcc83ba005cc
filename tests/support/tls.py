"""A gRPC health check over TLS or plain text, for the TLS tests (issue 41)."""

from __future__ import annotations

from pathlib import Path

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc

from trix import tls


def health_code(target: str, ca: Path | None) -> grpc.StatusCode:
    """The status of a health check of `target`: over TLS verified against `ca`, or plain text
    without one (OK when it answered)."""
    channel = tls.sync_channel(target, str(ca) if ca else None)
    try:
        health_pb2_grpc.HealthStub(channel).Check(health_pb2.HealthCheckRequest(), timeout=10)
    except grpc.RpcError as err:
        return err.code()  # type: ignore[no-any-return]
    finally:
        channel.close()
    return grpc.StatusCode.OK
