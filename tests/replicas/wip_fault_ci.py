"""CI-sized SIGKILL fault run (the full one is `make fault-replicas`): 3 replicas, real NATS,
concurrent bot games, the owner of a random table SIGKILLed at a random acknowledged move
and restarted, 3 times."""

from __future__ import annotations

from pathlib import Path

from fault import run_fault


async def test_sigkill_owners_lose_nothing_and_resume_within_5s(tmp_path: Path) -> None:
    result = await run_fault(tmp_path, slots=4, kills=3, seed=3, say=lambda m: None)
    print(result)
    assert result["kills"] == 3
    assert result["lost"] == 0 and result["applied_twice"] == 0, result
    assert result["games"] >= 4 and result["games_ok"] == result["games"], result["problems"]
    assert result["epochs_monotonic"], result["problems"]
    assert result["tables_resumed"] >= 3 and result["tables_not_resumed"] == 0
    assert result["resume_max_s"] <= 5.0, result
