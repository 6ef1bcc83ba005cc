"""Waiting for a process's port: the one wait of every test that starts a server."""

from __future__ import annotations

import socket
import time

PORT_WAIT_S = 30.0
"""How long to wait for a port: generous, the shared 2-core box is often saturated."""


def wait_port(port: int, timeout_s: float = PORT_WAIT_S) -> None:
    """Return once something accepts connections on 127.0.0.1:`port`; TimeoutError after `timeout_s`."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return
        except OSError:
            time.sleep(0.05)
    raise TimeoutError(f"nothing listening on 127.0.0.1:{port} after {timeout_s}s")
