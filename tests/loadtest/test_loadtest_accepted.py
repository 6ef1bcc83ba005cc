"""`trix loadtest --keep-accepted` (issue 41, `make test-containers`): off by default (a
1,000-table run would hold a million action ids), and when on, each worker tick carries the
(table id, action id) of every action accepted since the last one, then starts afresh. The
whole path, bots to accepted.json to the log check, runs in `make test-containers`."""

from __future__ import annotations

import argparse

from trix.loadtest.arguments import add_loadtest_arguments
from trix.loadtest.worker import Stats, WorkerConfig


def _parse(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="trix loadtest")
    add_loadtest_arguments(parser)
    return parser.parse_args(list(argv))


def test_accepted_actions_are_kept_only_when_asked() -> None:
    assert _parse("steady").keep_accepted is False
    assert _parse("steady", "--keep-accepted").keep_accepted is True
    cfg = WorkerConfig(0, "127.0.0.1:1", "run", 4, 0, 0.0, 0.0, 0.0, 0.0, 0.0, 10)
    assert cfg.keep_accepted is False


def test_a_tick_carries_the_accepted_actions_since_the_last_one() -> None:
    stats = Stats()
    stats.accepted += [("t1", "a1"), ("t2", "a2")]
    first = stats.take()
    assert first["accepted"] == [("t1", "a1"), ("t2", "a2")]
    stats.accepted.append(("t1", "a3"))
    assert stats.take()["accepted"] == [("t1", "a3")]
    assert stats.take()["accepted"] == []
