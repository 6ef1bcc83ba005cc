"""Every refused command answered with its status and the state unchanged; duplicates,
stale sequences, AutoAct, Leave (paid and free) and reclaim, through the real gRPC API."""

from __future__ import annotations

from collections.abc import AsyncIterator

import grpc
import pytest

from conftest import InProcessTable
from support.table import create_request, token
from trix.runtime.identity import TOKEN_METADATA
from trix.v1 import common_pb2, table_pb2, table_pb2_grpc

PLAYERS = ("p0", "p1", "p2", "p3")
ADMIN = token("service", "admin")


@pytest.fixture
async def stub(table_service: InProcessTable) -> AsyncIterator[table_pb2_grpc.TableServiceStub]:
    channel = grpc.aio.insecure_channel(table_service.address)
    try:
        yield table_pb2_grpc.TableServiceStub(channel)
    finally:
        await channel.close()


def md(tok: str) -> tuple[tuple[str, str], ...]:
    return ((TOKEN_METADATA, tok),)


def seat_md(seat: int) -> tuple[tuple[str, str], ...]:
    return md(token("player", PLAYERS[seat]))


async def view(stub: table_pb2_grpc.TableServiceStub, table_id: str, seat: int) -> table_pb2.SeatView:
    tok = ADMIN if seat == -1 else token("player", PLAYERS[seat])
    reply = await stub.GetSeatView(table_pb2.GetSeatViewRequest(table_id=table_id, seat=seat), metadata=md(tok))
    return reply.view


async def expect(code: grpc.StatusCode, call: object) -> str:
    with pytest.raises(grpc.aio.AioRpcError) as info:
        await call  # type: ignore[misc]
    assert info.value.code() == code, info.value.details()
    return info.value.details() or ""


def hdr(table_id: str, seat: int, action_id: str, seq: int) -> table_pb2.ActionHeader:
    return table_pb2.ActionHeader(table_id=table_id, seat=seat, action_id=action_id, last_seen_sequence=seq)


async def test_refused_commands_leave_state_unchanged(
    table_service: InProcessTable, stub: table_pb2_grpc.TableServiceStub
) -> None:
    t = "cmds"
    created = await stub.CreateTable(
        create_request(t, common_pb2.VARIANT_TRIX, PLAYERS), metadata=md(token("service", "table"))
    )
    again = await stub.CreateTable(
        create_request(t, common_pb2.VARIANT_TRIX, PLAYERS), metadata=md(token("service", "table"))
    )
    assert again.commitment == created.commitment  # idempotent on the table id
    public = await view(stub, t, -1)
    owner = public.turn.seats[0]
    other = (owner + 1) % 4
    assert public.turn.decision == common_pb2.DECISION_CONTRACT
    before = table_service.service.tables[t].state_key()  # type: ignore[union-attr]
    seq = public.sequence
    choose = table_pb2.ChooseContractRequest

    await expect(grpc.StatusCode.UNAUTHENTICATED, stub.ChooseContract(choose(header=hdr(t, owner, "x1", seq))))
    forged = token("player", PLAYERS[owner])[:-4] + "0000"
    await expect(
        grpc.StatusCode.UNAUTHENTICATED,
        stub.ChooseContract(choose(header=hdr(t, owner, "x1", seq), contract=1), metadata=md(forged)),
    )
    await expect(
        grpc.StatusCode.PERMISSION_DENIED,
        stub.ChooseContract(choose(header=hdr(t, owner, "x1", seq), contract=1), metadata=seat_md(other)),
    )
    await expect(
        grpc.StatusCode.NOT_FOUND,
        stub.ChooseContract(choose(header=hdr("nope", owner, "x1", seq), contract=1), metadata=seat_md(owner)),
    )
    details = await expect(
        grpc.StatusCode.FAILED_PRECONDITION,
        stub.ChooseContract(choose(header=hdr(t, other, "x1", seq), contract=1), metadata=seat_md(other)),
    )
    assert details == f"not your turn (seat {owner} to act)"
    await expect(
        grpc.StatusCode.ABORTED,
        stub.ChooseContract(choose(header=hdr(t, owner, "x1", seq - 1), contract=1), metadata=seat_md(owner)),
    )
    await expect(
        grpc.StatusCode.INVALID_ARGUMENT,
        stub.ChooseContract(choose(header=hdr(t, owner, "x1", seq), contract=99), metadata=seat_md(owner)),
    )
    await expect(
        grpc.StatusCode.FAILED_PRECONDITION,
        stub.ChooseContract(
            choose(header=hdr(t, owner, "x1", seq), contract=common_pb2.CONTRACT_COMPLEX), metadata=seat_md(owner)
        ),
    )
    await expect(
        grpc.StatusCode.PERMISSION_DENIED,
        stub.AutoAct(table_pb2.AutoActRequest(table_id=t, seat=owner, turn_seq=seq), metadata=seat_md(owner)),
    )
    await expect(
        grpc.StatusCode.FAILED_PRECONDITION,
        stub.SetClientSeed(
            table_pb2.SetClientSeedRequest(header=hdr(t, owner, "x2", seq), client_seed="late"),
            metadata=seat_md(owner),
        ),
    )
    assert table_service.service.tables[t].state_key() == before  # type: ignore[union-attr]
    assert (await view(stub, t, -1)).sequence == seq

    # A legal choice, then the same action id again: the first result, nothing applied twice.
    ok = await stub.ChooseContract(
        choose(header=hdr(t, owner, "k1", seq), contract=common_pb2.CONTRACT_KING), metadata=seat_md(owner)
    )
    assert ok.sequence > seq
    dup = await stub.ChooseContract(
        choose(header=hdr(t, owner, "k1", seq), contract=common_pb2.CONTRACT_KING), metadata=seat_md(owner)
    )
    assert dup.sequence == ok.sequence
    after = await view(stub, t, -1)
    assert after.sequence == ok.sequence and after.contract == common_pb2.CONTRACT_KING

    # Doubling in KING (SEQUENTIAL): an ineligible card is the engine's reason.
    doubler = after.turn.seats[0]
    mine = await view(stub, t, doubler)
    not_held = next(q for q in (10, 23, 36, 49, 37) if q not in {c.id for c in mine.hand})
    details = await expect(
        grpc.StatusCode.FAILED_PRECONDITION,
        stub.AnswerDouble(
            table_pb2.AnswerDoubleRequest(header=hdr(t, doubler, "d1", after.sequence), cards=[{"id": not_held}]),
            metadata=seat_md(doubler),
        ),
    )
    assert details.startswith("card")

    # AutoAct: the current turn plays the bot move; an old turn_seq is ABORTED.
    turn = after.turn
    timers = md(token("service", "timers"))
    auto = await stub.AutoAct(
        table_pb2.AutoActRequest(table_id=t, seat=doubler, turn_seq=turn.turn_seq), metadata=timers
    )
    assert auto.sequence > after.sequence
    await expect(
        grpc.StatusCode.ABORTED,
        stub.AutoAct(table_pb2.AutoActRequest(table_id=t, seat=doubler, turn_seq=turn.turn_seq), metadata=timers),
    )

    # Playing a card the seat does not hold: FAILED_PRECONDITION with the engine's reason.
    while (v := await view(stub, t, -1)).turn.decision != common_pb2.DECISION_CARD:
        s = v.turn.seats[0]
        await stub.AutoAct(table_pb2.AutoActRequest(table_id=t, seat=s, turn_seq=v.turn.turn_seq), metadata=timers)
    player = v.turn.seats[0]
    pv = await view(stub, t, player)
    foreign = next(c for c in range(52) if c not in {x.id for x in pv.hand})
    details = await expect(
        grpc.StatusCode.FAILED_PRECONDITION,
        stub.PlayCard(
            table_pb2.PlayCardRequest(header=hdr(t, player, "c1", pv.sequence), card={"id": foreign}),
            metadata=seat_md(player),
        ),
    )
    assert details.startswith("card not in hand")
    assert (await view(stub, t, -1)).sequence == pv.sequence


async def test_leave_free_table_bot_takes_over_and_reclaim(
    table_service: InProcessTable, stub: table_pb2_grpc.TableServiceStub
) -> None:
    t = "free"
    await stub.CreateTable(create_request(t, common_pb2.VARIANT_COMPLEX, PLAYERS), metadata=md(ADMIN))
    v = await view(stub, t, -1)
    leaver = v.turn.seats[0]
    left = await stub.LeaveTable(
        table_pb2.LeaveTableRequest(header=hdr(t, leaver, "l1", v.sequence), reason=1), metadata=seat_md(leaver)
    )
    after = await view(stub, t, -1)
    assert after.seats[leaver].bot and left.sequence <= after.sequence
    assert leaver not in after.turn.seats  # the bot played for it at once
    back = await stub.ReclaimSeat(
        table_pb2.ReclaimSeatRequest(header=hdr(t, leaver, "r1", after.sequence)), metadata=seat_md(leaver)
    )
    assert not (await view(stub, t, -1)).seats[leaver].bot and back.sequence > after.sequence


async def test_leave_paid_table_ends_game(table_service: InProcessTable, stub: table_pb2_grpc.TableServiceStub) -> None:
    t = "paid"
    await stub.CreateTable(create_request(t, common_pb2.VARIANT_COMPLEX, PLAYERS, stake=100), metadata=md(ADMIN))
    v = await view(stub, t, -1)
    seat = (v.turn.seats[0] + 2) % 4
    await stub.LeaveTable(
        table_pb2.LeaveTableRequest(header=hdr(t, seat, "l1", v.sequence), reason=1), metadata=seat_md(seat)
    )
    end = await view(stub, t, -1)
    assert end.finished
    record = table_service.service.tables[t].record()  # type: ignore[union-attr]
    assert record["left"] == seat and record["ranking"][seat] == 4  # §10: the leaver is last
