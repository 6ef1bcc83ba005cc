"""The gateway's NATS user refused on logs, snapshots and secrets; recovery after a
crash (in-process, bit-exact) and after SIGKILL of the table process."""

from __future__ import annotations

import asyncio
import json
import random
from pathlib import Path

import nats
import pytest

from conftest import InProcessTable
from support.nats import AuthNats
from support.table import (
    Acked,
    GatewayClient,
    TableProcess,
    create_request,
    play_until,
    read_served,
    record_of,
    table_env,
    token,
)
from trix import engine, records
from trix.natsio import subjects
from trix.natsio.permissions import GATEWAY_INBOX_PREFIX
from trix.v1 import common_pb2, table_pb2

PLAYERS = ("ann", "ben", "cat", "dan")


async def _create(client: GatewayClient, table_id: str, variant: int, **kw: object) -> None:
    request = create_request(table_id, variant, PLAYERS, **kw)  # type: ignore[arg-type]
    await client.request(table_id, table_pb2.TableCommand(create_table=request), token("service", "table"))


async def test_gateway_refused_on_log_snapshot_and_secret_subjects(
    auth_nats: AuthNats, table_service: InProcessTable, gateway: GatewayClient, table_nc: nats.aio.client.Client
) -> None:
    await _create(gateway, "perm", common_pb2.VARIANT_COMPLEX)
    await play_until(gateway, "perm", PLAYERS, random.Random(1), max_actions=10)
    # The data exists: the table's own user reads it.
    js = table_nc.jetstream()
    assert (await js.get_last_msg("TABLE_LOG", subjects.table_log("perm"))).data
    assert (await (await js.key_value("table_secrets")).get("perm")).value

    errors: list[str] = []

    async def on_error(exc: Exception) -> None:
        errors.append(str(exc).lower())

    gw = await nats.connect(
        auth_nats.url("gateway"),
        inbox_prefix=GATEWAY_INBOX_PREFIX.encode(),
        error_cb=on_error,
        max_reconnect_attempts=1,
    )
    try:
        refused_subs = [
            subjects.all_table_logs(),
            subjects.table_log("perm"),
            subjects.all_table_snapshots(),
            "$KV.table_secrets.>",
            "_INBOX.>",
            "trix.table.evt.>",
            ">",
        ]
        for subject in refused_subs:
            await gw.subscribe(subject)
        await gw.flush()
        await asyncio.sleep(0.3)
        for subject in refused_subs:
            assert any("permissions violation for subscription" in e and subject.lower() in e for e in errors), subject
        gjs = gw.jetstream(timeout=1.0)
        api_calls = [
            gjs.get_last_msg("TABLE_LOG", subjects.table_log("perm")),
            gjs.get_last_msg("TABLE_LOG", subjects.table_log("perm"), direct=True),
            gjs.get_last_msg("TABLE_SNAPSHOTS", subjects.table_snapshot("perm")),
            gjs.get_last_msg("KV_table_secrets", "$KV.table_secrets.perm", direct=True),
            gjs.stream_info("TABLE_LOG"),
        ]
        for call in api_calls:
            with pytest.raises(Exception):  # noqa: B017 - refused: timeout or permissions error
                await call
        await gw.flush()
        await asyncio.sleep(0.2)
        for api in (
            "$js.api.stream.msg.get.table_log",
            "$js.api.direct.get.table_log",
            "$js.api.stream.info.table_log",
        ):
            assert any("permissions violation for publish" in e and api in e for e in errors), api
        # What it may do: read the tables' feeds, and send commands.
        await gw.subscribe(subjects.table_feed("perm"))
        count = len(errors)
        await gw.flush()
        await asyncio.sleep(0.2)
        assert len(errors) == count
    finally:
        await gw.close()


async def test_crash_and_recovery_is_bit_exact(table_service: InProcessTable, gateway: GatewayClient) -> None:
    rng = random.Random(7)
    await _create(gateway, "crash1", common_pb2.VARIANT_COMPLEX, await_seeds=True)
    await _create(gateway, "crash2", common_pb2.VARIANT_TRIX_PARTNERSHIP)
    await play_until(gateway, "crash1", PLAYERS, rng, max_actions=61)
    await play_until(gateway, "crash2", PLAYERS, rng, max_actions=45)
    service = table_service.service
    assert service is not None
    before = {t: service.tables[t].state_key() for t in ("crash1", "crash2")}
    await table_service.crash()
    await table_service.start()
    service = table_service.service
    assert service is not None
    for t, key in before.items():
        assert service.tables[t].state_key() == key  # engine snapshot bytes and table state equal
    await play_until(gateway, "crash1", PLAYERS, rng)
    record = record_of(await read_served(gateway.nc.jetstream(), "crash1"))
    assert records.replay(record, engine.Game, engine.Options).differences == []


async def test_sigkill_mid_game_loses_nothing(
    tmp_path: Path, auth_nats: AuthNats, gateway: GatewayClient, table_nc: nats.aio.client.Client
) -> None:
    env = table_env(auth_nats.url("table"), TRIX_TABLE_SNAPSHOT_EVERY="13")
    proc = TableProcess(env, tmp_path / "table.log")
    proc.start()
    gateway.timeout_s = 3.0  # a request to the killed process is retried soon
    try:
        table_id = "killed"
        await _retry(lambda: _create(gateway, table_id, common_pb2.VARIANT_COMPLEX_PARTNERSHIP))
        acked: list[Acked] = []
        rng = random.Random(11)
        for kill_after in (37, 71):
            await play_until(
                gateway, table_id, PLAYERS, rng, max_actions=kill_after - len(acked), acked=acked, retry=True
            )
            # SIGKILL while a command is in flight, then restart; the client retries with the same action id.
            inflight = asyncio.ensure_future(
                play_until(gateway, table_id, PLAYERS, rng, max_actions=3, acked=acked, retry=True)
            )
            await asyncio.sleep(0.01)
            proc.kill()
            proc.start()
            await inflight
        await play_until(gateway, table_id, PLAYERS, rng, acked=acked, retry=True)
        # Every acknowledged action is in the log exactly once (by its action id).
        ids: list[str] = []
        js = table_nc.jetstream()
        seq = 1
        while True:
            try:
                msg = await js.get_msg("TABLE_LOG", seq=seq, subject=subjects.table_log(table_id), next=True)
            except nats.js.errors.NotFoundError:
                break
            assert msg.seq is not None and msg.data is not None
            ids.append(json.loads(msg.data)["id"])
            seq = msg.seq + 1
        assert len(ids) == len(set(ids))
        assert {a.action_id for a in acked} <= set(ids)
        record = record_of(await read_served(gateway.nc.jetstream(), table_id))
        result = records.replay(record, engine.Game, engine.Options)
        assert result.differences == [] and result.record["totals"] == record["totals"]
        events = await read_served(gateway.nc.jetstream(), table_id)
        assert [e.sequence for e in events] == sorted({e.sequence for e in events})  # none twice, in order
    finally:
        proc.stop()


async def _retry(call: object) -> None:
    for _ in range(200):
        try:
            await call()  # type: ignore[operator]
            return
        except (nats.errors.NoRespondersError, nats.errors.TimeoutError):
            await asyncio.sleep(0.1)
    raise AssertionError("table service never answered")
