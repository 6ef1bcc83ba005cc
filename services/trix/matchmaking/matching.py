"""The pure matching: which queued tickets share a table and where they sit.

`build_units` pairs mutual partners, `form_groups` forms the tables of one queue (oldest
unit first, candidates within its widening rating window, closest first; bots fill an
anchor that waited long enough), `assign_seats` seats them (partners opposite,
docs/rules.md §1). No I/O and no clock of its own: the caller gives `now` and a random
generator, so every decision is reproducible (tests/matchmaking/test_matching_properties.py).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from trix.matchmaking.records import Ticket


@dataclass(frozen=True)
class RatingWindow:
    """The accepted rating distance, widening with waiting time."""

    base: float
    growth_per_s: float
    maximum: float

    def at(self, waited_s: float) -> float:
        return min(self.maximum, self.base + self.growth_per_s * max(0.0, waited_s))


@dataclass
class Unit:
    """One ticket, or a partner pair (both named each other) that must sit opposite."""

    tickets: list[Ticket]

    @property
    def size(self) -> int:
        return len(self.tickets)

    @property
    def created_at(self) -> float:
        return min(t.created_at for t in self.tickets)

    @property
    def rating(self) -> float:
        return sum(t.rating for t in self.tickets) / len(self.tickets)


def build_units(tickets: Iterable[Ticket]) -> list[Unit]:
    """Solo tickets and mutual partner pairs, oldest first; a ticket whose partner is not
    queued (yet) waits."""
    by_player = {t.player_id: t for t in tickets}
    units: list[Unit] = []
    seen: set[str] = set()
    for t in by_player.values():
        if t.player_id in seen:
            continue
        if not t.partner_id:
            units.append(Unit([t]))
            seen.add(t.player_id)
            continue
        mate = by_player.get(t.partner_id)
        if mate is not None and mate.partner_id == t.player_id and mate.player_id not in seen:
            units.append(Unit(sorted([t, mate], key=lambda x: x.ticket_id)))
            seen.update((t.player_id, mate.player_id))
    units.sort(key=lambda u: (u.created_at, u.tickets[0].ticket_id))
    return units


@dataclass
class Group:
    """Units that will share a table; bots take the seats left."""

    units: list[Unit]

    @property
    def humans(self) -> int:
        return sum(u.size for u in self.units)


def form_groups(
    tickets: Iterable[Ticket],
    now: float,
    window: RatingWindow,
    bot_fill_after_s: float,
    bots_allowed: bool,
    limit: int | None = None,
) -> list[Group]:
    """Groups of one queue: the oldest unit is the anchor; candidates within the anchor's
    rating window (it widens with the anchor's wait) are taken closest first. An anchor that
    has waited `bot_fill_after_s` takes what it found and bots fill the rest (free tables).

    Linear in the queue's size: the units sit in a list sorted by rating, linked so that a
    unit taken is unlinked, and an anchor walks outwards from its own place (the nearer side
    first) until its table is full or both sides leave the window. (A quadratic scan here
    held the event loop for seconds under a burst of thousands of tickets in one queue and
    starved the partition-lease renewals.) At most `limit` groups are formed per call."""
    units = build_units(tickets)
    n = len(units)
    order = sorted(range(n), key=lambda j: (units[j].rating, units[j].created_at, j))
    place = [0] * n
    for k, j in enumerate(order):
        place[j] = k
    prev = list(range(-1, n - 1))  # linked list over sorted places of the units not taken
    nxt = list(range(1, n + 1))

    def unlink(k: int) -> None:
        if prev[k] >= 0:
            nxt[prev[k]] = nxt[k]
        if nxt[k] < n:
            prev[nxt[k]] = prev[k]

    used = [False] * n
    groups: list[Group] = []
    for i, anchor in enumerate(units):
        if used[i]:
            continue
        if limit is not None and len(groups) >= limit:
            break
        waited = now - anchor.created_at
        width = window.at(waited)
        need = 4 - anchor.size
        chosen = [i]
        left, right = prev[place[i]], nxt[place[i]]
        while need > 0:
            lj = order[left] if left >= 0 else -1
            rj = order[right] if right < n else -1
            lkey = (abs(units[lj].rating - anchor.rating), units[lj].created_at, lj) if lj >= 0 else None
            rkey = (abs(units[rj].rating - anchor.rating), units[rj].created_at, rj) if rj >= 0 else None
            if lkey is not None and lkey[0] > width:
                lkey = None
            if rkey is not None and rkey[0] > width:
                rkey = None
            if lkey is None and rkey is None:
                break
            if rkey is None or (lkey is not None and lkey < rkey):
                j = lj
                left = prev[left]
            else:
                j = rj
                right = nxt[right]
            if units[j].size <= need:
                chosen.append(j)
                need -= units[j].size
        if need == 0 or (bots_allowed and waited >= bot_fill_after_s):
            for j in chosen:
                used[j] = True
                unlink(place[j])
            groups.append(Group([units[j] for j in chosen]))
    return groups


def assign_seats(group: Group, rng: Any) -> list[Ticket | None]:
    """Seats 0..3 at random (docs/rules.md §1): each pair in {s, s+2}, None = a bot."""
    seats: list[Ticket | None] = [None] * 4
    pairs = [u for u in group.units if u.size == 2]
    solos = [u.tickets[0] for u in group.units if u.size == 1]
    teams = [0, 1]
    rng.shuffle(teams)
    for team, pair in zip(teams, pairs, strict=False):
        a, b = pair.tickets
        if rng.random() < 0.5:
            a, b = b, a
        seats[team], seats[team + 2] = a, b
    free = [s for s in range(4) if seats[s] is None]
    rng.shuffle(free)
    for seat, ticket in zip(free, solos, strict=False):
        seats[seat] = ticket
    return seats
