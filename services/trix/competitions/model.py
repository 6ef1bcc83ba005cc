"""The pieces every competition format shares (issue 43): entrants, units, a table's seating,
its outcome and the order of a finished table.

Owns: a unit (one player in singles; a team of two partners in partnership, who sit opposite,
docs/rules.md §1), the seats of a table from its units, a table's outcome read from its §12
record, and the order of a finished table's units: by the record's ranking (§8), a leaver's
unit last whatever its points (§10: "placed last, in partnership his partner with him"), then
by the unit's total, then the lower seat (as §13 gives an indivisible coin to the lowest seat).
Pure: no clock, no I/O.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from trix.competitions.options import CompetitionError

Unit = tuple[str, ...]
"""The players of one unit, in seat order: (player,) or (partner at seat s, partner at s + 2)."""

BOT_PREFIX = "bot-"
"""Every bot's id starts so; a player id never does (the competition refuses such an entrant)."""


def is_bot(player: str) -> bool:
    return player.startswith(BOT_PREFIX)


@dataclass(frozen=True)
class Entrant:
    """A player in the competition at its start (or a bot that fills a seat)."""

    player: str
    rating: float = 0.0

    @property
    def bot(self) -> bool:
        return is_bot(self.player)


@dataclass(frozen=True)
class Seating:
    """One table of a round: its units in the order they sit."""

    round: int
    index: int
    units: tuple[Unit, ...]

    @property
    def players(self) -> tuple[str, ...]:
        """The players by seat 0..3: singles in unit order; partnership a0, b0, a1, b1 (partners opposite)."""
        if len(self.units) == 4:
            return tuple(u[0] for u in self.units)
        a, b = self.units
        return (a[0], b[0], a[1], b[1])

    def table_id(self, competition_id: str) -> str:
        return f"{competition_id}-r{self.round}-t{self.index}"

    def seats_of(self, unit: Unit) -> tuple[int, ...]:
        players = self.players
        return tuple(players.index(p) for p in unit)


@dataclass(frozen=True)
class Outcome:
    """A finished table: each seat's place (§8, 1 = won), total, and the seat that left (§10)."""

    places: tuple[int, int, int, int]
    totals: tuple[int, int, int, int]
    left: int | None = None

    @staticmethod
    def from_record(record: Any) -> Outcome:
        """The outcome a finished §12 record states (its ranking, totals and `left`)."""
        try:
            places = tuple(int(p) for p in record["ranking"])
            totals = tuple(int(t) for t in record["totals"])
            left = record.get("left")
        except (KeyError, TypeError, ValueError) as exc:
            raise CompetitionError("a table's record has no final ranking and totals", "record") from exc
        if len(places) != 4 or len(totals) != 4 or (left is not None and left not in range(4)):
            raise CompetitionError("a table's record has no final ranking and totals", "record")
        return Outcome((places[0], places[1], places[2], places[3]), (totals[0], totals[1], totals[2], totals[3]), left)


@dataclass(frozen=True)
class Placed:
    """A unit's result at one table: its position there (0 = first, a total order), the place the
    record gives it, its total, whether it left."""

    unit: Unit
    position: int
    place: int
    total: int
    left: bool


def table_order(seating: Seating, outcome: Outcome) -> list[Placed]:
    """The table's units best first: §8 place, a leaver's unit last (§10), total, lower seat."""
    rows = []
    for unit in seating.units:
        seats = seating.seats_of(unit)
        left = outcome.left is not None and outcome.left in seats
        place = min(outcome.places[s] for s in seats)
        total = sum(outcome.totals[s] for s in seats)
        rows.append((left, place, -total, min(seats), unit, total))
    rows.sort()
    return [Placed(unit, i, place, total, left) for i, (left, place, _, _, unit, total) in enumerate(rows)]


def chunk(units: Sequence[Unit], per_table: int, round_: int) -> list[Seating]:
    """Consecutive groups of `per_table` units, one table each, indexed in order."""
    if len(units) % per_table:
        raise CompetitionError(f"{len(units)} units do not fill tables of {per_table}", "seating")
    return [Seating(round_, i // per_table, tuple(units[i : i + per_table])) for i in range(0, len(units), per_table)]
