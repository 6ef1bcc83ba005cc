"""The pieces of `make test-containers` (containers_run.py, log_check.py) that need no podman:
the leftover comparison, the parsing of each step's output, the log verdict and the run's
overall verdict (issue 41). The run itself is outside CI (podman, root, ~7 min)."""

from __future__ import annotations

import asyncio
import copy
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import containers_run as cr
import nats
import pytest
from log_check import WRITER_HEADER, verdict

from support.nats import AuthNats
from trix.natsio import permissions, subjects


def inv(**kinds: set[str]) -> dict[str, set[str]]:
    return {k: set(kinds.get(k, set())) for k in cr.KINDS}


def test_leftovers_name_what_the_run_left_and_what_it_removed_that_it_had_not_made() -> None:
    before = inv(container={"other-c"}, network={"podman", "theirs"}, secret={"kept"})
    after = inv(container={"other-c", "nats-0-nats"}, network={"podman"}, secret={"kept"}, volume={"trix-js-nats-0"})
    diff = cr.leftovers(before, after)
    assert diff["left"]["container"] == ["nats-0-nats"]
    assert diff["left"]["volume"] == ["trix-js-nats-0"]
    assert diff["removed_others"]["network"] == ["theirs"]
    assert not cr.clean(diff)
    assert cr.clean(cr.leftovers(before, copy.deepcopy(before)))


def test_inventory_lists_every_kind_through_podman_and_drops_blank_lines() -> None:
    asked: list[list[str]] = []

    def podman(args: list[str]) -> str:
        asked.append(args)
        return "a\n\nb\n" if args[0] == "ps" else ""

    got = cr.inventory(podman)
    assert got["container"] == {"a", "b"}
    assert all(got[k] == set() for k in cr.KINDS if k != "container")
    assert [a[0] for a in asked] == ["ps", "pod", "network", "volume", "secret"]


def test_edge_and_ca_come_from_the_line_up_prints() -> None:
    out = "played envoy-0\nedge https://localhost:8443 (CA /x/secrets/ca.crt; `make down-containers` removes it all)\n"
    assert cr.edge_of(out) == ("localhost:8443", "/x/secrets/ca.crt")
    with pytest.raises(ValueError, match="no `edge"):
        cr.edge_of("played nats-0\n")


def test_the_nats_pod_killed_leads_the_lease_bucket_unless_asked_for_the_logs_leader() -> None:
    leaders = {"TABLE_LOG": "nats-2", "TABLE_LOG_replicas": 3, "KV_table_leases": "nats-1"}
    assert cr.nats_target(leaders, "lease-leader") == "nats-1"
    assert cr.nats_target(leaders, "log-leader") == "nats-2"
    assert cr.nats_target({"TABLE_LOG": None}, "log-leader") == "nats-0"  # no leader known


def test_last_json_is_the_last_json_object_line() -> None:
    out = 'loadtest: {"not": json\n{"a": 1}\nmore text\n{"errors": 0}\nbye\n'
    assert cr.last_json(out) == {"errors": 0}
    with pytest.raises(ValueError):
        cr.last_json("no json at all\n[1, 2]\n")


def test_the_run_settings_go_to_the_workloads_as_env_arguments() -> None:
    args = cr.up_args().split()
    assert args[0::2] == ["--env"] * len(cr.RUN_ENV) + ["--replicas"] * len(cr.RUN_REPLICAS)
    assert "table:TRIX_TABLE_PURGE_FINISHED=false" in args[1::2]
    assert "table=2" in args[1::2]


def test_verdict_counts_lost_applied_twice_and_two_writers() -> None:
    accepted = {"t1": ["a", "b", "b"], "t2": ["c"], "t3": ["d"]}
    logs = {
        "t1": [("create", "table-0/1"), ("a", "table-0/1"), ("b", "table-0/1")],
        "t2": [("c", "table-0/1"), ("c", "table-0/2")],  # applied twice
        "t3": [("x", "table-0/2"), ("y", "table-1/1")],  # d lost; an older epoch wrote after a newer
    }
    got = verdict(accepted, logs)
    assert (got["accepted"], got["lost"], got["applied_twice"], got["two_writers"]) == (4, 1, 1, 1)
    assert got["tables_checked"] == 3
    clean = verdict({"t1": ["a"]}, {"t1": [("a", "table-0/1"), ("auto-3-1", "table-1/2")]})
    assert (clean["lost"], clean["applied_twice"], clean["two_writers"]) == (0, 0, 0)


def test_one_epoch_written_by_two_replicas_is_two_writers() -> None:
    got = verdict({"t": ["a", "b"]}, {"t": [("a", "table-0/3"), ("b", "table-1/3")]})
    assert got["two_writers"] == 1 and got["lost"] == 0


def passing() -> dict[str, Any]:
    return {
        "finish": True,
        "demo": "ok",
        "loadtest": {"errors": 0, "tables": 200, "games_verified": 200, "fault_failures": []},
        "faults": [{"pod": "nats-1"}, {"pod": "table-0"}],
        "log_check": {"accepted": 1000, "tables_checked": 200, "lost": 0, "applied_twice": 0, "two_writers": 0},
        "nothing_left": True,
    }


@pytest.mark.parametrize(
    "breach",
    [
        lambda r: r.update(error="up exited 1"),
        lambda r: r.pop("demo"),
        lambda r: r["loadtest"].update(errors=1),
        lambda r: r["loadtest"].update(games_verified=199),
        lambda r: r["loadtest"].update(fault_failures=["RuntimeError: podman kill"]),
        lambda r: r["faults"].pop(),
        lambda r: r["log_check"].update(lost=1),
        lambda r: r["log_check"].update(applied_twice=1),
        lambda r: r["log_check"].update(two_writers=1),
        lambda r: r["log_check"].update(tables_checked=150),
        lambda r: r["log_check"].update(accepted=0),
        lambda r: r.update(nothing_left=False),
    ],
)
def test_the_run_passes_only_when_every_step_did(breach: Any) -> None:
    assert cr.verdict_ok(passing())
    result = passing()
    breach(result)
    assert not cr.verdict_ok(result)


async def write_logs(url: str) -> None:
    """Two tables' logs as the table service writes them: t1 a, b; t2 c, then c again."""
    nc = await nats.connect(url, inbox_prefix=permissions.inbox_prefix("table").encode())
    try:
        js = nc.jetstream()
        for table_id, action_id, writer in (("t1", "a", "r0/1"), ("t1", "b", "r0/1"), ("t2", "c", "r0/1")):
            await js.publish(
                subjects.table_log(table_id), json.dumps({"id": action_id}).encode(), headers={WRITER_HEADER: writer}
            )
        await js.publish(subjects.table_log("t2"), json.dumps({"id": "c"}).encode(), headers={WRITER_HEADER: "r1/2"})
    finally:
        await nc.close()


def test_the_log_check_reads_each_tables_log_as_the_table_user(auth_nats: AuthNats) -> None:
    """log_check.py as the harness runs it (`python -c <source> check`, accepted ids on stdin),
    against a real nats-server with the services' users and streams: an accepted action in the
    log is found, a missing one is lost, one written twice is counted."""
    asyncio.run(write_logs(auth_nats.url("table")))
    env = {**os.environ, "TRIX_NATS_URL": auth_nats.url("table"), "TRIX_TLS_CA_FILE": ""}
    source = (Path(__file__).parent / "log_check.py").read_text()
    out = subprocess.run(
        [sys.executable, "-c", source, "check"],
        input=json.dumps({"t1": ["a", "b"], "t2": ["c", "d"]}),
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
        check=True,
    )
    got = cr.last_json(out.stdout)
    assert (got["accepted"], got["lost"], got["applied_twice"], got["two_writers"]) == (4, 1, 1, 0)


def test_without_finish_the_games_are_not_asked_to_be_verified() -> None:
    result = passing()
    result.update(finish=False)
    result["loadtest"].update(games_verified=0)
    assert cr.verdict_ok(result)
    result["log_check"].update(lost=1)
    assert not cr.verdict_ok(result)
