"""Issue 42, finding 4: a service token may do what its service's scopes allow
(`trix.runtime.identity.SERVICE_SCOPES`), one scope per RPC family of the table. On `trix up`'s
real table through its gRPC API: scoring's and matchmaking's tokens, signed with the
service-role key they hold, read no seat's hand (PERMISSION_DENIED); the operators' (admin)
does, and so does the table's own."""

from __future__ import annotations

import time

import grpc
from security_support import REFUSED, Backend, report

from trix.runtime.identity import ROLE_SERVICE, SERVICE_KEY_ENV, TOKEN_METADATA, sign
from trix.v1 import common_pb2, table_pb2, table_pb2_grpc


def _md(backend: Backend, service: str) -> tuple[tuple[str, str], ...]:
    return ((TOKEN_METADATA, sign(backend.env[SERVICE_KEY_ENV].encode(), ROLE_SERVICE, service, time.time(), 60)),)


async def test_only_the_table_and_the_operators_tokens_read_a_hand(up_platform: Backend) -> None:
    table_id = f"scopes{int(time.time() * 1000)}"
    seats = [common_pb2.Seat(index=s, player_id=f"scoped-{s}") for s in range(4)]
    create = table_pb2.CreateTableRequest(table_id=table_id, variant=common_pb2.VARIANT_COMPLEX, seats=seats)
    async with grpc.aio.insecure_channel(up_platform.targets["table"]) as channel:
        stub = table_pb2_grpc.TableServiceStub(channel)
        await stub.CreateTable(create, metadata=_md(up_platform, "matchmaking"), timeout=30)
        hand = table_pb2.GetSeatViewRequest(table_id=table_id, seat=1)
        for reader in ("admin", "table"):
            view = await stub.GetSeatView(hand, metadata=_md(up_platform, reader), timeout=30)
            assert len(view.view.hand) == 13, reader  # the operators' and the table's own
        lines = []
        for service in ("scoring", "matchmaking"):
            for what, call in (
                ("read a seat's hand (GetSeatView)", stub.GetSeatView(hand, metadata=_md(up_platform, service))),
                (
                    "follow a seat's events (StreamSeatEvents)",
                    _first(stub, table_id, _md(up_platform, service)),
                ),
            ):
                try:
                    await call
                    outcome = "ALLOWED"
                except grpc.aio.AioRpcError as err:
                    outcome = REFUSED if err.code() == grpc.StatusCode.PERMISSION_DENIED else err.code().name
                lines.append(report(up_platform, f"{what} with {service}'s token", service, outcome))
        assert all(line.endswith(REFUSED) for line in lines), "\n".join(lines)


async def _first(stub: table_pb2_grpc.TableServiceStub, table_id: str, metadata: tuple[tuple[str, str], ...]) -> None:
    request = table_pb2.StreamSeatEventsRequest(table_id=table_id, seat=1)
    async for _ in stub.StreamSeatEvents(request, metadata=metadata, timeout=30):
        return
