"""Figures of a load-test run: percentiles, the per-second timeline, the PNG chart.

Owns `percentile`, `window_cpu` (cores and CPU ms per action, platform and bots apart),
`Timeline` (one row per second: tables, players, actions/s, latency percentiles, errors,
CPU and memory of every service process) and `write_chart` (matplotlib, headless:
latency and throughput over time).
"""

from __future__ import annotations

import itertools
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


def percentile(sorted_values: list[float], q: float) -> float:
    """Nearest-rank percentile of an already sorted list (0.0 when empty)."""
    if not sorted_values:
        return 0.0
    k = min(len(sorted_values) - 1, max(0, round(q / 100.0 * len(sorted_values) + 0.5) - 1))
    return sorted_values[k]


BOT_PROCESS_PREFIX = "bots"
"""Timeline process names of the bot workers (`bots-0`, ...): the load, not the platform."""


def service_of(process: str) -> str:
    """The process kind a timeline name counts under: `bots-0` -> bots, a replica `gateway-2`
    -> gateway (`trix up --replicas` names them so), anything else itself."""
    if process.startswith(BOT_PROCESS_PREFIX):
        return BOT_PROCESS_PREFIX
    name, _, index = process.rpartition("-")
    return name if name and index.isdigit() else process


def window_cpu(window_rows: list[dict[str, Any]], actions_per_s: float) -> dict[str, Any]:
    """The measured window's CPU: cores used (mean of the per-second samples), split into
    the platform (every service process and nats-server) and the bots driving it, and the
    CPU milliseconds each process kind spends per action (bot workers summed as `bots`, the
    replicas of a service, e.g. `gateway-1` and `gateway-2`, summed under it and also given
    one by one in `replicas_ms_per_action`).

    The bots share the machine with the platform here; on a real deployment the clients
    are phones, so `platform_ms_per_action` is the cost the platform itself pays."""
    if not window_rows:
        return {"cores": 0.0, "platform_cores": 0.0, "ms_per_action": {}, "platform_ms_per_action": 0.0}
    percent: Counter[str] = Counter()
    replicas: Counter[str] = Counter()
    for row in window_rows:
        for name, sample in row.get("processes", {}).items():
            kind = service_of(name)
            share = sample.get("cpu", 0.0) / len(window_rows)
            percent[kind] += share
            if kind != name and kind != BOT_PROCESS_PREFIX:
                replicas[name] += share
    platform = sum(v for k, v in percent.items() if k != BOT_PROCESS_PREFIX)
    # % of one core / actions per s = ms per action x 0.1
    per_action = {k: round(v * 10 / actions_per_s, 2) for k, v in percent.most_common()} if actions_per_s > 0 else {}
    out: dict[str, Any] = {
        # Three decimals: the idle scenario's budget is 0.06 platform cores.
        "cores": round(sum(percent.values()) / 100, 3),
        "platform_cores": round(platform / 100, 3),
        "bots_cores": round(percent[BOT_PROCESS_PREFIX] / 100, 3),
        # CPU ms per second by process kind: where the platform's cost goes when nobody acts.
        "ms_per_s": {k: round(v * 10, 1) for k, v in percent.most_common()},
        "ms_per_action": per_action,
        "platform_ms_per_action": round(platform * 10 / actions_per_s, 2) if actions_per_s > 0 else 0.0,
        "bots_ms_per_action": per_action.get(BOT_PROCESS_PREFIX, 0.0),
    }
    if replicas and actions_per_s > 0:
        out["replicas_ms_per_action"] = {k: round(v * 10 / actions_per_s, 2) for k, v in sorted(replicas.items())}
    return out


@dataclass
class Second:
    at: float
    phase: str
    actions: int = 0
    latencies: list[float] = field(default_factory=list)
    errors: Counter[str] = field(default_factory=Counter)
    lag_ms: list[float] = field(default_factory=list)
    """The bot workers' event-loop lag samples (the swarm's own delay)."""
    connected: int = 0
    tables_playing: int = 0
    games_finished: int = 0
    processes: dict[str, dict[str, float]] = field(default_factory=dict)

    def row(self, start: float) -> dict[str, Any]:
        lat = sorted(self.latencies)
        return {
            "t": round(self.at - start, 1),
            "phase": self.phase,
            "tables": self.tables_playing,
            "players": self.connected,
            "actions_per_s": self.actions,
            "p50_ms": round(percentile(lat, 50), 2),
            "p95_ms": round(percentile(lat, 95), 2),
            "p99_ms": round(percentile(lat, 99), 2),
            "max_ms": round(lat[-1], 2) if lat else 0.0,
            "errors": sum(self.errors.values()),
            "bot_lag_p99_ms": round(percentile(sorted(self.lag_ms), 99), 2),
            "games_finished": self.games_finished,
            "processes": self.processes,
        }


def write_chart(rows: list[dict[str, Any]], path: Path, title: str) -> None:
    """Latency percentiles and throughput over time, one PNG."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    t = [r["t"] for r in rows]
    fig, (ax1, ax2, ax3) = plt.subplots(3, 1, figsize=(11, 9), sharex=True)
    for key, style in (("p50_ms", "-"), ("p95_ms", "--"), ("p99_ms", "-."), ("max_ms", ":")):
        # a second without an accepted action has no latency: a gap, not a zero
        ax1.plot(t, [r[key] if r["actions_per_s"] else float("nan") for r in rows], style, label=key)
    ax1.set_ylabel("action latency (ms)")
    ax1.set_yscale("symlog", linthresh=10)
    ax1.legend(loc="upper left")
    ax1.grid(True, alpha=0.3)
    ax2.plot(t, [r["actions_per_s"] for r in rows], label="actions/s")
    ax2.plot(t, [r["errors"] for r in rows], label="errors/s", color="red")
    ax2b = ax2.twinx()
    ax2b.plot(t, [r["tables"] for r in rows], color="gray", alpha=0.6, label="tables")
    ax2b.set_ylabel("tables playing")
    ax2.set_ylabel("per second")
    ax2.legend(loc="upper left")
    ax2.grid(True, alpha=0.3)
    names = sorted({n for r in rows for n in r["processes"]})
    for name in names:
        ax3.plot(t, [r["processes"].get(name, {}).get("cpu", 0.0) for r in rows], label=name)
    ax3.set_ylabel("CPU % (100 = one core)")
    ax3.set_xlabel("seconds")
    ax3.legend(loc="upper left", fontsize="small", ncol=3)
    ax3.grid(True, alpha=0.3)
    for ax in (ax1, ax2, ax3):
        for r0, r1 in itertools.pairwise(rows):
            if r0["phase"] != r1["phase"]:
                ax.axvline(r1["t"], color="black", alpha=0.3)
    fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)


def combined_floor(before: dict[str, Any] | None, after: dict[str, Any] | None, tables: int) -> dict[str, Any]:
    """The floor of a run, measured before and after its swarm (ADR 0010: this box's speed moves
    by a sixth within minutes, so one side alone can be measured on a faster or slower box than
    the window): the mean of the two, each side's figure beside it; one side alone if the other
    failed; zeros (no ratio) if both failed."""
    ok = [f for f in (before, after) if f is not None]
    out: dict[str, Any] = {
        "floor_ms_per_action_before": before["floor_ms_per_action"] if before else 0.0,
        "floor_ms_per_action_after": after["floor_ms_per_action"] if after else 0.0,
        "floor_tables": tables,
    }
    if not ok:
        return {**out, "floor_ms_per_action": 0.0, "floor_actions_per_s": 0.0}
    processes = sorted({name for f in ok for name in f["floor_ms_per_action_by_process"]})
    return {
        **out,
        "floor_ms_per_action": round(sum(f["floor_ms_per_action"] for f in ok) / len(ok), 3),
        "floor_ms_per_action_by_process": {
            name: round(sum(f["floor_ms_per_action_by_process"].get(name, 0.0) for f in ok) / len(ok), 3)
            for name in processes
        },
        "floor_actions_per_s": round(sum(f["floor_actions_per_s"] for f in ok) / len(ok), 1),
        "floor_processes": ok[0]["floor_processes"],
    }
