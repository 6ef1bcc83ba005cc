"""The lobby's list of public tables being played (ScoringService.ListLiveTables, the gateway's
`live_tables` query): a running public table is listed with its players' names (bots marked),
variant and deal; a private table never is; a finished one is gone; pages are bounded. And a
history row names every seat of the game (the opponents) beside its date."""

from __future__ import annotations

import json

import grpc
import pytest
from scoring_support import EventPublisher, InProcessScoring

from support.golden import GOLDEN_DIR
from support.nats import NatsServer
from support.waiting import eventually
from trix.scoring.service import DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE
from trix.v1 import common_pb2, scoring_pb2

SINGLES = "game_0002.json"


def _names(players: list[str]) -> list[str]:
    return [f"Bot {s + 1}" if p.startswith("bot-") else f"name of {p}" for s, p in enumerate(players)]


async def _start(pub: EventPublisher, table: str, record: dict[str, object], *, private: bool = False) -> None:
    """A table's TableCreated and its first deal scored, as the table service publishes them."""
    players = [str(p) for p in record["players"]]  # type: ignore[attr-defined]
    await pub.table_created(
        table,
        players,
        variant=common_pb2.Variant.Value(f"VARIANT_{record['variant']}"),
        bots=[p.startswith("bot-") for p in players],
        names=_names(players),
        private=private,
    )
    first = record["deals"][0]  # type: ignore[index]
    contract = common_pb2.Contract.Value(f"CONTRACT_{first['contract']}")
    await pub.deal_scored(table, 0, contract, list(first["scores"]), list(first["scores"]))


async def _finish(pub: EventPublisher, table: str, record: dict[str, object]) -> None:
    """The rest of the game: every later deal scored, then GameEnded with the record."""
    running = list(record["deals"][0]["scores"])  # type: ignore[index]
    for index, deal in enumerate(record["deals"][1:], start=1):  # type: ignore[index]
        running = [a + b for a, b in zip(running, deal["scores"], strict=True)]
        contract = common_pb2.Contract.Value(f"CONTRACT_{deal['contract']}")
        await pub.deal_scored(table, index, contract, list(deal["scores"]), running)
    await pub.game_ended(table, json.dumps(record), list(record["totals"]), list(record["ranking"]))  # type: ignore[call-overload]


async def _start_public_and_private(
    scoring: InProcessScoring, pub: EventPublisher, record: dict[str, object], public: str, private: str
) -> None:
    """A public and a private table of the same players started, each with its first deal scored."""
    await _start(pub, public, record)
    await _start(pub, private, record, private=True)

    async def both_started() -> bool:
        tables = scoring.service.state.tables
        return all(t in tables and tables[t].deals for t in (public, private))

    await eventually(both_started, what="both tables started")


async def _listed(scoring: InProcessScoring, **request: object) -> scoring_pb2.ListLiveTablesResponse:
    return await scoring.stub.ListLiveTables(scoring_pb2.ListLiveTablesRequest(**request))  # type: ignore[arg-type]


async def test_running_public_table_is_listed_private_never_finished_gone(
    scoring: InProcessScoring, publisher: EventPublisher
) -> None:
    record = json.loads((GOLDEN_DIR / SINGLES).read_text())
    players = [str(p) for p in record["players"]]
    await _start_public_and_private(scoring, publisher, record, "lobby-public", "lobby-private")
    listed = await _listed(scoring)
    assert [t.table_id for t in listed.tables] == ["lobby-public"]
    table = listed.tables[0]
    assert table.variant == common_pb2.Variant.Value(f"VARIANT_{record['variant']}")
    assert [s.display_name for s in table.seats] == _names(players)
    assert [s.bot for s in table.seats] == [p.startswith("bot-") for p in players]
    assert [s.player_id for s in table.seats] == players
    assert (table.deal_number, table.deals_total) == (2, len(record["deals"]))
    assert list(table.totals.values) == list(record["deals"][0]["scores"])
    assert table.started_at.seconds > 0
    assert listed.next_page_token == ""
    # Asked for its own variant only, or another one.
    assert [t.table_id for t in (await _listed(scoring, variant=table.variant)).tables] == ["lobby-public"]
    other = common_pb2.VARIANT_COMPLEX if table.variant != common_pb2.VARIANT_COMPLEX else common_pb2.VARIANT_TRIX
    assert list((await _listed(scoring, variant=other)).tables) == []

    await _finish(publisher, "lobby-public", record)
    await _finish(publisher, "lobby-private", record)

    async def both_ended() -> bool:
        return all(t in scoring.service.state.records for t in ("lobby-public", "lobby-private"))

    await eventually(both_ended, what="both games ended")
    assert list((await _listed(scoring)).tables) == []

    # The history row of a human of the public game: its date and every seat's name.
    human = next(s for s, p in enumerate(players) if not p.startswith("bot-"))
    history = await scoring.stub.ListHistory(scoring_pb2.ListHistoryRequest(player_id=players[human]))
    row = next(g for g in history.games if g.table_id == "lobby-public")
    assert row.ended_at.seconds > 0
    assert [s.display_name for s in row.seats] == _names(players)
    assert [s.bot for s in row.seats] == [p.startswith("bot-") for p in players]


async def test_live_tables_are_paged_newest_first_and_bounded(
    scoring: InProcessScoring, publisher: EventPublisher
) -> None:
    record = json.loads((GOLDEN_DIR / SINGLES).read_text())
    tables = [f"lobby-page-{n}" for n in range(MAX_PAGE_SIZE + 2)]
    for table in tables:
        await _start(publisher, table, record)

    async def all_started() -> bool:
        return all(t in scoring.service.state.live for t in tables)

    await eventually(all_started, what=f"{len(tables)} tables started")
    newest_first = tables[::-1]
    first = await _listed(scoring, page_size=2)
    assert [t.table_id for t in first.tables] == newest_first[:2]
    second = await _listed(scoring, page_size=3, page_token=first.next_page_token)
    assert [t.table_id for t in second.tables] == newest_first[2:5]
    assert len((await _listed(scoring)).tables) == DEFAULT_PAGE_SIZE
    # A page is never larger than the service's bound, whatever is asked.
    big = await _listed(scoring, page_size=10_000)
    assert [t.table_id for t in big.tables] == newest_first[:MAX_PAGE_SIZE]
    rest = await _listed(scoring, page_size=10_000, page_token=big.next_page_token)
    assert [t.table_id for t in rest.tables] == newest_first[MAX_PAGE_SIZE:]
    assert rest.next_page_token == ""
    with pytest.raises(grpc.aio.AioRpcError) as bad:
        await _listed(scoring, page_token="not-a-token")
    assert bad.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    with pytest.raises(grpc.aio.AioRpcError) as negative:
        await _listed(scoring, page_size=-1)
    assert negative.value.code() == grpc.StatusCode.INVALID_ARGUMENT


async def test_live_tables_survive_a_restart_from_the_journal(
    nats_server: NatsServer, publisher: EventPublisher
) -> None:
    """The list is part of the projection: a scoring restarted from its journal lists the same
    running tables (and not the private or ended ones)."""
    record = json.loads((GOLDEN_DIR / SINGLES).read_text())
    first = InProcessScoring(nats_server.url)
    await first.start()
    try:
        await _start_public_and_private(first, publisher, record, "lobby-kept", "lobby-hidden")
    finally:
        await first.stop()
    again = InProcessScoring(nats_server.url)
    await again.start()
    try:
        assert [t.table_id for t in (await _listed(again)).tables] == ["lobby-kept"]
    finally:
        await again.stop()


async def test_leaderboard_rows_carry_the_players_names(scoring: InProcessScoring, publisher: EventPublisher) -> None:
    """A rated game (four people): each leaderboard row names its player as he sat at the table."""
    record = json.loads((GOLDEN_DIR / "game_0008.json").read_text())
    players = [str(p) for p in record["players"]]
    assert not any(p.startswith("bot-") for p in players)
    await _start(publisher, "lobby-rated", record)
    await _finish(publisher, "lobby-rated", record)

    async def ended() -> bool:
        return "lobby-rated" in scoring.service.state.records

    await eventually(ended, what="the rated game ended")
    board = await scoring.stub.GetLeaderboard(
        scoring_pb2.GetLeaderboardRequest(variant=common_pb2.Variant.Value(f"VARIANT_{record['variant']}"))
    )
    assert {e.player_id: e.display_name for e in board.entries} == dict(zip(players, _names(players), strict=True))
