"""`make fault-nats` as a test (outside CI: minutes of bot games and 20+ NATS faults; run by
`make test-cluster`): the invariants of fault_nats.py hold after every run (nothing lost
or applied twice, one writer per table, every game finished, replayed, verified and
scored as replayed, coins conserved and every paid table settled). The resume times are
printed; the issue's 5 s is reported in the summary, not asserted (a leader's death costs
the RAFT election, docs/deploy.md)."""

from __future__ import annotations

from pathlib import Path

import pytest
from fault_nats import run_faults
from netns import Hosts


@pytest.mark.outside_ci
async def test_twenty_nats_faults_lose_nothing_and_never_split_a_table(tmp_path: Path) -> None:
    result = await run_faults(tmp_path, faults=20, slots=6, netns=Hosts.available())
    print("fault-nats:", result)
    assert result["faults"] >= 20
    assert result["lost"] == 0 and result["applied_twice"] == 0, result
    assert result["two_writers"] == 0, result["problems"]
    assert result["games"] == result["games_finished"] == result["games_ok"], result["problems"]
    assert result["standings_equal_replay"] == result["games"], result
    assert result["games_not_resumed"] == 0, result
    assert result["coins_conserved"] and result["paid_tables_running"] == result["stakes_left_held"] == 0, result
    assert result["paid_tables_settled"] >= result["paid_games_finished"] > 0, result
