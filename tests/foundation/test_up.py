"""`trix up` from a test: every service healthy, the dev schedule's competition listed to a
player, a SIGKILLed service restarted and healthy again, nothing left running after the stop."""

from __future__ import annotations

import asyncio
import os
import queue
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import grpc
from foundation_support import service_env
from grpc_health.v1 import health_pb2, health_pb2_grpc

from trix.client import GatewayClient
from trix.competitions.schedule import SYSTEM_ORGANISER, competition_id_of
from trix.declarations import names_of
from trix.v1 import competitions_pb2, gateway_pb2

ENDPOINT = re.compile(r"trix up: (\S+)\s+grpc=127\.0\.0\.1:(\d+)\s+metrics=\S+\s+pid=(\d+)")
NATS_LINE = re.compile(r"trix up: nats\s+\S+\s+pid=(\d+)")


class UpProcess:
    def __init__(self, state_dir: Path, *args: str) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "trix.cli", "up", "--state-dir", str(state_dir), "--fresh", "--grace", "8", *args],
            env=service_env(),
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        self.lines: queue.Queue[str] = queue.Queue()
        self.output: list[str] = []
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.put(line.rstrip("\n"))

    def wait_for(self, pattern: str, timeout_s: float) -> str:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            try:
                line = self.lines.get(timeout=0.2)
            except queue.Empty:
                continue
            self.output.append(line)
            if re.search(pattern, line):
                return line
        raise TimeoutError(f"no line matching {pattern!r} in {timeout_s}s; output so far:\n" + "\n".join(self.output))


def alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            state = f.read().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        return False
    return state != "Z"


def serving(port: int) -> bool:
    with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
        try:
            reply = health_pb2_grpc.HealthStub(channel).Check(health_pb2.HealthCheckRequest(), timeout=2)
        except grpc.RpcError:
            return False
    return bool(reply.status == health_pb2.HealthCheckResponse.SERVING)


async def _scheduled(gateway_port: int) -> list[competitions_pb2.Competition]:
    """The system's competitions open for registration, as a player lists them through the
    gateway, once the competitions service has created its schedule's (its first ticks)."""
    client = GatewayClient(f"127.0.0.1:{gateway_port}")
    try:
        await client.sign_in("trix-up-test-device-secret", "up")
        request = gateway_pb2.ListCompetitionsRequest(listing=competitions_pb2.COMPETITION_LISTING_OPEN)
        deadline = time.monotonic() + 60
        while True:
            reply = await client.stub.ListCompetitions(request, metadata=client.metadata, timeout=10)
            system = [c for c in reply.competitions if c.organiser_id == SYSTEM_ORGANISER]
            if system or time.monotonic() > deadline:
                return system
            await asyncio.sleep(0.2)
    finally:
        await client.close()


def test_trix_up_ready_restart_and_clean_stop(tmp_path: Path) -> None:
    up = UpProcess(tmp_path / "state", "--replicas", "table=2")
    pids: set[int] = set()
    try:
        up.wait_for(r"\bready\b", 180)
        endpoints = {m.group(1): (int(m.group(2)), int(m.group(3))) for m in map(ENDPOINT.search, up.output) if m}
        nats_pid = next(int(m.group(1)) for m in map(NATS_LINE.search, up.output) if m)
        assert set(endpoints) == {"table-1", "table-2"} | set(names_of()) - {"table"}
        pids = {pid for _, pid in endpoints.values()} | {nats_pid}
        for port, _ in endpoints.values():
            assert serving(port)
        # The dev schedule, loaded by default: a free 16-entrant knockout open for registration.
        scheduled = asyncio.run(_scheduled(endpoints["gateway"][0]))
        assert scheduled, "trix up's competitions service lists no scheduled competition"
        for c in scheduled:
            assert c.competition_id == competition_id_of(
                SYSTEM_ORGANISER, f"schedule.free-16-knockout.{c.options.starts_at_ms}"
            )
            assert (c.options.capacity, c.options.rounds, c.options.entry_fee) == (16, 2, 0)
            assert c.options.format == competitions_pb2.COMPETITION_FORMAT_KNOCKOUT
            assert c.options.starts_at_ms % 600_000 == 0  # every 10 minutes

        port, victim = endpoints["timers"]
        os.kill(victim, signal.SIGKILL)
        up.wait_for(rf"timers \(pid={victim}\) died with signal SIGKILL; restarting", 60)
        restarted = up.wait_for(r"timers restarted \(pid=\d+", 60)
        new_pid = int(re.search(r"pid=(\d+)", restarted).group(1))  # type: ignore[union-attr]
        pids.add(new_pid)
        assert new_pid != victim
        up.wait_for(r"timers is SERVING again", 120)
        assert serving(port)
    finally:
        up.proc.send_signal(signal.SIGTERM)
        try:
            code = up.proc.wait(90)
        finally:
            if up.proc.poll() is None:
                up.proc.kill()
    assert code == 0
    time.sleep(0.5)
    left = [pid for pid in pids if alive(pid)]
    assert left == [], f"processes left after trix up stopped: {left}"


def test_trix_up_sigkill_leaves_no_orphan(tmp_path: Path) -> None:
    up = UpProcess(tmp_path / "state")
    try:
        up.wait_for(r"\bready\b", 180)
        pids = {int(m.group(3)) for m in map(ENDPOINT.search, up.output) if m}
        pids |= {int(m.group(1)) for m in map(NATS_LINE.search, up.output) if m}
    finally:
        up.proc.kill()  # SIGKILL: no chance to clean up; PR_SET_PDEATHSIG must
        up.proc.wait(30)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and any(alive(p) for p in pids):
        time.sleep(0.2)
    left = [pid for pid in pids if alive(pid)]
    for pid in left:  # never leave them behind, even when the test fails
        os.kill(pid, signal.SIGKILL)
    assert left == [], f"orphans after SIGKILL of trix up: {left}"


def test_stopping_an_embedded_platform_gives_the_caller_its_sigint_handler_back(tmp_path: Path) -> None:
    """The stop ignores a second Ctrl-C while it runs, then puts the caller's handler back: a
    process left ignoring SIGINT passes the ignore on to every program it starts (a `trix
    play` started afterwards by the same test run never saw its Ctrl-C)."""
    from trix.embedded import EmbeddedPlatform

    def mine(signum: int, frame: object) -> None:
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGINT, mine)
    try:
        with EmbeddedPlatform(tmp_path / "state", fresh=True) as platform:
            assert platform.gateway_target
        assert signal.getsignal(signal.SIGINT) is mine
    finally:
        signal.signal(signal.SIGINT, previous)


async def test_an_embedded_platform_in_async_with_serves_inside_and_leaves_nothing_running_after(
    tmp_path: Path,
) -> None:
    """The supervisor's public face: `async with` starts every service (SERVING when the body
    runs, the event loop free meanwhile) and stops every process it started on the way out."""
    from trix.embedded import EmbeddedPlatform

    ticks = 0

    async def tick() -> None:
        nonlocal ticks
        while True:
            await asyncio.sleep(0.05)
            ticks += 1

    ticker = asyncio.ensure_future(tick())
    try:
        async with EmbeddedPlatform(tmp_path / "state", fresh=True) as platform:
            assert ticks > 10  # the loop ran while the platform started (seconds)
            sup = platform.supervisor
            children = [*sup.nats_children, *sup.services, *([sup.provisioner] if sup.provisioner else [])]
            pids = [c.proc.pid for c in children if c.proc is not None]
            assert len(pids) == len(children) == 2 + len(sup.services)
            assert all(serving(c.grpc_port) for c in sup.services)
    finally:
        ticker.cancel()
    await asyncio.sleep(0.5)
    left = [pid for pid in pids if alive(pid)]
    assert left == [], f"processes left after the async with: {left}"
