"""Moderation without a moderator (issue 44): per player and per channel bursts then a
cool-down, a repeated line dropped, the 280-character limit, and a 15-minute timeout after
repeated filtered lines, all on an injected clock."""

from __future__ import annotations

import itertools

from hypothesis import given, settings
from hypothesis import strategies as st

from trix.social.moderation import (
    CHANNEL_BUCKET,
    FILTER_STRIKES,
    MAX_LINE_CHARACTERS,
    MIN_INTERVAL_S,
    PLAYER_BUCKET,
    TIMEOUT_S,
    Bucket,
    ChatModeration,
    Outcome,
)


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def moderation(
    player_bucket: Bucket = PLAYER_BUCKET, channel_bucket: Bucket = CHANNEL_BUCKET
) -> tuple[ChatModeration, Clock]:
    clock = Clock()
    return ChatModeration(clock, player_bucket=player_bucket, channel_bucket=channel_bucket), clock


def test_a_burst_passes_then_the_player_cools_down_and_the_others_still_talk() -> None:
    mod, clock = moderation()
    start = clock.now
    outcomes = []
    for i in range(3 * PLAYER_BUCKET.burst):
        outcomes.append(mod.judge("p1", "t1", f"line {i}").outcome)
        clock.now += MIN_INTERVAL_S
    assert outcomes[: PLAYER_BUCKET.burst] == [Outcome.SENT] * PLAYER_BUCKET.burst
    assert Outcome.TOO_FAST in outcomes
    refilled = (clock.now - start) / PLAYER_BUCKET.refill_s
    assert outcomes.count(Outcome.SENT) <= PLAYER_BUCKET.burst + refilled
    refused = mod.judge("p1", "t1", "one more")
    assert refused.outcome is Outcome.TOO_FAST and 0 < refused.retry_after_s <= PLAYER_BUCKET.refill_s
    assert mod.judge("p2", "t1", "my line").sent  # the flood of one player cuts only him
    assert mod.judge("p1", "t2", "other channel").sent  # per channel
    clock.now += refused.retry_after_s
    assert mod.judge("p1", "t1", "after the cool-down").sent


def test_two_lines_of_one_player_are_at_least_half_a_second_apart() -> None:
    mod, clock = moderation()
    assert mod.judge("p1", "t1", "a").sent
    clock.now += MIN_INTERVAL_S / 2
    too_fast = mod.judge("p1", "t1", "b")
    assert too_fast.outcome is Outcome.TOO_FAST
    assert abs(too_fast.retry_after_s - MIN_INTERVAL_S / 2) < 1e-9


def test_a_channel_has_its_own_burst_over_all_its_writers() -> None:
    mod, clock = moderation(channel_bucket=Bucket(burst=3, refill_s=1.0))
    sent = [mod.judge(f"p{i}", "t1", "hello").outcome for i in range(4)]
    assert sent == [Outcome.SENT] * 3 + [Outcome.CHANNEL_BUSY]
    clock.now += 1.0
    assert mod.judge("p3", "t1", "hello").sent  # his own burst was given back


def test_a_repeated_line_is_dropped_even_disguised_by_case_and_repeats() -> None:
    mod, clock = moderation()
    assert mod.judge("p1", "t1", "hurry up").sent
    clock.now += 1
    assert mod.judge("p1", "t1", "HURRY   UUUP").outcome is Outcome.REPEATED
    clock.now += 1
    assert mod.judge("p2", "t1", "hurry up").sent  # another player may say it
    assert mod.judge("p1", "t1", "hurry up please").sent


def test_the_length_limit_is_280_characters_and_an_empty_line_is_refused() -> None:
    mod, _ = moderation()
    assert mod.judge("p1", "t1", "x" * (MAX_LINE_CHARACTERS + 1)).outcome is Outcome.TOO_LONG
    assert mod.judge("p1", "t1", "  \n ").outcome is Outcome.EMPTY
    assert mod.judge("p1", "t1", "x" * MAX_LINE_CHARACTERS).sent


def test_repeated_filtered_lines_start_a_15_minute_timeout() -> None:
    mod, clock = moderation()
    results = []
    for i in range(FILTER_STRIKES):
        results.append(mod.judge("p1", "t1", f"fuck {i}"))
        clock.now += 5
    assert [r.outcome for r in results] == [Outcome.FILTERED] * FILTER_STRIKES
    assert results[0].verdict.filtered and "en fuck" in results[0].verdict.rule
    assert [r.timeout_started for r in results] == [False] * (FILTER_STRIKES - 1) + [True]
    assert TIMEOUT_S == 15 * 60
    timed_out = mod.judge("p1", "t2", "sorry")
    assert timed_out.outcome is Outcome.TIMED_OUT
    assert abs(timed_out.retry_after_s - (TIMEOUT_S - 5)) < 1e-6
    assert mod.judge("p2", "t1", "hello").sent
    clock.now = mod.timed_out_until("p1")
    assert mod.judge("p1", "t1", "sorry").sent


def test_strikes_far_apart_start_no_timeout() -> None:
    mod, clock = moderation()
    for i in range(FILTER_STRIKES + 2):
        assert not mod.judge("p1", "t1", f"shit {i}").timeout_started
        clock.now += 11 * 60
    assert mod.judge("p1", "t1", "fine").sent


def test_forget_idle_drops_only_what_limits_nobody() -> None:
    mod, clock = moderation()
    mod.judge("p1", "t1", "hello")
    for i in range(FILTER_STRIKES):
        mod.judge("p2", "t1", f"fuck {i}")
        clock.now += 1
    clock.now += 60
    assert mod.forget_idle() >= 2  # p1 and his writer state, the channel
    assert mod.judge("p2", "t1", "still timed out?").outcome is Outcome.TIMED_OUT


@settings(max_examples=200, deadline=None, derandomize=True, database=None)
@given(
    st.lists(st.tuples(st.sampled_from(["p1", "p2", "p3"]), st.floats(0.0, 3.0)), min_size=1, max_size=120),
    st.integers(1, 6),
    st.floats(0.5, 5.0),
)
def test_no_player_ever_sends_more_than_his_burst_plus_what_refilled(
    sends: list[tuple[str, float]], burst: int, refill_s: float
) -> None:
    """Over any run: a player's sent lines in a channel never exceed burst + elapsed/refill,
    and two of them are never closer than MIN_INTERVAL_S."""
    mod, clock = moderation(player_bucket=Bucket(burst, refill_s), channel_bucket=Bucket(10_000, 0.001))
    start = clock.now
    sent: dict[str, list[float]] = {}
    for n, (player, gap) in enumerate(sends):
        clock.now += gap
        if mod.judge(player, "t1", f"line {n}").sent:
            sent.setdefault(player, []).append(clock.now)
    for times in sent.values():
        assert len(times) <= burst + (clock.now - start) / refill_s + 1e-9
        assert all(b - a >= MIN_INTERVAL_S - 1e-9 for a, b in itertools.pairwise(times))
