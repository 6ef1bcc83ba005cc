"""The start of a competition (issue 43): who plays, and where the first round sits them.

Owns: the seating seed and its commitment (docs/rules.md §11's convention: 32 random bytes,
committed by their SHA-256 in lower-case hex, published before registration closes and
revealed after the start), the roster at the start (cancelled under MIN_FILL_PERCENT of the
capacity; bots fill the empty seats when `bot_fill` is on, else a table that cannot be full
cancels it), the draw (the entrants shuffled by §11's Fisher-Yates over
HMAC-SHA256(key=seed, msg=f"{SEATING_LABEL}:0:{k}"), so anyone with the seed redraws it), and
the first round's tables. Random seating sits the drawn order in groups; rating seating sorts
by rating (the draw breaks equal ratings) and deals the units to the tables in a snake
(1, 2, ..., T, T, ..., 2, 1, ...), so the strongest meet late. Pure: the seed is passed in.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from trix.competitions.model import BOT_PREFIX, Entrant, Seating, Unit, chunk
from trix.competitions.options import CompetitionError, CompetitionOptions
from trix.fairness import commitment, new_server_seed, shuffled

SEATING_LABEL = "competition-seating"
new_seating_seed = new_server_seed
seating_commitment = commitment


@dataclass(frozen=True)
class Start:
    """The decision at the start time: the entrants who play (humans and filling bots), or why not."""

    entrants: tuple[Entrant, ...]
    cancelled: str = ""


def start(options: CompetitionOptions, humans: Sequence[Entrant]) -> Start:
    """Who plays, from the humans registered (and accepted, and not gone) at the start time."""
    players = [e.player for e in humans]
    if len(set(players)) != len(players):
        raise CompetitionError("an entrant is registered twice", "entrants")
    if any(e.bot for e in humans):
        raise CompetitionError(f"a player id may not start with {BOT_PREFIX!r}", "entrants")
    if len(humans) > options.capacity:
        raise CompetitionError(f"{len(humans)} entrants for {options.capacity} places", "entrants")
    if len(humans) < options.min_entrants():
        return Start((), f"underfilled: {len(humans)} of {options.capacity}, fewer than {options.min_entrants()}")
    missing = options.capacity - len(humans)
    if options.bot_fill:
        bots = tuple(Entrant(f"{BOT_PREFIX}{i + 1}") for i in range(missing))
        return Start((*humans, *bots))
    if options.format == "knockout" and missing:
        return Start((), f"not full ({len(humans)} of {options.capacity}) and bot fill is off")
    if len(humans) % 4:
        return Start((), f"{len(humans)} entrants do not fill tables of four and bot fill is off")
    return Start(tuple(humans))


def draw(seed: bytes, entrants: Sequence[Entrant]) -> list[Entrant]:
    """The entrants in the order the seed draws them (the same on every replay of the seed)."""
    order = shuffled(seed, SEATING_LABEL, 0, len(entrants))
    return [entrants[i] for i in order]


def first_round(options: CompetitionOptions, seed: bytes, entrants: Sequence[Entrant]) -> list[Seating]:
    """Round 1's tables: the draw (or ratings, the draw breaking ties) grouped into units and tables."""
    drawn = draw(seed, entrants)
    if options.seating == "rating":
        position = {e.player: i for i, e in enumerate(drawn)}
        drawn = sorted(drawn, key=lambda e: (-e.rating, position[e.player]))
    size = options.unit_size
    units: list[Unit] = [tuple(e.player for e in drawn[i : i + size]) for i in range(0, len(drawn), size)]
    per_table = options.units_per_table
    if options.seating == "rating":
        units = snake(units, len(units) // per_table)
    return chunk(units, per_table, 1)


def snake(units: Sequence[Unit], tables: int) -> list[Unit]:
    """Units best first dealt to `tables` tables in a snake, returned table after table."""
    if tables <= 0:
        raise CompetitionError("no table to seat", "seating")
    dealt: list[list[Unit]] = [[] for _ in range(tables)]
    for i, unit in enumerate(units):
        lap, step = divmod(i, tables)
        dealt[step if lap % 2 == 0 else tables - 1 - step].append(unit)
    return [unit for table in dealt for unit in table]
