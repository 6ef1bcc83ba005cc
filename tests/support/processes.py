"""Stopping the processes a test started: the one way (SIGTERM, a grace, then SIGKILL),
so no test leaves a process behind."""

from __future__ import annotations

import queue
import signal
import subprocess
import threading
import time
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


class OutputLines:
    """A started process's stdout (text, stderr merged or not), read line by line on a daemon
    thread so its pipe never fills; `seen` keeps every line read so far."""

    def __init__(self, proc: subprocess.Popen[str]) -> None:
        self.proc = proc
        self.seen: list[str] = []
        self._lines: queue.Queue[str] = queue.Queue()
        threading.Thread(target=self._pump, daemon=True).start()

    def _pump(self) -> None:
        if self.proc.stdout is not None:
            for raw in self.proc.stdout:
                self._lines.put(raw.rstrip("\n"))

    def wait_for(self, text: str, timeout_s: float) -> str:
        """The first line containing `text`; AssertionError (with the last lines) when the
        process ends or `timeout_s` passes first."""
        deadline = time.monotonic() + timeout_s
        while not self.seen or text not in self.seen[-1]:
            assert self.proc.poll() is None and time.monotonic() < deadline, f"no line with {text!r}:\n" + "\n".join(
                self.seen[-30:]
            )
            try:
                self.seen.append(self._lines.get(timeout=0.2))
            except queue.Empty:
                continue
        return self.seen[-1]
