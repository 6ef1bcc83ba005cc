"""Ratings of the scoring service: a pairwise Bradley-Terry (Weng-Lin) update for
four-player rankings and two-team results (docs/adr/0004-scoring-ratings-and-ledger.md).

Owns the rating model and the mapping of a finished game onto it. Uses the `openskill`
package's `BradleyTerryFull` model (Weng & Lin 2011, "full pairing"): every seat (singles)
or team (partnership) is compared with every other one; a better place scores 1, an equal
place 0.5 (docs/rules.md §8 shared places), a worse one 0. Pure Python and deterministic, so a
rebuild from the journal gives bit-identical floats. Must not import grpc or nats.
"""

from __future__ import annotations

from dataclasses import dataclass

from openskill.models import BradleyTerryFull

MODEL = BradleyTerryFull()
"""Default parameters: mu 25, sigma 25/3, beta 25/6, tau 25/300, kappa 1e-4."""

DEFAULT_MU = 25.0
DEFAULT_SIGMA = 25.0 / 3.0
CONSERVATIVE_Z = 3.0
"""The leaderboard ranks by the conservative estimate mu - 3 sigma (the "ordinal")."""


@dataclass
class Rating:
    """One player's rating in one variant."""

    mu: float = DEFAULT_MU
    sigma: float = DEFAULT_SIGMA
    games: int = 0

    @property
    def ordinal(self) -> float:
        return self.mu - CONSERVATIVE_Z * self.sigma


def rate_singles(ratings: list[Rating], places: list[int]) -> None:
    """Update four seats' ratings in place from their places (docs/rules.md §8: 1, 1, 3, 4 on a tie)."""
    teams = [[MODEL.rating(mu=r.mu, sigma=r.sigma)] for r in ratings]
    result = MODEL.rate(teams, ranks=[float(p) for p in places])
    for rating, team in zip(ratings, result, strict=True):
        rating.mu, rating.sigma = team[0].mu, team[0].sigma
        rating.games += 1


def rate_partnership(ratings: list[Rating], places: list[int]) -> None:
    """Update four seats' ratings in place; teams {0,2} and {1,3} (docs/rules.md §1), places per seat.

    Both partners carry their team's place (docs/rules.md §12), so team {0,2} has place
    `places[0]` and team {1,3} `places[1]`; both 1 on a SHARED tie (§8).
    """
    teams = [
        [
            MODEL.rating(mu=ratings[0].mu, sigma=ratings[0].sigma),
            MODEL.rating(mu=ratings[2].mu, sigma=ratings[2].sigma),
        ],
        [
            MODEL.rating(mu=ratings[1].mu, sigma=ratings[1].sigma),
            MODEL.rating(mu=ratings[3].mu, sigma=ratings[3].sigma),
        ],
    ]
    result = MODEL.rate(teams, ranks=[float(places[0]), float(places[1])])
    for seat, (team, member) in {0: (0, 0), 2: (0, 1), 1: (1, 0), 3: (1, 1)}.items():
        new = result[team][member]
        ratings[seat].mu, ratings[seat].sigma = new.mu, new.sigma
        ratings[seat].games += 1
