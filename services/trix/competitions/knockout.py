"""The knockout format (issue 43): tables of four, the table's winner goes on.

Owns: the next round's tables from a finished round (the winner of each table, the winning
team of two in partnership, goes on; the winners of tables 4i..4i+3, or 2i..2i+1 in
partnership, meet at table i of the next round, so the bracket is fixed by the first round),
and the final ranking: the final table's order first, then the units knocked out in the round
before ordered by their position at their table, then their table total, then the draw, and
so on down to the first round. A leaver is last at his table (`trix.competitions.model`), so he
never goes on. Pure.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from trix.competitions.model import Outcome, Placed, Seating, Unit, chunk, table_order
from trix.competitions.options import CompetitionOptions


def next_round(
    options: CompetitionOptions, finished: Sequence[Seating], outcomes: Mapping[int, Outcome]
) -> list[Seating]:
    """The tables of the round after `finished` (whose outcomes are by table index); [] after the final."""
    round_ = finished[0].round
    if round_ >= options.rounds:
        return []
    winners = [table_order(s, outcomes[s.index])[0].unit for s in sorted(finished, key=lambda s: s.index)]
    return chunk(winners, options.units_per_table, round_ + 1)


def ranking(
    rounds: Sequence[Sequence[Seating]], outcomes: Mapping[tuple[int, int], Outcome], draw_index: Mapping[str, int]
) -> list[Unit]:
    """Every unit best first: the later its last table, the better; then its position there, its
    total there, the draw."""
    last: dict[Unit, tuple[int, Placed]] = {}
    for tables in rounds:
        for seating in tables:
            for placed in table_order(seating, outcomes[seating.round, seating.index]):
                last[placed.unit] = (seating.round, placed)
    return sorted(last, key=lambda u: (-last[u][0], last[u][1].position, -last[u][1].total, draw_index[u[0]]))
