"""Repeated no-shows (issue 43, docs/adr/0026): who did not come to his competition table, and
the growing wait before such a player may register again.

A no-show, from the table's public results (TABLE_RESULTS, the facts the competitions service
may read): a human entrant whose seat was played by auto-play when the table was created
(`TableCreated` seat `bot`) and who never took it back (no `SeatControlChanged` giving the
seat to him) before the game ended. His table is played out for him (nobody waits); he is
counted once per competition, however many of its tables he missed.

The wait, from his no-shows in the last `WINDOW_MS` (7 days), counted at his latest one:

| no-shows in 7 days | registration opens again |
|---|---|
| 1 | at once |
| 2 | 1 hour after the latest |
| 3 | 1 day after the latest |
| 4 or more | 7 days after the latest |

Pure: the time is passed in; the service folds every `CompetitionTableEnded.no_shows` with
its event's time (a restarted process rebuilds the same counts).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Final

from trix.competitions.model import is_bot
from trix.v1 import events_pb2

HOUR_MS: Final = 3_600_000
WINDOW_MS: Final = 7 * 24 * HOUR_MS
WAITS_MS: Final = ((2, HOUR_MS), (3, 24 * HOUR_MS), (4, 7 * 24 * HOUR_MS))
"""(no-shows in the window, at least; the wait after the latest), longest last."""


def no_shows(events: Iterable[events_pb2.Event]) -> list[str]:
    """The human players of a table who never took their auto-played seat, in seat order."""
    auto: dict[int, str] = {}
    for event in events:
        body = event.WhichOneof("body")
        if body == "table_created":
            auto = {s.index: s.player_id for s in event.table_created.seats if s.bot and not is_bot(s.player_id)}
        elif body == "seat_control_changed" and not event.seat_control_changed.bot:
            auto.pop(event.seat_control_changed.seat, None)
    return [auto[seat] for seat in sorted(auto)]


def wait_ms(count: int) -> int:
    """The wait after the latest no-show when `count` fall within the window."""
    out = 0
    for at_least, wait in WAITS_MS:
        if count >= at_least:
            out = wait
    return out


@dataclass
class NoShows:
    """Every player's no-shows: competition id -> the time of its first no-show."""

    seen: dict[str, dict[str, int]] = field(default_factory=dict)

    def record(self, player: str, competition_id: str, time_ms: int) -> None:
        self.seen.setdefault(player, {}).setdefault(competition_id, time_ms)

    def opens_at_ms(self, player: str, now_ms: int) -> int:
        """When `player` may register again (<= now_ms: he may now)."""
        times = sorted(self.seen.get(player, {}).values())
        if not times:
            return now_ms
        latest = times[-1]
        count = sum(1 for t in times if t > latest - WINDOW_MS)
        return latest + wait_ms(count)


def no_show_wait_message(opens_at_ms: int) -> str:
    """The refusal a client shows: why, and when registration opens again (UTC)."""
    when = datetime.fromtimestamp(opens_at_ms / 1000, tz=UTC).strftime("%Y-%m-%d %H:%M UTC")
    return f"you missed your table in recent competitions: you may register again from {when}"
