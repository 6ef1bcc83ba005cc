"""What the load test measures besides the bots: CPU and memory of every service process
once a second (`Sampler`), the spans in which the whole box stopped (`box_pauses`), the
host's share of the machine's CPU (`steal_share`), and the workers' last ticks once they
stopped (`last_ticks`).
"""

from __future__ import annotations

import contextlib
import itertools
import queue
import threading
import time
from collections import Counter
from typing import Any


class Sampler(threading.Thread):
    """CPU (% of one core) and RSS (MB) of every service process, once a second."""

    def __init__(self, pids: dict[str, int]) -> None:
        super().__init__(daemon=True, name="loadtest-sampler")
        import psutil

        self.procs: dict[str, Any] = {}
        for name, pid in pids.items():
            with contextlib.suppress(psutil.Error):
                p = psutil.Process(pid)
                p.cpu_percent(None)
                self.procs[name] = p
        self.latest: dict[str, dict[str, float]] = {}
        self.peaks: dict[str, dict[str, float]] = {}
        self.sums: Counter[str] = Counter()
        self.samples = 0
        self.stop = threading.Event()
        self.pauses: list[tuple[float, float]] = []
        """(wall time, seconds) of each span in which this thread could not run (`box_pauses`)."""

    def add(self, name: str, pid: int) -> None:
        import psutil

        with contextlib.suppress(psutil.Error):
            p = psutil.Process(pid)
            p.cpu_percent(None)
            self.procs[name] = p

    def run(self) -> None:
        import psutil

        last = time.monotonic()
        while not self.stop.wait(1.0):
            now = time.monotonic()
            self.pauses += box_pauses([last, now])
            last = now
            sample: dict[str, dict[str, float]] = {}
            for name, p in list(self.procs.items()):
                try:
                    cpu = p.cpu_percent(None)
                    rss = p.memory_info().rss / 1e6
                except psutil.Error:
                    continue
                sample[name] = {"cpu": round(cpu, 1), "rss_mb": round(rss, 1)}
                peak = self.peaks.setdefault(name, {"cpu_max": 0.0, "rss_max_mb": 0.0})
                peak["cpu_max"] = max(peak["cpu_max"], cpu)
                peak["rss_max_mb"] = max(peak["rss_max_mb"], round(rss, 1))
                self.sums[name] += int(cpu * 10)
            self.samples += 1
            self.latest = sample

    def summary(self) -> dict[str, dict[str, float]]:
        out = {}
        for name, peak in self.peaks.items():
            avg = self.sums[name] / 10 / max(1, self.samples)
            out[name] = {"cpu_avg": round(avg, 1), **{k: round(v, 1) for k, v in peak.items()}}
        return out


DRAIN_S = 10.0
"""How long the last ticks are read after the workers stopped."""
PAUSE_S = 2.0
"""A sampler that wakes this much later than its one-second step saw the whole box stop."""


def box_pauses(wakes: list[float], step_s: float = 1.0) -> list[tuple[float, float]]:
    """The spans (wall time at the end, seconds stopped) in which a thread that wakes every
    `step_s` (monotonic times `wakes`) could not run for PAUSE_S or more. On this platform's
    virtual machines that is the host descheduling the whole guest (every process, the
    sampler too: 10 s in one 1,000-table window, after which the timers rightly
    played the turns whose deadlines had passed and the bots' late moves were refused):
    the window's latencies and errors then are the host's, and the summary says so."""
    out = []
    for before, after in itertools.pairwise(wakes):
        late = after - before - step_s
        if late >= PAUSE_S:
            out.append((time.time() - (wakes[-1] - after), round(late, 1)))
    return out


def last_ticks(out: Any, within_s: float) -> list[dict[str, Any]]:
    """The ticks still queued once the workers stopped, read by a helper thread for at most
    `within_s`: a worker killed while it was writing leaves a cut message in the pipe, on
    which a read blocks for ever (a 400-table run hung there after its window)."""
    ticks: list[dict[str, Any]] = []

    def drain() -> None:
        while True:
            try:
                kind, data = out.get_nowait()
            except (queue.Empty, EOFError, OSError):  # (the pipe closed under a blocked read)
                return
            if kind == "tick":
                ticks.append(data)

    reader = threading.Thread(target=drain, daemon=True, name="loadtest-last-ticks")
    reader.start()
    reader.join(within_s)
    return list(ticks)


def host_cpu_ticks() -> list[int]:
    """The machine's CPU time so far, in ticks, from /proc/stat's `cpu` line (user, nice,
    system, idle, iowait, irq, softirq, steal, ...); empty where there is none."""
    try:
        with open("/proc/stat", encoding="ascii") as stat:
            first = stat.readline().split()
    except OSError:
        return []
    return [int(x) for x in first[1:]] if first and first[0] == "cpu" else []


def steal_share(ticks: list[int]) -> float | None:
    """The share of the machine's CPU time its host took (steal, %) in `ticks`' span: a
    virtual machine's neighbours make every ms-per-action figure of the same code larger
    (34% steal on one session's box, 1% on another's)."""
    if len(ticks) < 8 or sum(ticks) <= 0:
        return None
    return round(100.0 * ticks[7] / sum(ticks), 1)
