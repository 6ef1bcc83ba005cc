"""`trix loadtest` stopped by SIGTERM stops every process it started (issue 42, finding 8):
its bot workers, its embedded platform's NATS and services, and whatever else it spawned.
Before, the default SIGTERM ended the runner at once and its bot workers (multiprocessing
children) played on, orphaned, for more than 15 s.

A tiny run (two tables, no baselines, no finish) gets SIGTERM in its measured window; every
process below it, listed just before the signal, is gone 5 s later."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from support.processes import OutputLines

pytestmark = pytest.mark.timeout(300)

GONE_WITHIN_S = 5.0
WINDOW_WITHIN_S = 180.0
"""The platform's start, the ramp and the settling of a two-table run, on a loaded box."""


def _alive(procs: list[psutil.Process]) -> list[str]:
    """Those still running (a zombie has stopped: only its exit status is left), described."""
    out = []
    for p in procs:
        try:
            if p.is_running() and p.status() != psutil.STATUS_ZOMBIE:
                out.append(f"{p.pid} {' '.join(p.cmdline())[:160]}")
        except psutil.NoSuchProcess:
            continue
    return out


def test_sigterm_stops_the_loadtest_and_every_process_it_started(tmp_path: Path) -> None:
    argv = [sys.executable, "-m", "trix.cli", "loadtest", "steady", "--tables", "2", "--duration", "120"]
    argv += ["--settle", "1", "--echo-seconds", "0", "--floor-seconds", "0", "--no-finish"]
    argv += ["--out", str(tmp_path / "run"), "--state-dir", str(tmp_path / "state")]
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True)
    output = OutputLines(proc)
    tree: list[psutil.Process] = []
    try:
        output.wait_for("window starts", WINDOW_WITHIN_S)
        runner = psutil.Process(proc.pid)
        tree = [runner, *runner.children(recursive=True)]
        workers = [p for p in tree if "multiprocessing" in " ".join(p.cmdline())]
        assert len(workers) >= 2, [p.cmdline() for p in tree]  # the bot workers are among them
        assert any("nats-server" in " ".join(p.cmdline()) for p in tree)  # and the platform's processes

        proc.send_signal(signal.SIGTERM)
        signalled = time.monotonic()
        while (left := _alive(tree)) and time.monotonic() - signalled < GONE_WITHIN_S:
            time.sleep(0.1)
        print(f"{len(tree)} processes, {len(left)} left {time.monotonic() - signalled:.1f}s after SIGTERM")
        assert not left, f"{len(left)} of {len(tree)} processes still running {GONE_WITHIN_S:.0f}s after SIGTERM:\n" + (
            "\n".join(left)
        )
        assert proc.poll() is not None
    finally:
        for p in tree:  # whatever this run left, stopped by its own pid
            try:
                if p.is_running():
                    p.kill()
            except psutil.NoSuchProcess:
                continue
        if proc.poll() is None:
            proc.kill()
        proc.wait(30)
