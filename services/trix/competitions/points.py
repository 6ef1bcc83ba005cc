"""The points format (issue 43): every entrant plays every round; the standings decide.

Owns: the points of a table (singles by place, docs/rules.md §8: 1st 3, 2nd 2, 3rd 1, 4th 0;
partnership: each partner of the winning team 1, the other team 0; a shared place scores that
place's points; a leaver's unit 0), the standings and their tiebreak, and the next round's
tables. Standings: points, then table wins (place 1), then the sum of the unit's table
totals, then the seating draw (earlier first); a unit that left is out: it plays no more and
is ranked after every unit that did not leave. Later rounds are seated by standing, Swiss-like
for four-seat tables: the best unseated unit opens a table and takes the next units by
standing that it and the units already there have not met, searching (depth first, within
SEARCH_BUDGET placements) for a round in which no two units meet again; where none is found,
a greedy pass seats each table with the next units it has not met, then those that met it
fewest times. The seats of units that are out are taken by bots (a table needs four),
new bot units ranked after everyone. Pure.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from trix.competitions.model import BOT_PREFIX, Outcome, Seating, Unit, table_order
from trix.competitions.options import CompetitionOptions

SINGLES_POINTS = {1: 3, 2: 2, 3: 1, 4: 0}
PARTNERSHIP_POINTS = {1: 1, 2: 0}


@dataclass
class Standing:
    """One unit's standing after the rounds played."""

    unit: Unit
    points: int = 0
    wins: int = 0
    score: int = 0
    out: bool = False


def standings(
    options: CompetitionOptions,
    rounds: Sequence[Sequence[Seating]],
    outcomes: Mapping[tuple[int, int], Outcome],
    draw_index: Mapping[str, int],
) -> list[Standing]:
    """Every unit seated so far, best first (the documented tiebreak), from the finished tables."""
    table = PARTNERSHIP_POINTS if options.partnership else SINGLES_POINTS
    rows: dict[Unit, Standing] = {}
    for tables in rounds:
        for seating in tables:
            for unit in seating.units:
                rows.setdefault(unit, Standing(unit))
            outcome = outcomes.get((seating.round, seating.index))
            if outcome is None:
                continue
            for placed in table_order(seating, outcome):
                row = rows[placed.unit]
                row.out = row.out or placed.left
                row.points += 0 if placed.left else table.get(placed.place, 0)
                row.wins += int(placed.place == 1 and not placed.left)
                row.score += placed.total
    return sorted(rows.values(), key=lambda r: (r.out, -r.points, -r.wins, -r.score, draw_index[r.unit[0]]))


def next_round(
    options: CompetitionOptions,
    rounds: Sequence[Sequence[Seating]],
    outcomes: Mapping[tuple[int, int], Outcome],
    draw_index: dict[str, int],
) -> list[Seating]:
    """The next round's tables by standing ([] after the last round); registers new bots' draw index."""
    done = len(rounds)
    if done >= options.rounds:
        return []
    active = [row.unit for row in standings(options, rounds, outcomes, draw_index) if not row.out]
    per_table = options.units_per_table
    missing = -len(active) % per_table
    for k in range(missing):
        bot = tuple(f"{BOT_PREFIX}r{done + 1}-{k}-{i}" for i in range(options.unit_size))
        for player in bot:
            draw_index.setdefault(player, len(draw_index))
        active.append(bot)
    met = _met(rounds)
    grouped = _without_repeats(active, per_table, met) or _fewest_repeats(active, per_table, met)
    return [Seating(done + 1, i, tuple(table)) for i, table in enumerate(grouped)]


class _OutOfBudget(Exception):
    """The search for tables without a repeat tried SEARCH_BUDGET placements."""


SEARCH_BUDGET = 20_000
"""Placements the search for a round without a repeat meeting may try before the greedy pass."""


def _without_repeats(units: Sequence[Unit], per_table: int, met: Mapping[frozenset[Unit], int]) -> list[list[Unit]]:
    """Tables in which no two units have met, the best unseated unit opening each table and
    taking the next units by standing first (a depth-first search); [] when there is none
    within SEARCH_BUDGET placements."""
    tried = 0

    def fill(remaining: list[Unit]) -> list[list[Unit]] | None:
        return [] if not remaining else place([remaining[0]], remaining[1:])

    def place(table: list[Unit], rest: list[Unit]) -> list[list[Unit]] | None:
        nonlocal tried
        tried += 1
        if tried > SEARCH_BUDGET:
            raise _OutOfBudget
        if len(table) == per_table:
            tail = fill(rest)
            return None if tail is None else [table, *tail]
        for i, unit in enumerate(rest):
            if all(frozenset((unit, other)) not in met for other in table):
                found = place([*table, unit], rest[:i] + rest[i + 1 :])
                if found is not None:
                    return found
        return None

    try:
        return fill(list(units)) or []
    except _OutOfBudget:
        return []


def _fewest_repeats(units: Sequence[Unit], per_table: int, met: Mapping[frozenset[Unit], int]) -> list[list[Unit]]:
    """The greedy pass: each table opened by the best unseated unit, which takes the next units
    by standing it and its table have not met, then those that met them fewest times."""
    tables: list[list[Unit]] = []
    remaining = list(units)
    while remaining:
        table = [remaining.pop(0)]
        for unit in list(remaining):
            if len(table) == per_table:
                break
            if all(frozenset((unit, other)) not in met for other in table):
                table.append(unit)
                remaining.remove(unit)
        while len(table) < per_table:
            fewest = min(remaining, key=lambda u: sum(met.get(frozenset((u, o)), 0) for o in table))
            table.append(fewest)
            remaining.remove(fewest)
        tables.append(table)
    return tables


def _met(rounds: Sequence[Sequence[Seating]]) -> dict[frozenset[Unit], int]:
    """How many times each pair of units sat at one table."""
    met: dict[frozenset[Unit], int] = {}
    for tables in rounds:
        for seating in tables:
            for i, a in enumerate(seating.units):
                for b in seating.units[i + 1 :]:
                    key = frozenset((a, b))
                    met[key] = met.get(key, 0) + 1
    return met
