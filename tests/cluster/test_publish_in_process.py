"""A publish whose first attempt is still in process on a clustered stream's leader (issue 19).

On a 3-node JetStream cluster an attempt whose ack is lost (its RAFT group slow to commit: the
followers stopped, a node catching up) is sent again with the same message id; while the first
is proposed but not applied, the leader refuses the second with 10158 "duplicate message id is
in process". That is not a refusal: `publish_once` sends it again until the first is applied
(then the stream answers a duplicate, stored once). Raised at once, it reached a table
command as an internal error (68 times in the 120-fault run of `make fault-nats`) while the
action was in fact stored.

Real nats-server nodes of `trix up --nats-cluster 3` (the production config from
trix.natsio.serverconf), the real streams at R3; the followers of TABLE_LOG are SIGSTOPped so
the leader cannot commit, then SIGCONTed."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import nats
import pytest
from nats.aio.client import Client

from trix.natsio import names, permissions, subjects
from trix.natsio.provisioning import provision
from trix.natsio.publish import publish_once
from trix.supervisor import Supervisor

pytestmark = pytest.mark.timeout(120)


async def _quiet(_exc: Exception) -> None:
    return None


@contextlib.asynccontextmanager
async def three_nodes(state_dir: Path, **placement: Any) -> AsyncIterator[Supervisor]:
    """The 3 nodes of `trix up --nats-cluster 3`; `placement`: `nats_hosts` and `nats_launcher`
    (each node in a network namespace, `test_read_after_heal`)."""
    sup = Supervisor(
        state_dir=state_dir,
        fresh=True,
        replicas={},
        ports={},
        nats_port=0,
        grace_s=5.0,
        ready_timeout_s=30.0,
        log_level="warning",
        nats_cluster=3,
        **placement,
    )
    sup.prepare()
    try:
        assert sup.start_nats(timeout_s=30.0), "the 3 nodes did not listen"
        yield sup
    finally:
        for child in sup.nats_children:  # none left stopped: SIGTERM must reach it
            if child.proc is not None:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(child.proc.pid, signal.SIGCONT)
        sup.stop()


async def connect(sup: Supervisor, user: str, node: int | None = None) -> Client:
    urls = sup.nats_url(user).split(",")
    return await nats.connect(
        servers=urls if node is None else [urls[node]],
        inbox_prefix=permissions.inbox_prefix(user).encode(),
        max_reconnect_attempts=-1,
        reconnect_time_wait=0.2,
        error_cb=_quiet,
    )


async def provisioned_leader(admin: Client) -> int:
    """Every stream and bucket provisioned at R3 (asked again while the meta group elects its
    leader first); the index (0-2) of the node that leads TABLE_LOG."""
    js_admin = admin.jetstream(timeout=5.0)
    for attempt in range(60):
        try:
            await provision(js_admin, replicas=3)
            break
        except Exception:
            if attempt == 59:
                raise
            await asyncio.sleep(0.5)
    info = await js_admin.stream_info(names.TABLE_LOG_STREAM)
    assert info.cluster is not None and info.cluster.leader
    return int(info.cluster.leader.rsplit("_", 1)[1]) - 1


async def test_a_publish_retried_while_its_first_attempt_is_in_process_is_stored_once(tmp_path: Path) -> None:
    async with three_nodes(tmp_path / "state") as sup:
        admin = await connect(sup, permissions.PROVISIONER)
        table: Client | None = None
        try:
            leader = await provisioned_leader(admin)
            followers = [i for i in range(3) if i != leader]
            table = await connect(sup, "table", node=leader)  # on the leader: it answers every attempt
            js = table.jetstream(timeout=5.0)
            subject = subjects.table_log("inprocess1")
            await publish_once(js, subject, b"warm-up", msg_id="inprocess1.warm")
            for i in followers:  # no quorum: the leader proposes but cannot commit
                proc = sup.nats_children[i].proc
                assert proc is not None
                os.kill(proc.pid, signal.SIGSTOP)
            publish = asyncio.ensure_future(
                publish_once(js, subject, b"the action", msg_id="inprocess1.a1", attempt_timeout_s=0.5, deadline_s=30)
            )
            await asyncio.sleep(3.0)  # the first attempt timed out; the next ones are "in process"
            assert not publish.done(), publish  # neither stored nor given up
            for i in followers:
                proc = sup.nats_children[i].proc
                assert proc is not None
                os.kill(proc.pid, signal.SIGCONT)
            ack = await asyncio.wait_for(publish, 30)
            assert ack.seq == 2
            state = await admin.jetstream(timeout=5.0).stream_info(names.TABLE_LOG_STREAM, subjects_filter=subject)
            assert state.state.messages == 2  # the warm-up and the action, once
        finally:
            for conn in (table, admin):
                if conn is not None:
                    with contextlib.suppress(Exception):
                        await asyncio.wait_for(conn.close(), 5)
