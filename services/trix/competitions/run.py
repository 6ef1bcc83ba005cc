"""One competition's rounds (issue 43), from the start to the final ranking.

Owns: the state of a started competition (its rounds' tables and the outcomes in so far) and
the two invariants the service and the fault tests rely on: a round is opened once, only when
every table of the one before has ended, and nobody sits twice in a round. A round ends when
its last table ends and the next round's tables are made at once (nobody waits for a round
forever: a no-show is played by auto-play, a leaver is ranked last at his table). Re-running
a competition from its seed and its tables' outcomes gives the same rounds and ranking (the
competition file is checked that way). Pure.
"""

from __future__ import annotations

from collections.abc import Sequence

from trix.competitions import knockout, points
from trix.competitions.model import Entrant, Outcome, Seating, Unit
from trix.competitions.options import CompetitionError, CompetitionOptions
from trix.competitions.seating import draw, first_round


class CompetitionRun:
    """A started competition: `record` each table's outcome; the next round opens by itself."""

    def __init__(
        self, competition_id: str, options: CompetitionOptions, seed: bytes, entrants: Sequence[Entrant]
    ) -> None:
        self.competition_id = competition_id
        self.options = options
        self.entrants = tuple(entrants)
        self.draw_index = {e.player: i for i, e in enumerate(draw(seed, entrants))}
        self.rounds: list[list[Seating]] = []
        self.outcomes: dict[tuple[int, int], Outcome] = {}
        self._open(first_round(options, seed, entrants))

    @property
    def current_round(self) -> int:
        return len(self.rounds)

    @property
    def finished(self) -> bool:
        # Both formats play exactly `rounds` rounds (a knockout's capacity is its bracket's).
        last = self.rounds[-1]
        return self.current_round == self.options.rounds and all((s.round, s.index) in self.outcomes for s in last)

    def table(self, round_: int, index: int) -> Seating:
        if not 1 <= round_ <= len(self.rounds) or not 0 <= index < len(self.rounds[round_ - 1]):
            raise CompetitionError(f"no table {index} in round {round_}", "table")
        return self.rounds[round_ - 1][index]

    def record(self, round_: int, index: int, outcome: Outcome) -> list[Seating]:
        """A table's outcome; returns the next round's tables when it was the round's last table."""
        self.table(round_, index)
        if round_ != self.current_round:
            raise CompetitionError(f"round {round_} is over; the current round is {self.current_round}", "table")
        if (round_, index) in self.outcomes:
            raise CompetitionError(f"table {index} of round {round_} has already ended", "table")
        self.outcomes[round_, index] = outcome
        if any((s.round, s.index) not in self.outcomes for s in self.rounds[-1]):
            return []
        tables = self._next()
        if tables:
            self._open(tables)
        return tables

    def _next(self) -> list[Seating]:
        if self.options.format == "knockout":
            last = self.rounds[-1]
            return knockout.next_round(self.options, last, {s.index: self.outcomes[s.round, s.index] for s in last})
        return points.next_round(self.options, self.rounds, self.outcomes, self.draw_index)

    def _open(self, tables: list[Seating]) -> None:
        round_ = tables[0].round
        if round_ != len(self.rounds) + 1 or any(s.round != round_ for s in tables):
            raise CompetitionError(f"round {round_} cannot start after round {len(self.rounds)}", "round")
        seated = [p for s in tables for p in s.players]
        if len(seated) != len(set(seated)):
            raise CompetitionError(f"a player is seated twice in round {round_}", "round")
        if [s.index for s in tables] != list(range(len(tables))):
            raise CompetitionError(f"round {round_}'s tables are not numbered 0..{len(tables) - 1}", "round")
        self.rounds.append(tables)

    def ranking(self) -> list[Unit]:
        """The final ranking, best first (CompetitionError before the last table has ended)."""
        if not self.finished:
            raise CompetitionError("the competition has not finished", "ranking")
        if self.options.format == "knockout":
            return knockout.ranking(self.rounds, self.outcomes, self.draw_index)
        return [row.unit for row in points.standings(self.options, self.rounds, self.outcomes, self.draw_index)]
