"""Issue 42, finding 4: a service token may do what its service's scopes allow
(`trix.runtime.identity.SERVICE_SCOPES`), one scope per RPC family of the table, and only a
signer the table accepts (ADR 0028) gets that far. On `trix up`'s real table through its gRPC
API: the operators' (admin) and the table's own tokens read a seat's hand; the timers' (accepted,
no hands scope) are refused (PERMISSION_DENIED); scoring's (it holds no signing key: one of
its own making) and matchmaking's (its own key, which the table does not accept) read no hand
(UNAUTHENTICATED)."""

from __future__ import annotations

import time

import grpc
from security_support import REFUSED, Backend, report

from trix.runtime.identity import TOKEN_METADATA, new_signing_key
from trix.v1 import common_pb2, table_pb2, table_pb2_grpc

SCORINGS_OWN_KEY = new_signing_key()
"""A key scoring could make itself: `trix up` gives it none (it signs nothing)."""


def _md(backend: Backend, service: str) -> tuple[tuple[str, str], ...]:
    key = SCORINGS_OWN_KEY if service == "scoring" else ""
    return ((TOKEN_METADATA, backend.service_token(service, key=key)),)


async def test_only_the_table_and_the_operators_tokens_read_a_hand(up_platform: Backend) -> None:
    table_id = f"scopes{int(time.time() * 1000)}"
    seats = [common_pb2.Seat(index=s, player_id=f"scoped-{s}") for s in range(4)]
    create = table_pb2.CreateTableRequest(table_id=table_id, variant=common_pb2.VARIANT_COMPLEX, seats=seats)
    async with grpc.aio.insecure_channel(up_platform.targets["table"]) as channel:
        stub = table_pb2_grpc.TableServiceStub(channel)
        await stub.CreateTable(create, metadata=_md(up_platform, "table"), timeout=30)
        hand = table_pb2.GetSeatViewRequest(table_id=table_id, seat=1)
        for reader in ("admin", "table"):
            view = await stub.GetSeatView(hand, metadata=_md(up_platform, reader), timeout=30)
            assert len(view.view.hand) == 13, reader  # the operators' and the table's own
        lines = []
        expected = {
            "timers": grpc.StatusCode.PERMISSION_DENIED,  # accepted signer, no hands scope
            "scoring": grpc.StatusCode.UNAUTHENTICATED,  # no key the table accepts
            "matchmaking": grpc.StatusCode.UNAUTHENTICATED,  # its own key, not accepted at the table
        }
        for service, code in expected.items():
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
                    outcome = REFUSED if err.code() == code else err.code().name
                lines.append(report(up_platform, f"{what} with {service}'s token", service, outcome))
        assert all(line.endswith(REFUSED) for line in lines), "\n".join(lines)


async def _first(stub: table_pb2_grpc.TableServiceStub, table_id: str, metadata: tuple[tuple[str, str], ...]) -> None:
    request = table_pb2.StreamSeatEventsRequest(table_id=table_id, seat=1)
    async for _ in stub.StreamSeatEvents(request, metadata=metadata, timeout=30):
        return
