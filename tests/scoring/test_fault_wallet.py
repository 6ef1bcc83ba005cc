"""CI-sized wallet fault test (issue 8): 100 paid tables, 5 kills of the real service
process (SIGKILL at random moments and injected exits before the journal append, after
it and after the projection update), stakes held and released concurrently. Coins are
conserved, nothing settles twice, no balance goes negative, every balance matches an
independent model of docs/rules.md §13, and a clean restart rebuilds the same state.
`make fault-wallet` runs the full 1,000 tables and 20 kills."""

from __future__ import annotations

from pathlib import Path

from fault_wallet import run_fault


def test_fault_wallet_ci(tmp_path: Path) -> None:
    result = run_fault(tmp_path, tables=100, kills=5, seed=8)
    assert result["errors"] == []
    assert result["crashes"] >= 5
    assert result["settlements"] == result["paid_tables_settled_expected"] > 80
    assert result["coins_granted"] == result["coins_granted_journal"] == 40 * 10_000
    assert result["coins_accounted"] == result["coins_granted"]
    assert result["coins_accounted_journal"] == result["coins_granted"]
    assert result["applied_twice"] == 0
    assert result["negative_balances"] == 0
    assert result["model_mismatches"] == 0
    assert result["restart_equal"] is True
