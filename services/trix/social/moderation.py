"""Moderation without a moderator online (issue 44): what happens to a line a player sends.

Owns `ChatModeration.judge`, in this order: a player in a timeout is refused; an empty line
or one over MAX_LINE_CHARACTERS is refused; the player's burst in that channel (then a
cool-down), and the channel's own burst, are spent; a line whose skeleton
(`trix.social.normalise.skeleton`) repeats the player's previous line in that channel is
dropped; the word filter's verdict is taken, and FILTER_STRIKES filtered lines within
STRIKE_WINDOW_S start a TIMEOUT_S timeout (15 minutes, as lichess). A filtered line is not
delivered; its author is told only that it was not sent.

Pure: time comes from an injected clock (seconds, monotonic), nothing is stored but in
memory; `forget_idle` drops what no longer limits anybody. The social service keeps one
per replica for the channels it serves.
"""

from __future__ import annotations

import enum
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Final

from trix.social.normalise import skeleton
from trix.social.wordfilter import CLEAN, Verdict, WordFilter, default_filter

MAX_LINE_CHARACTERS: Final = 280
"""A chat line's length limit (barbu-server's 280)."""
TIMEOUT_S: Final = 15 * 60.0
"""An automatic timeout (lichess's 15 minutes)."""
FILTER_STRIKES: Final = 3
STRIKE_WINDOW_S: Final = 10 * 60.0


@dataclass(frozen=True)
class Bucket:
    """A burst, then one line every `refill_s` (a token bucket)."""

    burst: int
    refill_s: float


PLAYER_BUCKET: Final = Bucket(burst=5, refill_s=2.0)
"""One player in one channel: five lines at once, then one every 2 s."""
CHANNEL_BUCKET: Final = Bucket(burst=20, refill_s=0.25)
"""One channel, all its writers together: twenty lines at once, then four a second."""
MIN_INTERVAL_S: Final = 0.5
"""Between two lines of one player in one channel, always (barbu-server's 500 ms per seat)."""
READ_KEPT: Final = 4096
"""Distinct lines whose skeleton and verdict are kept (then all dropped, read again)."""
REPEAT_WINDOW_S: Final = 30.0
"""A line repeating the player's previous line in the channel within this is dropped."""


class Outcome(enum.Enum):
    """What becomes of a line."""

    SENT = "sent"
    EMPTY = "empty"
    TOO_LONG = "too long"
    TOO_FAST = "too fast"
    CHANNEL_BUSY = "channel busy"
    REPEATED = "repeated"
    FILTERED = "filtered"
    TIMED_OUT = "timed out"


@dataclass(frozen=True)
class Judgement:
    """The outcome of one line; `retry_after_s` when waiting helps (a rate limit, a timeout)."""

    outcome: Outcome
    retry_after_s: float = 0.0
    verdict: Verdict = CLEAN
    timeout_started: bool = False
    """This line's filter strike started a timeout."""

    @property
    def sent(self) -> bool:
        return self.outcome is Outcome.SENT


@dataclass
class _Tokens:
    level: float
    at: float

    def take(self, bucket: Bucket, now: float) -> float:
        """Spend one line: 0.0, or the seconds until one is available (nothing spent)."""
        self.level = min(float(bucket.burst), self.level + (now - self.at) / bucket.refill_s)
        self.at = now
        if self.level >= 1.0:
            self.level -= 1.0
            return 0.0
        return (1.0 - self.level) * bucket.refill_s


@dataclass
class _Writer:
    """One player in one channel."""

    tokens: _Tokens
    last_at: float = float("-inf")
    last_line: str = ""


@dataclass
class _Player:
    strikes: deque[float] = field(default_factory=deque)
    timed_out_until: float = float("-inf")


class ChatModeration:
    """The limits and timeouts of every channel one replica serves, on one clock."""

    def __init__(
        self,
        clock: Callable[[], float],
        word_filter: WordFilter | None = None,
        *,
        player_bucket: Bucket = PLAYER_BUCKET,
        channel_bucket: Bucket = CHANNEL_BUCKET,
    ) -> None:
        self.clock = clock
        self.word_filter = word_filter or default_filter()
        self.player_bucket = player_bucket
        self.channel_bucket = channel_bucket
        self._writers: dict[tuple[str, str], _Writer] = {}
        self._channels: dict[str, _Tokens] = {}
        self._players: dict[str, _Player] = {}
        self._lines: dict[str, tuple[str, Verdict]] = {}
        """Line -> its skeleton and verdict (`_read`)."""

    def timed_out_until(self, player: str) -> float:
        """When `player`'s timeout ends (a clock value; in the past when there is none)."""
        state = self._players.get(player)
        return state.timed_out_until if state else float("-inf")

    def judge(self, player: str, channel: str, line: str) -> Judgement:
        """What becomes of `line` sent by `player` in `channel` (its limits spent if sent or
        dropped as a repeat or by the filter; not spent when refused before)."""
        now = self.clock()
        state = self._players.setdefault(player, _Player())
        if now < state.timed_out_until:
            return Judgement(Outcome.TIMED_OUT, state.timed_out_until - now)
        if not line.strip():
            return Judgement(Outcome.EMPTY)
        if len(line) > MAX_LINE_CHARACTERS:
            return Judgement(Outcome.TOO_LONG)
        writer = self._writers.get((player, channel))
        if writer is None:
            writer = self._writers[(player, channel)] = _Writer(_Tokens(float(self.player_bucket.burst), now))
        if now - writer.last_at < MIN_INTERVAL_S:
            return Judgement(Outcome.TOO_FAST, MIN_INTERVAL_S - (now - writer.last_at))
        wait = writer.tokens.take(self.player_bucket, now)
        if wait:
            return Judgement(Outcome.TOO_FAST, wait)
        tokens = self._channels.setdefault(channel, _Tokens(float(self.channel_bucket.burst), now))
        wait = tokens.take(self.channel_bucket, now)
        if wait:
            writer.tokens.level += 1.0  # the player's line was not his fault: give it back
            return Judgement(Outcome.CHANNEL_BUSY, wait)
        same, verdict = self._read(line)
        repeated = same == writer.last_line and now - writer.last_at < REPEAT_WINDOW_S
        writer.last_at, writer.last_line = now, same
        if repeated:
            return Judgement(Outcome.REPEATED)
        if verdict.clean:
            return Judgement(Outcome.SENT)
        return self._strike(state, verdict, now)

    def _read(self, line: str) -> tuple[str, Verdict]:
        """`line`'s skeleton and the filter's verdict, both pure: a line said again (a quick
        phrase, "gg", "salam") is read once while it is among the last READ_KEPT read."""
        read = self._lines.get(line)
        if read is None:
            if len(self._lines) >= READ_KEPT:
                self._lines.clear()
            read = self._lines[line] = (skeleton(line), self.word_filter.check(line))
        return read

    def _strike(self, state: _Player, verdict: Verdict, now: float) -> Judgement:
        state.strikes.append(now)
        while state.strikes and now - state.strikes[0] >= STRIKE_WINDOW_S:
            state.strikes.popleft()
        if len(state.strikes) >= FILTER_STRIKES:
            state.strikes.clear()
            state.timed_out_until = now + TIMEOUT_S
            return Judgement(Outcome.FILTERED, TIMEOUT_S, verdict, timeout_started=True)
        return Judgement(Outcome.FILTERED, 0.0, verdict)

    def forget_idle(self) -> int:
        """Drop the state of writers, channels and players that limit nothing any more (a
        full bucket, no repeat window, no strike, no timeout); how many entries went."""
        now = self.clock()
        idle_writers = [
            k
            for k, w in self._writers.items()
            if now - w.last_at >= REPEAT_WINDOW_S
            and w.tokens.level + (now - w.tokens.at) / self.player_bucket.refill_s >= self.player_bucket.burst
        ]
        idle_channels = [
            k
            for k, t in self._channels.items()
            if t.level + (now - t.at) / self.channel_bucket.refill_s >= self.channel_bucket.burst
        ]
        idle_players = [
            k
            for k, p in self._players.items()
            if now >= p.timed_out_until and all(now - s >= STRIKE_WINDOW_S for s in p.strikes)
        ]
        for key in idle_writers:
            del self._writers[key]
        for name in idle_channels:
            del self._channels[name]
        for player in idle_players:
            del self._players[player]
        return len(idle_writers) + len(idle_channels) + len(idle_players)
