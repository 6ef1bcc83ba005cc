"""Ratings (docs/adr/0004): hand-computed values for small histories, unrated bot games,
and leaderboard paging and "around a player"."""

from __future__ import annotations

import json
import math

import pytest
from scoring_support import MemoryJournal, memory_service

from trix.scoring.ratings import Rating, rate_partnership, rate_singles
from trix.scoring.service import ScoringService

# Weng-Lin Bradley-Terry "full" (openskill defaults): mu 25, sigma 25/3, beta 25/6,
# tau 25/300 added to the variance before the update.
MU = 25.0
SIGMA2 = (25 / 3) ** 2 + (25 / 300) ** 2
BETA2 = (25 / 6) ** 2


def by_hand_singles(outcomes: list[float]) -> tuple[float, float]:
    """One new player against three new players; `outcomes` are 1 win, 0.5 tie, 0 loss.

    Equal means: every pairwise win probability is 1/2 and c = sqrt(2 sigma^2 + 2 beta^2).
    mu' = mu + sigma^2/c * sum(s - 1/2); sigma'^2 = sigma^2 (1 - sum(gamma sigma^2/c^2 * 1/4)),
    gamma = sigma / c.
    """
    c = math.sqrt(2 * SIGMA2 + 2 * BETA2)
    mu = MU + SIGMA2 / c * sum(s - 0.5 for s in outcomes)
    delta = len(outcomes) * (math.sqrt(SIGMA2) / c) * SIGMA2 / c**2 * 0.25
    return mu, math.sqrt(SIGMA2) * math.sqrt(1 - delta)


def test_singles_by_hand() -> None:
    ratings = [Rating() for _ in range(4)]
    rate_singles(ratings, [2, 1, 4, 3])  # seat 1 first, seat 0 second, seat 3 third, seat 2 last
    expected = {1: [1, 1, 1], 0: [0, 1, 1], 3: [0, 0, 1], 2: [0, 0, 0]}
    for seat, outcomes in expected.items():
        mu, sigma = by_hand_singles([float(o) for o in outcomes])
        assert ratings[seat].mu == pytest.approx(mu, abs=1e-9)
        assert ratings[seat].sigma == pytest.approx(sigma, abs=1e-9)
        assert ratings[seat].games == 1
    # Numbers, for the reader: the winner gains 1.5 sigma^2/c.
    assert ratings[1].mu == pytest.approx(32.9062, abs=1e-4)
    assert ratings[2].mu == pytest.approx(17.0938, abs=1e-4)


def test_tie_by_hand() -> None:
    ratings = [Rating() for _ in range(4)]
    rate_singles(ratings, [1, 1, 3, 4])  # docs/rules.md §8: equal totals share a place
    winner_mu, winner_sigma = by_hand_singles([0.5, 1, 1])
    assert ratings[0].mu == pytest.approx(winner_mu) and ratings[1].mu == pytest.approx(winner_mu)
    assert ratings[0].sigma == pytest.approx(winner_sigma)
    assert ratings[2].mu == pytest.approx(by_hand_singles([0, 0, 1])[0])
    assert ratings[3].mu == pytest.approx(by_hand_singles([0, 0, 0])[0])
    assert ratings[0].mu - MU == pytest.approx(2 * (MU - ratings[2].mu))


def test_partnership_by_hand() -> None:
    ratings = [Rating() for _ in range(4)]
    rate_partnership(ratings, [2, 1, 2, 1])  # team {1,3} wins
    # Teams: mu 50, variance 2 sigma^2; c = sqrt(4 sigma^2 + 2 beta^2). A member moves by
    # its share of the team variance (1/2): mu' = mu +- 1/2 * sigma^2/c... times 2 sigma^2/c / 2.
    c = math.sqrt(4 * SIGMA2 + 2 * BETA2)
    team_omega = 2 * SIGMA2 / c * 0.5
    gain = 0.5 * team_omega
    delta = (math.sqrt(2 * SIGMA2) / c) * (2 * SIGMA2) / c**2 * 0.25
    sigma = math.sqrt(SIGMA2) * math.sqrt(1 - 0.5 * delta)
    for seat in (1, 3):
        assert ratings[seat].mu == pytest.approx(MU + gain)
        assert ratings[seat].sigma == pytest.approx(sigma)
    for seat in (0, 2):
        assert ratings[seat].mu == pytest.approx(MU - gain)
        assert ratings[seat].sigma == pytest.approx(sigma)


def record(players: list[str], ranking: list[int]) -> str:
    return json.dumps(
        {
            "format": "trix-game/1",
            "players": players,
            "deals": [{"plays": [{"seat": 0, "card": "2C"}]}],
            "ranking": ranking,
        }
    )


async def finish(
    service: ScoringService,
    table: str,
    players: list[str],
    ranking: list[int],
    *,
    variant: str = "TRIX",
    bots: list[bool] | None = None,
) -> None:
    created = {
        "type": "table_created",
        "variant": variant,
        "players": players,
        "bots": bots or [False] * 4,
        "stake": 0,
        "rake_percent": 0,
        "ticket_ids": [],
    }
    await service.apply_table_event(table, 1, 1, created)
    ended = {
        "type": "game_ended",
        "record_json": record(players, ranking),
        "totals": [0, 0, 0, 0],
        "ranking": ranking,
        "left_seat": -1,
    }
    await service.apply_table_event(table, 2, 2, ended)


async def test_bot_games_are_unrated_and_leaderboard_pages() -> None:
    service = memory_service(MemoryJournal())
    await service.load()
    await finish(service, "bot-table", ["a", "b", "c", "bot-1"], [1, 2, 3, 4], bots=[False, False, False, True])
    assert service.state.ratings["TRIX"] == {}
    assert service.player_stats("a", "TRIX").games == 1  # still in statistics and history
    # Ten players, p0 always first ... a chain of games gives a strict order p0 > p1 > ...
    names = [f"p{i}" for i in range(10)]
    for g in range(9):
        four = [names[g], names[(g + 1) % 10], names[(g + 2) % 10], names[(g + 3) % 10]]
        await finish(service, f"t{g}", four, [1, 2, 3, 4])
    rows, token = service.leaderboard("TRIX", 4, "", "")
    assert [r[0] for r in rows] == [1, 2, 3, 4] and token == "4"
    everyone = rows
    while token:
        page, token = service.leaderboard("TRIX", 4, token, "")
        everyone += page
    assert len(everyone) == 10 and [r[0] for r in everyone] == list(range(1, 11))
    ratings = [r[2] for r in everyone]
    assert ratings == sorted(ratings, reverse=True)
    target = everyone[6][1]
    around, _ = service.leaderboard("TRIX", 3, "", target)
    assert [r[1] for r in around] == [everyone[5][1], target, everyone[7][1]]
    assert [r[0] for r in around] == [6, 7, 8]
    assert service.leaderboard("TRIX_PARTNERSHIP", 10, "", "")[0] == []  # kept apart per variant
