"""The gateway API's conformance client (issue 40) against a real `trix up`: conformance/
(TypeScript on Node, @grpc/grpc-js, native gRPC over HTTP/2 through the Envoy edge, written
from proto/, README.md and docs/rules.md alone) plays a whole game of each variant at a
private table with three bots, answering every turn from the legal moves the server sends,
drops and resumes its Session stream mid-deal, trips the rate limit and waits the delay it is
given, and checks each finished game's record (docs/rules.md §11-§12). The platform runs
with its production limits (no TRIX_ setting): the client lives with them. Its JSON summary
(the last line it prints) is asserted here, one rule per test."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from support.processes import OutputLines, stop_process

REPO = Path(__file__).resolve().parents[2]
CLIENT = REPO / "conformance" / "dist" / "client.js"
VARIANTS = ["VARIANT_TRIX", "VARIANT_TRIX_PARTNERSHIP", "VARIANT_COMPLEX", "VARIANT_COMPLEX_PARTNERSHIP"]
READY_S = 120.0
CLIENT_S = 150.0
"""The four games take about 30 s on an idle box (most of it the rate limit's pauses)."""


@pytest.fixture(scope="module")
def edge(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """`trix up --edge` as a developer starts it; the edge's host:port until the module ends."""
    state = tmp_path_factory.mktemp("conformance-up")
    env = {k: v for k, v in os.environ.items() if not k.startswith("TRIX_")}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO / "services"), env.get("PYTHONPATH", "")]))
    env["PYTHONUNBUFFERED"] = "1"
    argv = [sys.executable, "-m", "trix.cli", "up", "--state-dir", str(state / "state"), "--fresh", "--edge"]
    argv += ["--grace", "5", "--web-dir", str(state)]
    proc = subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        lines = OutputLines(proc)
        lines.wait_for("trix up: ready", READY_S)
        edge_line = next(line for line in lines.seen if line.startswith("trix up: edge"))
        yield edge_line.split("http://", 1)[1].split()[0]
    finally:
        stop_process(proc, 60.0)


@pytest.fixture(scope="module")
def summary(edge: str) -> dict[str, Any]:
    """One run of the client over the four variants; its JSON summary."""
    node = shutil.which("node")
    assert node, "node (20+) is needed for the conformance client"
    assert CLIENT.is_file(), "the conformance client is not built: make conformance-build"
    argv = [node, str(CLIENT), "--target", edge, "--proto-dir", str(REPO / "proto"), "--variants", ",".join(VARIANTS)]
    run = subprocess.run(argv, capture_output=True, text=True, timeout=CLIENT_S, check=False)
    assert run.returncode == 0, f"the conformance client failed:\n{run.stderr[-4000:]}"
    result: dict[str, Any] = json.loads(run.stdout.strip().splitlines()[-1])
    print(json.dumps({k: v for k, v in result.items() if k != "games"}))
    return result


def test_every_variant_is_played_to_its_end_through_the_edge(summary: dict[str, Any]) -> None:
    assert summary["variants_played"] == VARIANTS
    deals = {g["variant"]: g["deals"] for g in summary["games"]}
    assert deals == {
        "VARIANT_TRIX": 20,
        "VARIANT_TRIX_PARTNERSHIP": 20,
        "VARIANT_COMPLEX": 8,
        "VARIANT_COMPLEX_PARTNERSHIP": 8,
    }
    assert all(g["turns_played"] > 0 for g in summary["games"])


def test_legal_moves_from_the_server_are_enough_no_action_is_refused(summary: dict[str, Any]) -> None:
    assert summary["illegal_actions_sent"] == 0, [g["record_problems"] for g in summary["games"]]


def test_no_turn_is_lost_to_a_timer(summary: dict[str, Any]) -> None:
    assert summary["turns_lost_to_timer"] == 0


def test_the_stream_carries_every_event_in_sequence(summary: dict[str, Any]) -> None:
    assert summary["sequence_gaps"] == 0


def test_a_stream_dropped_mid_deal_resumes_with_no_gap(summary: dict[str, Any]) -> None:
    assert summary["resumes"] == len(VARIANTS)
    assert summary["resume_gaps"] == 0
    for game in summary["games"]:
        assert game["resume"]["replayed_events"] > 0, game["resume"]  # the table moved on meanwhile


def test_a_resume_is_acknowledged_with_its_request_id(summary: dict[str, Any]) -> None:
    assert summary["resume_acknowledged"] is True


def test_the_rate_limit_is_met_and_its_delay_given_and_honoured(summary: dict[str, Any]) -> None:
    limits = summary["rate_limit"]
    for where in ("plain_call", "session_stream"):
        assert limits[where]["met"], where
        assert limits[where]["retry_delay_ms"] is not None and limits[where]["retry_delay_ms"] > 0, where
        assert limits[where]["honoured"], where
    assert summary["rate_limit_delays_missing"] == 0  # every refused action came with its delay


def test_every_record_verifies_against_its_commitment_and_what_was_dealt(summary: dict[str, Any]) -> None:
    assert summary["records_verified"] == len(VARIANTS), [g["record_problems"] for g in summary["games"]]


def test_every_card_carries_the_deal_it_was_played_in(summary: dict[str, Any]) -> None:
    # issue 40: the last card of a deal carried the next deal's index.
    assert summary["deal_index_mismatches"] == 0
