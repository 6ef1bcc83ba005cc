"""The load test's command line: `--think` replaces a scenario's pace (issue 10: sizing how
much connected but slow players cost), and a bad range is refused with a clear message; `--server`
takes several gateways, the bot workers spread over them round-robin (issue 16); the last ticks are
read without hanging on a message a killed worker cut."""

from __future__ import annotations

import argparse
import multiprocessing as mp
import os
import struct
import time

import pytest

from trix.gateway.config import GRPC_CORE_EXPERIMENTS, GRPC_EXPERIMENTS_ENV
from trix.loadtest.arguments import add_loadtest_arguments, scenario_of, worker_targets
from trix.loadtest.floor import spawned_on_core_poller
from trix.loadtest.runner import start_worker
from trix.loadtest.sampling import last_ticks
from trix.loadtest.scenarios import SCENARIOS
from trix.loadtest.worker import WorkerConfig
from trix.processes import free_port


def _parse(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="trix loadtest")
    add_loadtest_arguments(parser)
    return parser.parse_args(list(argv))


def test_think_override_replaces_only_the_scenarios_pace() -> None:
    churn = scenario_of(_parse("churn", "--think", "6,7"))
    assert (churn.think_min_s, churn.think_max_s) == (6.0, 7.0)
    # everything else of the scenario stays: churn still cuts players and churns the queue
    assert churn.disconnect_per_min == SCENARIOS["churn"].disconnect_per_min > 0
    assert churn.queue_churn == SCENARIOS["churn"].queue_churn > 0
    assert scenario_of(_parse("steady", "--think", "4")).think_max_s == 4.0  # one value: fixed think time


def test_without_think_the_scenario_keeps_its_own_pace() -> None:
    assert scenario_of(_parse("steady")) == SCENARIOS["steady"]


@pytest.mark.parametrize("bad", ["3,1", "-1,2", "fast", "1,x"])
def test_think_range_must_be_min_not_above_max_and_non_negative(bad: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        _parse("steady", "--think", bad)
    assert exit_info.value.code == 2
    assert "--think" in capsys.readouterr().err


def test_server_takes_several_gateways_and_the_workers_are_spread_over_them_round_robin() -> None:
    args = _parse("steady", "--server", "127.0.0.1:5001, 127.0.0.1:5002")
    assert args.server == ("127.0.0.1:5001", "127.0.0.1:5002")
    assert _parse("steady").server == () and _parse("steady").gateways == 1
    assert _parse("steady", "--gateways", "2").gateways == 2
    assert worker_targets(args.server, 5) == ["127.0.0.1:5001", "127.0.0.1:5002"] * 2 + ["127.0.0.1:5001"]
    assert worker_targets(("a:1",), 3) == ["a:1"] * 3


@pytest.mark.parametrize("bad", ["", "nohost", "a:1,b"])
def test_server_refuses_an_address_without_a_port(bad: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        _parse("steady", "--server", bad)
    assert exit_info.value.code == 2
    assert "--server" in capsys.readouterr().err


def test_the_last_ticks_are_read_and_a_cut_message_does_not_hang_the_run() -> None:
    ctx = mp.get_context("spawn")
    out = ctx.Queue()
    out.put(("tick", {"at": 1}))
    out.put(("done", {}))
    out.put(("tick", {"at": 2}))
    time.sleep(0.2)  # the queue's feeder thread has written them to the pipe
    assert last_ticks(out, 5.0) == [{"at": 1}, {"at": 2}]
    # a worker killed while it wrote: the pipe holds a message's length and part of it
    os.write(out._writer.fileno(), struct.pack("!i", 100) + b"cut")  # type: ignore[attr-defined]
    started = time.monotonic()
    assert last_ticks(out, 1.0) == []
    assert time.monotonic() - started < 3.0
    out._writer.close()  # type: ignore[attr-defined]  # the blocked reader thread sees EOF and ends
    out.close()


def test_floor_server_is_spawned_with_the_gateways_grpc_core_settings() -> None:
    """ADR 0022: the floor's gRPC server runs on the same gRPC core settings as the gateway
    (set while it is spawned, then taken back); an operator's own value is kept for both."""
    environ: dict[str, str] = {}
    with spawned_on_core_poller(environ):
        assert environ[GRPC_EXPERIMENTS_ENV] == GRPC_CORE_EXPERIMENTS
    assert GRPC_EXPERIMENTS_ENV not in environ
    operators = {GRPC_EXPERIMENTS_ENV: "-some_experiment"}
    with spawned_on_core_poller(operators):
        assert operators[GRPC_EXPERIMENTS_ENV] == "-some_experiment"
    assert operators == {GRPC_EXPERIMENTS_ENV: "-some_experiment"}


def _wait_for_exec(pid: int, timeout_s: float = 30.0) -> None:
    """Until the spawned process runs multiprocessing's `spawn_main` (it has exec'd): `start`
    returns right after the fork."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            if b"spawn_main" in f.read():
                return
        time.sleep(0.01)
    raise AssertionError(f"process {pid} did not exec in {timeout_s}s")


def test_bot_workers_are_spawned_on_the_gateways_grpc_core_poller(monkeypatch: pytest.MonkeyPatch) -> None:
    """ADR 0022 addendum: a real bot worker (spawned, signing in to a port nobody serves, so it
    lives on retrying) has the gateway's GRPC_EXPERIMENTS in its environment from its start,
    and the load test's own environment is left as it was."""
    monkeypatch.delenv(GRPC_EXPERIMENTS_ENV, raising=False)  # an operator's own would be kept
    ctx = mp.get_context("spawn")
    cfg = WorkerConfig(
        worker=0,
        target=f"127.0.0.1:{free_port()}",
        run_id="spawn",
        players=1,
        guests=0,
        think_min_s=1.0,
        think_max_s=1.0,
        disconnect_per_min=0.0,
        ramp_s=0.0,
        stop_at=time.time() + 60,
        max_actions=1,
    )
    out, fast = ctx.Queue(), ctx.Event()
    worker = start_worker(ctx, cfg, out, fast)
    try:
        assert GRPC_EXPERIMENTS_ENV not in os.environ
        _wait_for_exec(worker.pid)  # before its exec, /proc shows the environment of the fork
        with open(f"/proc/{worker.pid}/environ", "rb") as f:
            environ = dict(item.split(b"=", 1) for item in f.read().split(b"\0") if b"=" in item)
        assert environ[GRPC_EXPERIMENTS_ENV.encode()] == GRPC_CORE_EXPERIMENTS.encode()
        assert worker.is_alive()  # still retrying its sign-in: the environment read was its own
    finally:
        worker.terminate()
        worker.join(30)
        out.close()
    assert worker.exitcode is not None
