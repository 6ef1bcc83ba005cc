"""Stopping the processes a test started: the one way (SIGTERM, a grace, then SIGKILL),
so no test leaves a process behind; and pausing one (`paused`: SIGSTOP, waited for)."""

from __future__ import annotations

import asyncio
import os
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


async def paused(pid: int, timeout_s: float = 10.0) -> None:
    """SIGSTOP a child process of this one and wait until it has stopped. The kernel delivers
    the signal to one of its threads, which then stops the others: until then (on a loaded box,
    milliseconds) the process still answers, so a test that sent SIGSTOP and asked at once
    may be answered. Its stop is reported to the parent (waitpid, WUNTRACED) once every thread
    has stopped. SIGCONT resumes it."""
    os.kill(pid, signal.SIGSTOP)
    deadline = time.monotonic() + timeout_s
    while True:
        waited, status = os.waitpid(pid, os.WUNTRACED | os.WNOHANG)  # noqa: ASYNC222 - WNOHANG: never blocks
        if waited == pid and os.WIFSTOPPED(status):
            return
        if waited == pid or time.monotonic() > deadline:
            raise AssertionError(f"process {pid} did not stop (wait status {status})")
        await asyncio.sleep(0.005)


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
