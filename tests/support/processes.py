"""Stopping the processes a test started: the one way (SIGTERM, a grace, then SIGKILL),
so no test leaves a process behind."""

from __future__ import annotations

import signal
import subprocess
from typing import Any


def stop_process(proc: subprocess.Popen[Any] | None, grace_s: float) -> int | None:
    """SIGTERM, wait up to `grace_s`, then SIGKILL; the exit code (None: nothing was started)."""
    if proc is None:
        return None
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            return proc.wait(grace_s)
        except subprocess.TimeoutExpired:
            proc.kill()
    return proc.wait()


def kill_process(proc: subprocess.Popen[Any] | None) -> int | None:
    """SIGKILL (what a crash leaves behind) and reap; the exit code (None: nothing was started)."""
    if proc is None:
        return None
    if proc.poll() is None:
        proc.kill()
    return proc.wait()
