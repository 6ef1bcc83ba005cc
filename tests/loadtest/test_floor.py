"""The floor baseline (issue 16, ADR 0024): the cheapest chain that does an action's work, run
for real (its own nats-server with `sync_interval: always`, grpc.aio, nats-py) at a small size."""

from __future__ import annotations

import multiprocessing as mp

import pytest

from trix.loadtest.floor import CHAIN_SINGLE, CHAIN_SPLIT, CONNECTIONS_SEAT, CONNECTIONS_SHARED, floor_baseline
from trix.processes import free_port, nats_server_binary

THINK = (0.05, 0.1)
SECONDS = 3.0


@pytest.mark.parametrize(
    ("chain", "processes", "connections"),
    [(CHAIN_SPLIT, 3, CONNECTIONS_SEAT), (CHAIN_SPLIT, 3, CONNECTIONS_SHARED), (CHAIN_SINGLE, 2, CONNECTIONS_SEAT)],
)
def test_floor_chain_serves_every_action_through_its_processes(chain: str, processes: int, connections: str) -> None:
    """split: the edge hands each action over NATS to a table process, which appends it and fans
    it out (edge, table and nats-server measured); single: the edge does it all. Every seat of
    every table gets each action's event back (the client counts an action only then), whether
    each stream has a connection of its own (as every player) or a table's four share one."""
    ctx = mp.get_context("spawn")
    result = floor_baseline(ctx, nats_server_binary(), free_port, 3, THINK, SECONDS, chain, connections)
    assert result["floor_processes"] == processes
    assert result["floor_tables"] == 3
    assert result["floor_connections"] == connections
    # 3 tables acting every 50-100 ms (and waiting for the four seats' copies): well over 5/s
    assert result["floor_actions_per_s"] > 5, result
    assert result["floor_ms_per_action"] > 0, result


def test_floor_refuses_an_unknown_chain() -> None:
    with pytest.raises(ValueError, match="unknown floor chain 'both'"):
        floor_baseline(mp.get_context("spawn"), nats_server_binary(), free_port, 1, THINK, 1.0, "both")


def test_floor_refuses_an_unknown_connection_mode() -> None:
    with pytest.raises(ValueError, match="unknown floor connections 'pooled'"):
        floor_baseline(mp.get_context("spawn"), nats_server_binary(), free_port, 1, THINK, 1.0, CHAIN_SPLIT, "pooled")
