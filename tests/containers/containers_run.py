"""`make test-containers` (issue 41): the container run proven end to end, as an operator tries
the platform before a cluster. Outside CI (podman, root, ~7 min); docs/deploy.md has the runs.

1. `make image` (deploy/Dockerfile with podman, on the bases of `make base-images`).
2. `make up-containers`: the dev overlay of deploy/k8s as podman pods, TLS from the edge to
   NATS; the run's settings (`RUN_ENV`, `RUN_REPLICAS`) as CONTAINERS_ARGS.
3. `trix demo --server <edge> --ca <CA>`: a whole game through the TLS edge.
4. `trix loadtest steady --tables 200 --server <edge> --ca <CA> --keep-accepted
   --max-errors 0 --no-finish`; during its measured window a NATS pod (`--kill-nats`: by default
   the one leading KV_table_leases, see `NATS_TARGETS`) and then the table pod are killed
   (`podman kill` of their container). podman 4.3 does not restart a container a `podman kill`
   stopped (its restart policy skips stops it was asked for: tried here, `restartPolicy:
   Always`, exit 137, restart count 0), so the harness starts its pod
   again after `RESTART_AFTER_S` (`podman pod start`), as the kubelet restarts a crashed
   container; each fault says who restarted it (`restarted_by`).
5. Every acknowledged move survived: tests/containers/log_check.py, run in the table container
   (NATS is not published on the host), finds every action id the bots saw accepted in its
   table's TABLE_LOG exactly once, one writer at a time (the fault runs' checks). The 200 games
   are not played to their end (`--no-finish`): ~200,000 more actions at the ~150 a second
   the loaded 2-core box managed through the containers would take over 20 minutes; the demo
   plays one to its end, replayed, verified and scored. `--finish` plays them all and then
   asks the load test's own check (every game replayed, verified, scored as replayed).
6. `make down-containers`, then podman's containers, pods, networks, volumes and secrets are
   listed again: nothing the run made is left, nothing that was there before is gone.

Prints, last, one JSON line.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
LOG_CHECK = Path(__file__).with_name("log_check.py")
KINDS = ("container", "pod", "network", "volume", "secret")
LISTINGS: dict[str, list[str]] = {
    "container": ["ps", "-a", "--format", "{{.Names}}"],
    "pod": ["pod", "ls", "--format", "{{.Name}}"],
    "network": ["network", "ls", "--format", "{{.Name}}"],
    "volume": ["volume", "ls", "--format", "{{.Name}}"],
    "secret": ["secret", "ls", "--format", "{{.Name}}"],
}
RUN_ENV = (
    # Finished tables keep their logs, so the check finds every accepted action (the fault runs'
    # setting, tests/cluster/fault_nats.py).
    "table:TRIX_TABLE_PURGE_FINISHED=false",
    # The load test's own platform's settings (trix.loadtest.runner.start_platform): bots at full
    # speed in the finish are far above a phone's 20 messages/s; tables fill with the swarm's players.
    "gateway:TRIX_GATEWAY_RATE_PER_S=1000",
    # Every player comes through Envoy, one address: the per-address bounds of sign-ins and new
    # accounts would refuse the 800 (trix.embedded's settings for its 127.0.0.1).
    "gateway:TRIX_GATEWAY_SIGNIN_BURST=1000000",
    "gateway:TRIX_GATEWAY_NEW_ACCOUNTS_BURST=1000000",
    "gateway:TRIX_GATEWAY_RATE_BURST=2000",
    "matchmaking:TRIX_MATCHMAKING_BOT_FILL_S=20",
)
RUN_REPLICAS = ("table=2",)
"""Two table replicas (the dev overlay plays one; the manifests' autoscaler asks for three at
least): the killed one's tables move to the other within the bots' retries, as in `trix
loadtest failover`. With the only replica killed its tables wait for its restart (~15 s on the
loaded box), longer than a client retries an action: 41 errors in a run with one."""
TABLE_CONTAINER = "table-0-table"
"""kube play names a container `<pod>-<container>`."""
RESTART_AFTER_S = 3.0
"""A killed container podman has not started again after this long is started by the harness."""
NATS_KILL_AT_S = 10.0
TABLE_KILL_AT_S = 35.0
"""Seconds into the load test's measured window."""
NATS_TARGETS = {"lease-leader": "KV_table_leases", "log-leader": "TABLE_LOG"}
"""`--kill-nats`: the NATS pod killed is the leader of this stream when the window starts. The
default, `lease-leader`, is the most harmful: the table leases' bucket is a memory stream, and
with one copy its node's restart emptied it and two table replicas wrote one log under the same
epoch (docs/deploy.md); when it leads on TABLE_LOG's node too, both leaders go at once.
`log-leader` is the earlier runs' choice (appends stall until TABLE_LOG elects a new leader)."""
EDGE = re.compile(r"^edge (https?://\S+) \(CA (\S+);")


def inventory(podman: Callable[[list[str]], str]) -> dict[str, set[str]]:
    """Every container, pod, network, volume and secret podman has, by kind."""
    return {kind: {n for n in podman(LISTINGS[kind]).splitlines() if n.strip()} for kind in KINDS}


def leftovers(before: dict[str, set[str]], after: dict[str, set[str]]) -> dict[str, dict[str, list[str]]]:
    """What the run left behind (in `after`, not in `before`) and what it removed that it had
    not made (in `before`, not in `after`), by kind; empty lists when clean."""
    return {
        "left": {k: sorted(after.get(k, set()) - before.get(k, set())) for k in KINDS},
        "removed_others": {k: sorted(before.get(k, set()) - after.get(k, set())) for k in KINDS},
    }


def clean(diff: dict[str, dict[str, list[str]]]) -> bool:
    return not any(names for side in diff.values() for names in side.values())


def nats_target(leaders: dict[str, Any], kill_nats: str) -> str:
    """The NATS pod to kill: the leader of `NATS_TARGETS[kill_nats]` (nats-0 when none is known)."""
    return str(leaders.get(NATS_TARGETS[kill_nats]) or "nats-0")


def edge_of(output: str) -> tuple[str, str]:
    """(host:port, CA file) from `python -m trix.containers up`'s last line."""
    for line in reversed(output.splitlines()):
        m = EDGE.match(line.strip())
        if m:
            url, ca = m.groups()
            return url.split("://", 1)[1].rstrip("/"), ca
    raise ValueError("no `edge URL (CA file; ...)` line in the output of up")


def last_json(output: str) -> dict[str, Any]:
    """The last line of `output` that is a JSON object."""
    for line in reversed(output.splitlines()):
        line = line.strip()
        if line.startswith("{"):
            try:
                value = json.loads(line)
            except json.JSONDecodeError:
                continue
            if isinstance(value, dict):
                return value
    raise ValueError("no JSON line in the output")


@dataclass
class Fault:
    pod: str
    container: str
    at_s: float
    """Seconds into the measured window."""
    restarted_by: str = ""
    down_s: float = 0.0
    """From the kill until the container ran again."""


@dataclass
class Harness:
    state: Path
    tables: int = 200
    duration: float = 60.0
    finish: bool = False
    kill_nats: str = "lease-leader"
    say: Callable[[str], None] = print
    steps: dict[str, float] = field(default_factory=dict)
    faults: list[Fault] = field(default_factory=list)
    leaders: dict[str, Any] = field(default_factory=dict)
    """The NATS pods leading TABLE_LOG and the leases when the window started."""

    def podman(self, args: list[str], *, stdin: str | None = None, check: bool = True) -> str:
        out = subprocess.run(["podman", *args], input=stdin, capture_output=True, text=True, timeout=900)
        if check and out.returncode != 0:
            raise RuntimeError(f"podman {' '.join(args[:3])}: {out.stderr.strip()[-400:]}")
        return out.stdout

    def step(self, name: str, cmd: list[str], *, timeout: float = 1800) -> str:
        """Run one step, its output shown as it comes and returned; timed into `steps`."""
        self.say(f"== {name}: {' '.join(cmd)}")
        started = time.monotonic()
        proc = subprocess.Popen(cmd, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        lines: list[str] = []
        assert proc.stdout is not None
        for line in proc.stdout:
            lines.append(line)
            self.say(f"   {line.rstrip()}")
        code = proc.wait(timeout=timeout)
        self.steps[f"{name}_s"] = round(time.monotonic() - started, 1)
        if code != 0:
            raise StepFailed(name, code, "".join(lines))
        return "".join(lines)

    # -- faults

    def running(self, container: str) -> tuple[bool, str]:
        out = self.podman(["inspect", container, "--format", "{{.State.Status}} {{.RestartCount}}"], check=False)
        status, _, restarts = out.strip().partition(" ")
        return status == "running", restarts

    def kill(self, pod: str, container: str, window_start: float) -> None:
        fault = Fault(pod, container, round(time.monotonic() - window_start, 1))
        self.faults.append(fault)
        _, restarts_before = self.running(container)
        killed = time.monotonic()
        self.podman(["kill", container])
        self.say(f"== fault: podman kill {container} ({fault.at_s} s into the window)")
        time.sleep(1.0)
        while time.monotonic() - killed < RESTART_AFTER_S:
            up, restarts = self.running(container)
            if up and restarts != restarts_before:
                fault.restarted_by = "podman"
                break
            time.sleep(0.2)
        if not fault.restarted_by:
            self.start_again(pod, container, killed)
            fault.restarted_by = "harness (podman pod start)"
        fault.down_s = round(time.monotonic() - killed, 1)
        self.say(f"== fault: {container} running again after {fault.down_s} s, restarted by {fault.restarted_by}")

    def save_logs(self) -> None:
        """Every container's log into `<state>/logs/` (what to read when a check fails)."""
        folder = self.state / "logs"
        folder.mkdir(parents=True, exist_ok=True)
        for name in sorted(inventory(lambda a: self.podman(a, check=False))["container"]):
            out = subprocess.run(["podman", "logs", name], capture_output=True, text=True, timeout=120)
            (folder / f"{name}.log").write_text(out.stdout + out.stderr)

    def start_again(self, pod: str, container: str, killed: float) -> None:
        """`podman pod start` until the container runs (2 min at most). Its pod's infra container
        stops when the pod's only container died (kube play's pods exit when their last
        container does) and a start while it is stopping fails ("unable to restart a container
        in a paused or unknown state", seen here): asked again a second later."""
        last = ""
        while time.monotonic() - killed < 120:
            out = subprocess.run(["podman", "pod", "start", pod], capture_output=True, text=True, timeout=120)
            last = out.stderr.strip()[-300:]
            for _ in range(10):
                if self.running(container)[0]:
                    return
                time.sleep(0.2)
            time.sleep(1.0)
        raise RuntimeError(f"{container} not running again 2 min after the kill: {last}")

    def in_table(self, mode: str, stdin: str = "") -> dict[str, Any]:
        """tests/containers/log_check.py in the table container, as its NATS user."""
        out = self.podman(
            ["exec", "-i", TABLE_CONTAINER, "python", "-c", LOG_CHECK.read_text(), mode], stdin=stdin or "{}"
        )
        return last_json(out)

    def loadtest(self, edge: str, ca: str) -> dict[str, Any]:
        """The load test, with the two kills in its measured window."""
        out_dir = self.state / "loadtest"
        shutil.rmtree(out_dir, ignore_errors=True)
        cmd = [
            str(Path(sys.executable).with_name("trix")),
            "loadtest",
            "steady",
            "--tables",
            str(self.tables),
            "--duration",
            str(self.duration),
            "--server",
            edge,
            "--ca",
            ca,
            "--keep-accepted",
            # Seating 800 players through one Envoy and gateway took ~35 s with a load average
            # of 12, over 60 s (the default for 200 tables) with one of 35 on the shared box.
            "--ramp-timeout",
            "180",
            "--max-errors",
            "0",
            *([] if self.finish else ["--no-finish"]),
            "--echo-seconds",
            "0",
            "--floor-seconds",
            "0",
            "--out",
            str(out_dir),
        ]
        self.say(f"== loadtest: {' '.join(cmd)}")
        started = time.monotonic()
        proc = subprocess.Popen(cmd, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        assert proc.stdout is not None
        lines: list[str] = []
        killer: threading.Thread | None = None
        failures: list[str] = []

        def faults(window_start: float) -> None:
            try:
                self.leaders = self.in_table("leader")
                nats_pod = nats_target(self.leaders, self.kill_nats)
                time.sleep(max(0.0, window_start + NATS_KILL_AT_S - time.monotonic()))
                self.kill(nats_pod, f"{nats_pod}-nats", window_start)
                time.sleep(max(0.0, window_start + TABLE_KILL_AT_S - time.monotonic()))
                self.kill("table-0", TABLE_CONTAINER, window_start)
            except Exception as err:  # noqa: BLE001 - reported in the summary, the run goes on
                failures.append(f"{type(err).__name__}: {err}")

        for line in proc.stdout:
            lines.append(line)
            self.say(f"   {line.rstrip()}")
            if killer is None and "window starts" in line:
                killer = threading.Thread(target=faults, args=(time.monotonic(),), daemon=True)
                killer.start()
        code = proc.wait()
        if killer is not None:
            killer.join(300)
        self.steps["loadtest_s"] = round(time.monotonic() - started, 1)
        summary = last_json("".join(lines))
        summary["exit_code"] = code
        if killer is None:
            failures.append("the load test's window never started: nothing was killed")
        summary["fault_failures"] = failures
        return summary


class StepFailed(RuntimeError):
    def __init__(self, name: str, code: int, output: str) -> None:
        super().__init__(f"{name} exited {code}: {output.strip()[-600:]}")
        self.name = name


LOADTEST_KEYS = (
    "tables",
    "errors",
    "errors_by_code",
    "error_samples",
    "retried_by_code",
    "reconnects",
    "games_finished",
    "games_verified",
    "failures",
    "actions_per_s",
    "p50_ms",
    "p99_ms",
    "max_ms",
    "finish_s",
    "breaches",
    "ok",
    "exit_code",
    "accepted_kept",
    "fault_failures",
)


def run(args: argparse.Namespace, say: Callable[[str], None]) -> dict[str, Any]:
    h = Harness(
        args.state, tables=args.tables, duration=args.duration, finish=args.finish, kill_nats=args.kill_nats, say=say
    )
    args.state.mkdir(parents=True, exist_ok=True)
    py = sys.executable
    t0 = time.monotonic()
    load_start = [round(x, 2) for x in os.getloadavg()]
    before = inventory(h.podman)
    result: dict[str, Any] = {"load_avg_start": load_start, "finish": args.finish, "kill_nats": args.kill_nats}
    try:
        if not args.skip_image:
            out = h.step("image", ["make", "image"])
            result["image"] = next((ln.strip() for ln in reversed(out.splitlines()) if ln.startswith("image ")), "")
        edge, ca = edge_of(h.step("up", ["make", "up-containers", f"CONTAINERS_ARGS={up_args()}"]))
        result["edge"] = edge
        trix = str(Path(py).with_name("trix"))
        result["ready_s"] = wait_ready(edge, ca)
        h.step("demo", [trix, "demo", "--server", edge, "--ca", ca])
        result["demo"] = "ok"
        lt = h.loadtest(edge, ca)
        result["loadtest"] = {k: lt.get(k) for k in LOADTEST_KEYS}
        result["faults"] = [f.__dict__ for f in h.faults]
        result["nats_leaders_at_window"] = h.leaders
        accepted = (args.state / "loadtest" / "accepted.json").read_text()
        started = time.monotonic()
        result["log_check"] = h.in_table("check", accepted)
        h.steps["log_check_s"] = round(time.monotonic() - started, 1)
    except Exception as err:  # noqa: BLE001 - reported in the JSON; the platform still goes down
        result["error"] = f"{type(err).__name__}: {str(err)[-800:]}"
    finally:
        try:
            shutil.rmtree(args.state / "logs", ignore_errors=True)
            h.save_logs()
        except Exception as err:  # noqa: BLE001 - the logs are a help, not a step
            say(f"logs not saved: {err}")
        if args.keep_up:
            say("== --keep-up: the platform stays up; `make down-containers` removes it")
            result["kept_up"] = True
        else:
            try:
                h.step("down", ["make", "down-containers"])
            except Exception as err:  # noqa: BLE001
                result.setdefault("error", f"down: {err}")
            diff = leftovers(before, inventory(h.podman))
            result["nothing_left"] = clean(diff)
            if not result["nothing_left"]:
                result["leftovers"] = diff
    result["steps_s"] = h.steps
    result["load_avg_end"] = [round(x, 2) for x in os.getloadavg()]
    result["seconds"] = round(time.monotonic() - t0, 1)
    result["ok"] = verdict_ok(result)
    return result


def up_args() -> str:
    """`make up-containers CONTAINERS_ARGS=...` for the run's settings (`RUN_ENV`)."""
    return " ".join([*(f"--env {item}" for item in RUN_ENV), *(f"--replicas {r}" for r in RUN_REPLICAS)])


def verdict_ok(result: dict[str, Any]) -> bool:
    """Every step passed: the demo, the load test with 0 errors (and, with `finish`, every game
    verified), both faults made, no acknowledged move lost or applied twice, nothing left behind."""
    lt = result.get("loadtest") or {}
    logs = result.get("log_check") or {}
    return bool(
        "error" not in result
        and result.get("demo") == "ok"
        and lt.get("errors") == 0
        and lt.get("tables")
        and (not result.get("finish") or lt.get("games_verified") == lt.get("tables"))
        and not lt.get("fault_failures")
        and len(result.get("faults") or []) == 2
        and logs.get("accepted", 0) > 0
        and logs.get("tables_checked") == lt.get("tables")
        and logs.get("lost") == 0
        and logs.get("applied_twice") == 0
        and logs.get("two_writers") == 0
        and result.get("nothing_left")
    )


def wait_ready(edge: str, ca: str, timeout_s: float = 180.0) -> float:
    """Seconds until a sign-in through the edge is answered (podman runs no readiness probe)."""
    import asyncio

    from trix.client import GatewayClient

    async def once() -> None:
        client = GatewayClient(edge, ca_file=ca)
        try:
            await client.sign_in(f"containers-ready-{time.time_ns()}", "ready")
        finally:
            await client.channel.close()

    started = time.monotonic()
    while True:
        try:
            asyncio.run(once())
            return round(time.monotonic() - started, 1)
        except Exception:
            if time.monotonic() - started > timeout_s:
                raise
            time.sleep(2.0)


def _interrupted(_signum: int, _frame: Any) -> None:
    raise KeyboardInterrupt


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tables", type=int, default=200)
    parser.add_argument("--duration", type=float, default=60.0, help="the load test's measured window (s)")
    parser.add_argument("--state", type=Path, default=REPO / ".state" / "test-containers")
    parser.add_argument(
        "--finish", action="store_true", help="play every game to its end, replayed and verified (20+ min more)"
    )
    parser.add_argument(
        "--kill-nats",
        choices=sorted(NATS_TARGETS),
        default="lease-leader",
        help="the NATS pod killed: the leader of KV_table_leases (default) or of TABLE_LOG",
    )
    parser.add_argument("--keep-up", action="store_true", help="diagnosis: leave the platform up at the end (never ok)")
    parser.add_argument("--skip-image", action="store_true", help="use the image as built (no `make image`)")
    args = parser.parse_args()
    os.environ.setdefault("CONTAINERS_CONF", str(REPO / "deploy" / "podman" / "containers.conf"))
    if shutil.which("podman") is None:
        print("podman not found: apt-get install podman runc", file=sys.stderr)
        return 2
    signal.signal(signal.SIGTERM, _interrupted)  # a cancelled run still takes the platform down
    result = run(args, lambda m: print(m, flush=True))
    print(json.dumps(result), flush=True)
    return 0 if result["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
