"""Issue 42, finding 5: a private table's games are visible to their players only. On `trix
up`'s real scoring, through the Envoy edge and the gateway: a finished private game (published
as the table's NATS user, as the table publishes it) is in its player's history and its record
is theirs to read, but another signed-in player who knows that player's id sees neither the
game in the history nor its record (hands and seed), nor a running private table's standings.
A public game of the same players stays visible to everyone."""

from __future__ import annotations

import asyncio
import contextlib
import json
import secrets
import time
from collections.abc import AsyncIterator

import grpc
from security_support import REFUSED, Backend, connected, report
from test_scoring_settlement import _created, _ended, _event, played_record

from trix.client import GatewayClient
from trix.natsio import subjects
from trix.v1 import events_pb2, gateway_pb2, scoring_pb2


async def _query(client: GatewayClient, **query: object) -> gateway_pb2.QueryResponse:
    request = gateway_pb2.QueryRequest(**query)  # type: ignore[arg-type]
    reply: gateway_pb2.QueryResponse = await client.stub.Query(request, metadata=client.metadata, timeout=10)
    return reply


async def _refused(client: GatewayClient, **query: object) -> str:
    try:
        await _query(client, **query)
    except grpc.aio.AioRpcError as err:
        return REFUSED if err.code() == grpc.StatusCode.PERMISSION_DENIED else err.code().name
    return "ALLOWED"


@contextlib.asynccontextmanager
async def player_and_outsider(backend: Backend, prefix: str) -> AsyncIterator[tuple[GatewayClient, GatewayClient]]:
    """Two new guests signed in through the edge: a player of the tables and an outsider."""
    player, outsider = GatewayClient(backend.edge), GatewayClient(backend.edge)
    try:
        await player.sign_in(f"{prefix}-player-{secrets.token_hex(8)}", "seat0")
        await outsider.sign_in(f"{prefix}-outsider-{secrets.token_hex(8)}", "nosy")
        yield player, outsider
    finally:
        await player.close()
        await outsider.close()


async def test_a_private_games_history_record_and_standings_are_its_players_only(up_platform: Backend) -> None:
    run = str(int(time.time() * 1000))
    async with player_and_outsider(up_platform, "private") as (player, outsider):
        players = [player.player_id, f"pa{run}", f"pb{run}", f"pc{run}"]
        record = played_record()
        record["players"] = players
        totals, ranking = list(record["totals"]), list(record["ranking"])
        running, private, public = f"privrun{run}", f"privgame{run}", f"pubgame{run}"
        async with connected(up_platform, "table") as table:
            js = table.nc.jetstream(timeout=20)
            for table_id, hidden, ended in ((running, True, False), (public, False, True), (private, True, True)):
                created = _created(players)
                created.private_table = hidden
                await js.publish(subjects.table_results(table_id), _event(table_id, 1, table_created=created))
                if ended:
                    game_ended: events_pb2.GameEnded = _ended(record, totals, ranking)
                    await js.publish(subjects.table_results(table_id), _event(table_id, 2, game_ended=game_ended))
        mine = scoring_pb2.GetGameRecordRequest(table_id=private)
        deadline = time.monotonic() + 60
        while True:  # scoring applies the results in order: the private game last
            try:
                got = await _query(player, game_record=mine)
                break
            except grpc.aio.AioRpcError as err:
                assert err.code() == grpc.StatusCode.NOT_FOUND and time.monotonic() < deadline, err
                await asyncio.sleep(0.2)
        assert json.loads(got.game_record.record_json)["players"] == players  # its player reads it
        theirs = await _query(player, history=scoring_pb2.ListHistoryRequest(player_id=player.player_id))
        assert {g.table_id for g in theirs.history.games} == {private, public}
        await _query(player, standings=scoring_pb2.GetStandingsRequest(table_id=running))

        seen = await _query(outsider, history=scoring_pb2.ListHistoryRequest(player_id=player.player_id))
        listed = {g.table_id for g in seen.history.games}
        lines = [
            report(
                up_platform,
                "list another player's private games",
                "player",
                REFUSED if listed == {public} else f"ALLOWED (listed {sorted(listed)})",
            ),
            report(up_platform, "read a private game's record", "player", await _refused(outsider, game_record=mine)),
            report(
                up_platform,
                "read a running private table's standings",
                "player",
                await _refused(outsider, standings=scoring_pb2.GetStandingsRequest(table_id=running)),
            ),
        ]
        assert all(line.endswith(REFUSED) for line in lines), "\n".join(lines)
        await _query(outsider, game_record=scoring_pb2.GetGameRecordRequest(table_id=public))  # a public one is
