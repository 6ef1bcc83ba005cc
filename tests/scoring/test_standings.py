"""Standings, history, records and statistics from real §12 records published as table
events, compared with `trix replay`; and the projection rebuilt from the journal equals
the live one exactly."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from scoring_support import REPO, EventPublisher, InProcessScoring, MemoryJournal, memory_service

from support.golden import GOLDEN_DIR
from support.waiting import eventually
from trix.scoring.adapters import JetStreamJournal
from trix.scoring.service import ScoringService
from trix.scoring.state import doubled_cards_taken
from trix.v1 import common_pb2, scoring_pb2

EXAMPLES = GOLDEN_DIR
GAMES = {"singles": "game_0002.json", "partnership": "game_0000.json", "complex": "game_0003.json"}


def trix_replay(path: Path) -> dict[str, object]:
    """The completed record `trix replay FILE` prints."""
    out = subprocess.run(
        [sys.executable, "-m", "trix.cli", "replay", str(path)],
        check=True,
        capture_output=True,
        text=True,
        env={"PYTHONPATH": str(REPO / "services"), "PATH": "/usr/bin:/bin"},
        timeout=60,
    )
    result: dict[str, object] = json.loads(out.stdout)
    return result


async def publish_game(pub: EventPublisher, table: str, record: dict[str, object]) -> None:
    """What the table service publishes for a game: TableCreated, a DealScored per deal, GameEnded."""
    players = [str(p) for p in record["players"]]  # type: ignore[attr-defined]
    variant = common_pb2.Variant.Value(f"VARIANT_{record['variant']}")
    await pub.table_created(table, players, variant=variant, bots=[p.startswith("bot-") for p in players])
    running = [0, 0, 0, 0]
    for index, deal in enumerate(record["deals"]):  # type: ignore[arg-type]
        points = list(deal["scores"])
        running = [a + b for a, b in zip(running, points, strict=True)]
        contract = common_pb2.Contract.Value(f"CONTRACT_{deal['contract']}")
        await pub.deal_scored(table, index, contract, points, running)
    await pub.game_ended(table, json.dumps(record), list(record["totals"]), list(record["ranking"]))  # type: ignore[call-overload]


async def test_standings_equal_trix_replay(scoring: InProcessScoring, publisher: EventPublisher) -> None:
    replayed = {}
    for name, file in GAMES.items():
        record = json.loads((EXAMPLES / file).read_text())
        replayed[name] = trix_replay(EXAMPLES / file)
        await publish_game(publisher, f"real-{name}", record)

    async def all_ended() -> bool:
        return all(f"real-{n}" in scoring.service.state.records for n in GAMES)

    await eventually(all_ended, what="three games applied")
    for name, completed in replayed.items():
        standings = await scoring.stub.GetStandings(scoring_pb2.GetStandingsRequest(table_id=f"real-{name}"))
        assert list(standings.totals.values) == completed["totals"]
        assert [list(d.values) for d in standings.deals] == [d["scores"] for d in completed["deals"]]  # type: ignore[attr-defined]
        totals = completed["totals"]
        if name == "partnership":
            assert list(standings.team_totals) == [totals[0] + totals[2], totals[1] + totals[3]]  # type: ignore[index]
        else:
            assert list(standings.team_totals) == []
        got = await scoring.stub.GetGameRecord(scoring_pb2.GetGameRecordRequest(table_id=f"real-{name}"))
        assert json.loads(got.record_json)["fairness"] == completed["fairness"]

    # History, statistics: a player of the singles game, seat 3 ("سلمان", ranked 1).
    singles = replayed["singles"]
    player = singles["players"][3]  # type: ignore[index]
    history = await scoring.stub.ListHistory(scoring_pb2.ListHistoryRequest(player_id=player))
    mine = [(g.seat, g.place, list(g.totals.values)) for g in history.games if g.table_id == "real-singles"]
    assert mine == [(3, singles["ranking"][3], singles["totals"])]  # type: ignore[index]
    stats = await scoring.stub.GetPlayerStats(
        scoring_pb2.GetPlayerStatsRequest(player_id=player, variant=common_pb2.VARIANT_TRIX)
    )
    deals = singles["deals"]
    assert stats.games == 1 and stats.wins == (1 if singles["ranking"][3] == 1 else 0)  # type: ignore[index]
    assert stats.average_points == singles["totals"][3]  # type: ignore[index]
    by_contract: dict[str, list[int]] = {}
    for deal in deals:  # type: ignore[attr-defined]
        by_contract.setdefault(deal["contract"], []).append(deal["scores"][3])
    assert dict(stats.contract_averages) == {k: sum(v) / len(v) for k, v in by_contract.items()}
    assert dict(stats.doubled_card_losses) == count_losses(singles, 3)
    # A bot seat has no history, and the game with a bot is not rated.
    assert scoring.service.state.history.get("bot-1") is None
    assert scoring.service.state.ratings["TRIX"] == {}

    # The projection rebuilt from the journal equals the live one, exactly.
    rebuilt = ScoringService(scoring.config, JetStreamJournal(publisher.js))
    await rebuilt.load()
    assert rebuilt.state.snapshot() == scoring.service.state.snapshot()


def count_losses(record: dict[str, object], seat: int) -> dict[str, int]:
    losses: dict[str, int] = {}
    for taker, card in doubled_cards_taken(record):
        if taker == seat:
            losses[card] = losses.get(card, 0) + 1
    return losses


def test_doubled_card_losses_from_plays() -> None:
    # docs/rules.md §7: seat 1 doubled KH; seat 3 takes the trick with the AC lead... no: the
    # highest card of the led suit takes it (§4), so seat 2 (AC) takes KH here.
    record = {
        "deals": [
            {
                "contract": "KING",
                "doubles": [{"seat": 1, "cards": ["KH"]}],
                "plays": [
                    {"seat": 0, "card": "2C"},
                    {"seat": 1, "card": "KH"},
                    {"seat": 2, "card": "AC"},
                    {"seat": 3, "card": "TC"},
                ],
            },
            {"contract": "TRICKS", "doubles": [], "plays": []},
        ]
    }
    assert doubled_cards_taken(record) == [(2, "KH")]
    assert doubled_cards_taken({"deals": "garbage"}) == []


async def test_history_paging_and_rebuild_in_memory() -> None:
    journal = MemoryJournal()
    service = memory_service(journal)
    await service.load()
    await service.grant("a", 500, "g1", "test-admin-token")
    for g in range(7):
        players = ["a", f"b{g}", f"c{g}", f"d{g}"]
        created = {
            "type": "table_created",
            "variant": "COMPLEX",
            "players": players,
            "bots": [False] * 4,
            "stake": 10,
            "rake_percent": 0,
            "ticket_ids": [f"t{g}-{p}" for p in players],
        }
        await service.grant(f"b{g}", 10, f"gb{g}", "test-admin-token")
        await service.grant(f"c{g}", 10, f"gc{g}", "test-admin-token")
        await service.grant(f"d{g}", 10, f"gd{g}", "test-admin-token")
        for p in players:  # each stake held by its player's ticket (issue 42: never from a balance)
            await service.hold_stake(p, f"t{g}-{p}", 10)
        await service.apply_table_event(f"h{g}", 1, 10, created)
        record = json.dumps({"deals": [{"plays": [{"seat": 0, "card": "2C"}]}]})
        ended = {
            "type": "game_ended",
            "record_json": record,
            "totals": [g, 0, 0, -g],
            "ranking": [1, 2, 2, 4],
            "left_seat": -1,
        }
        assert await service.apply_table_event(f"h{g}", 3, 20 + g, ended)
        assert not await service.apply_table_event(f"h{g}", 3, 20 + g, ended)  # (table, sequence) once
    pages = []
    games, token = service.history("a", 3, "", "a")
    pages.append([s.table_id for s in games])
    while token:
        games, token = service.history("a", 3, token, "a")
        pages.append([s.table_id for s in games])
    assert pages == [["h6", "h5", "h4"], ["h3", "h2", "h1"], ["h0"]]
    assert service.balance("a") == (500 + 7 * 30, 0)
    rebuilt = memory_service(journal)
    await rebuilt.load()
    assert rebuilt.state.snapshot() == service.state.snapshot()
