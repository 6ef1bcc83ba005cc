"""Issue 18: scoring settles only from events the table's user could have published, and
checks a GameEnded against the game's own record (replayed through the C engine) before it
pays, rates or records it. On `trix up`'s real scoring: results published as the table's NATS
user (what a buggy or compromised table could send) that disagree with their record, name
other players, or travel on another table's subject are never recorded; the honest one is."""

from __future__ import annotations

import hashlib
import json
import time
from typing import Any

import grpc
from google.protobuf.timestamp_pb2 import Timestamp
from security_support import REFUSED, Backend, connected, report, until_found

from trix import engine, fairness
from trix.natsio import subjects
from trix.v1 import common_pb2, events_pb2, scoring_pb2, scoring_pb2_grpc

PLAYERS = ["ann-18", "ben-18", "cat-18", "dan-18"]
SERVER_SEED = hashlib.sha256(b"issue 18: a game scoring replays").digest()
CLIENT_SEED = fairness.join_client_seeds(["a", "b", "c", "d"])


def played_record() -> dict[str, Any]:
    """A whole COMPLEX game played by the C bot on every seat, recorded as the table does."""
    game = engine.Game(engine.Variant.COMPLEX, engine.Options())
    while game.phase != engine.Phase.GAME_OVER:
        if game.phase == engine.Phase.AWAITING_DEAL:
            game.provide_deal(fairness.deal_from_seeds(SERVER_SEED, CLIENT_SEED, game.deal_index))
        else:
            seat = game.to_act()[0]
            game.apply(seat, game.bot_action(seat))
    record: dict[str, Any] = game.record()
    record["players"] = list(PLAYERS)
    record["fairness"] = {
        "commitment": fairness.commitment(SERVER_SEED),
        "server_seed": SERVER_SEED.hex(),
        "client_seed": CLIENT_SEED,
    }
    return record


def _event(table_id: str, sequence: int, **body: Any) -> bytes:
    stamp = Timestamp()
    stamp.FromMilliseconds(1_800_000_000_000 + sequence)
    return events_pb2.Event(table_id=table_id, sequence=sequence, time=stamp, **body).SerializeToString()


def _created(players: list[str]) -> events_pb2.TableCreated:
    seats = [common_pb2.Seat(index=s, player_id=p) for s, p in enumerate(players)]
    return events_pb2.TableCreated(
        variant=common_pb2.VARIANT_COMPLEX, seats=seats, commitment=fairness.commitment(SERVER_SEED)
    )


def _ended(record: dict[str, Any], totals: list[int], ranking: list[int]) -> events_pb2.GameEnded:
    return events_pb2.GameEnded(
        record_json=json.dumps(record), totals=common_pb2.SeatScores(values=totals), ranking=ranking, left_seat=-1
    )


async def test_scoring_records_only_a_game_end_its_record_replays_to(up_platform: Backend) -> None:
    record = played_record()
    totals, ranking = list(record["totals"]), list(record["ranking"])
    winner = ranking.index(1)
    swapped = [1 if p == ranking[(winner + 1) % 4] else p for p in ranking]
    swapped[winner] = ranking[(winner + 1) % 4]  # the next seat takes the win
    run = str(int(time.time() * 1000))
    forged: dict[str, tuple[str, list[bytes]]] = {
        "a GameEnded whose ranking its record does not give": (
            f"forged-rank-{run}",
            [_created(PLAYERS), _ended(record, totals, swapped)],
        ),
        "a GameEnded whose totals its record does not give": (
            f"forged-totals-{run}",
            [_created(PLAYERS), _ended(record, [t + 100 for t in totals], ranking)],
        ),
        "another table's record for these seats": (
            f"forged-seats-{run}",
            [_created(["eve-18", *PLAYERS[1:]]), _ended(record, totals, ranking)],
        ),
    }
    honest = f"honest-{run}"
    async with connected(up_platform, "table") as table:
        js = table.nc.jetstream(timeout=10)
        for table_id, bodies in forged.values():
            for sequence, body in enumerate(bodies, 1):
                field = "table_created" if isinstance(body, events_pb2.TableCreated) else "game_ended"
                await js.publish(subjects.table_results(table_id), _event(table_id, sequence, **{field: body}))
        # On its own table's subject an event naming another table is not settled from.
        elsewhere = f"elsewhere-{run}"
        await js.publish(subjects.table_results(honest), _event(elsewhere, 1, table_created=_created(PLAYERS)))
        await js.publish(
            subjects.table_results(honest), _event(elsewhere, 2, game_ended=_ended(record, totals, ranking))
        )
        forged["an event on another table's subject"] = (elsewhere, [])
        # The honest game last: scoring applies TABLE_RESULTS in order, so once it is
        # recorded every forged one before it has been decided.
        await js.publish(subjects.table_results(honest), _event(honest, 1, table_created=_created(PLAYERS)))
        await js.publish(subjects.table_results(honest), _event(honest, 2, game_ended=_ended(record, totals, ranking)))
    channel = grpc.aio.insecure_channel(up_platform.targets["scoring"])
    stub = scoring_pb2_grpc.ScoringServiceStub(channel)
    try:
        honest_record = scoring_pb2.GetGameRecordRequest(table_id=honest)
        await until_found(lambda: stub.GetGameRecord(honest_record, timeout=10), 60, 0.1)
        lines = []
        for attack, (table_id, _) in forged.items():
            try:
                await stub.GetGameRecord(scoring_pb2.GetGameRecordRequest(table_id=table_id), timeout=10)
                outcome = "ALLOWED (recorded and settled)"
            except grpc.aio.AioRpcError as err:
                outcome = REFUSED if err.code() == grpc.StatusCode.NOT_FOUND else err.code().name
            lines.append(report(up_platform, f"scoring: {attack}", "table", outcome))
        history = await stub.ListHistory(scoring_pb2.ListHistoryRequest(player_id=PLAYERS[1]), timeout=10)
        assert [g.table_id for g in history.games] == [honest], history  # nobody gained a forged game
        assert all(line.endswith(REFUSED) for line in lines), "\n".join(lines)
    finally:
        await channel.close()
