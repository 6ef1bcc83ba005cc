"""Malformed input on the wire: random and truncated bytes through a raw channel with
generic methods, oversized messages, unknown enum values: every reply is a documented
status (INVALID_ARGUMENT, UNAUTHENTICATED, RESOURCE_EXHAUSTED, PERMISSION_DENIED,
NOT_FOUND), no class name or traceback in any reply, the gateway stays up and its
memory returns near its baseline."""

from __future__ import annotations

import random

import grpc
import pytest
from gateway_support import Platform, assert_clean, auth, seated, signed_in

from trix.v1 import common_pb2, gateway_pb2

pytestmark = pytest.mark.timeout(150)

DOCUMENTED = {
    grpc.StatusCode.OK,
    grpc.StatusCode.INVALID_ARGUMENT,
    grpc.StatusCode.UNAUTHENTICATED,
    grpc.StatusCode.RESOURCE_EXHAUSTED,
    grpc.StatusCode.PERMISSION_DENIED,
    grpc.StatusCode.NOT_FOUND,
    grpc.StatusCode.FAILED_PRECONDITION,
    grpc.StatusCode.ABORTED,
}
UNARY = ("SignIn", "SubmitAction", "FindMatch", "CancelMatch", "JoinPrivateGame", "Query", "GetView")


def _rss_kb(pid: int) -> int:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


async def test_random_and_truncated_bytes(platform: Platform) -> None:
    rng = random.Random(9)
    me = await signed_in(platform.target, "fuzzer")
    valid = gateway_pb2.SubmitActionRequest(
        action=gateway_pb2.Action(table_id="t1", action_id="a", play_card=common_pb2.Card(id=5))
    ).SerializeToString()
    baseline = _rss_kb(platform.gateway_pid)
    seen: dict[grpc.StatusCode, int] = {}
    async with grpc.aio.insecure_channel(platform.target) as channel:
        for i in range(2000):
            method = UNARY[i % len(UNARY)]
            call = channel.unary_unary(f"/trix.v1.GatewayService/{method}")
            if i % 3 == 0:
                data = valid[: rng.randrange(len(valid))]
            else:
                data = bytes(rng.randrange(256) for _ in range(rng.randrange(1, 200)))
            md = auth(me.token) if i % 2 else ()
            try:
                await call(data, metadata=md, timeout=10)
                code = grpc.StatusCode.OK
            except grpc.aio.AioRpcError as err:
                code = err.code()
                assert_clean(err.details())
            assert code in DOCUMENTED, (method, code)
            seen[code] = seen.get(code, 0) + 1
        # The Session stream: garbage frames get typed errors, the stream survives.
        stream = channel.stream_stream("/trix.v1.GatewayService/Session")
        frames = [bytes(rng.randrange(256) for _ in range(rng.randrange(1, 64))) for _ in range(50)]
        frames.append(gateway_pb2.SessionRequest(ping=True, request_id="last").SerializeToString())
        call2 = stream(iter(frames), metadata=auth(me.token))
        errors = 0
        async for raw in call2:
            reply = gateway_pb2.SessionResponse.FromString(raw)
            if reply.HasField("error"):
                errors += 1
                assert reply.error.code in ("INVALID_ARGUMENT", "RESOURCE_EXHAUSTED"), reply.error
                assert_clean(reply.error.message)
            if reply.request_id == "last":
                break
        assert errors > 0
    assert grpc.StatusCode.INVALID_ARGUMENT in seen and grpc.StatusCode.UNAUTHENTICATED in seen
    assert _rss_kb(platform.gateway_pid) < baseline + 50_000
    await me.close()


async def test_oversized_messages_and_unknown_enums(platform: Platform) -> None:
    me = await seated(platform.target, "enums")
    async with grpc.aio.insecure_channel(platform.target) as channel:
        big = channel.unary_unary("/trix.v1.GatewayService/SignIn")
        with pytest.raises(grpc.aio.AioRpcError) as err:
            await big(b"\x0a" + b"\xff\xff\x07" + b"x" * 200_000, timeout=10)
        assert err.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
        assert_clean(err.value.details())
    for action in (
        gateway_pb2.Action(table_id=me.table_id, choose_contract=99),  # type: ignore[arg-type]
        gateway_pb2.Action(table_id=me.table_id, play_card=common_pb2.Card(id=77)),
        gateway_pb2.Action(table_id=me.table_id, answer_double=gateway_pb2.CardList(cards=[common_pb2.Card(id=-3)])),
        gateway_pb2.Action(table_id="bad table id!", play_card=common_pb2.Card(id=1)),
        gateway_pb2.Action(table_id=me.table_id),
    ):
        me.client.send(gateway_pb2.SessionRequest(action=action, request_id="enum"))
        async for m in me.stream:
            if m.request_id == "enum":
                assert m.HasField("error") and m.error.code == "INVALID_ARGUMENT", m
                assert_clean(m.error.message)
                break
    await me.client.close()
