"""A competition's options (issue 43): every option validated with a clear error naming it;
the documented speed multiples, knockout sizes and the 75 % fill."""

from __future__ import annotations

import pytest
from competition_support import NOW_MS, options

from trix.competitions.options import (
    MAX_START_AHEAD_MS,
    CompetitionError,
    FixedPrize,
    PoolPrize,
    knockout_capacity,
    options_from_dict,
    validate_options,
)
from trix.rules import DEFAULT_TIMEOUT_S


def refused(**changes: object) -> CompetitionError:
    with pytest.raises(CompetitionError) as caught:
        validate_options(options(**changes), NOW_MS)
    return caught.value


def test_the_default_options_of_the_tests_are_valid() -> None:
    assert validate_options(options(), NOW_MS) == options()


@pytest.mark.parametrize(
    ("changes", "option", "says"),
    [
        ({"variant": "POKER"}, "variant", "variant must be one of TRIX"),
        ({"format": "league"}, "format", "format must be one of knockout, points"),
        ({"speed": "blitz"}, "speed", "speed must be one of normal, fast, slow"),
        ({"doubling_self_take": "ANYONE"}, "doubling_self_take", "NOBODY, LEADER"),
        ({"doubling_reveal": "NEVER"}, "doubling_reveal", "SEQUENTIAL, SIMULTANEOUS"),
        ({"admission": "lottery"}, "admission", "auto, approval"),
        ({"seating": "alphabet"}, "seating", "random, rating"),
        ({"visibility": "secret"}, "visibility", "listed, private"),
        ({"chat": "yes"}, "chat", "chat must be true or false"),
        ({"rounds": 0}, "rounds", "rounds must be 1 to 4"),
        ({"rounds": 5}, "rounds", "rounds must be 1 to 4"),
        ({"capacity": 12}, "capacity", "a 2-round knockout seats exactly 16 entrants"),
        ({"format": "points", "capacity": 18}, "capacity", "multiple of 4 from 4 to 256"),
        ({"format": "points", "capacity": 260}, "capacity", "multiple of 4 from 4 to 256"),
        ({"starts_at_ms": NOW_MS}, "starts_at_ms", "the start time must be in the future"),
        ({"starts_at_ms": NOW_MS + MAX_START_AHEAD_MS + 1}, "starts_at_ms", "at most 30 days ahead"),
        ({"registration_closes_at_ms": NOW_MS + 4_000_000}, "registration_closes_at_ms", "no later than the start"),
        ({"registration_closes_at_ms": NOW_MS - 1}, "registration_closes_at_ms", "close in the future"),
        ({"entry_fee": -1}, "entry_fee", "entry_fee must be 0 (free)"),
        ({"prize": PoolPrize((50, 30))}, "prize", "add up to 100 percent (they add up to 80)"),
        ({"prize": PoolPrize((20, 30, 50))}, "prize", "at least the share of a worse one"),
        ({"prize": PoolPrize((100,), house_fee_percent=60)}, "prize", "house fee is 0 to 50 percent"),
        ({"prize": PoolPrize((100,)), "entry_fee": 0}, "prize", "a pool prize needs an entry fee"),
        ({"prize": FixedPrize((100, 0))}, "prize", "a fixed prize is 0 to 16 places of 1"),
        ({"prize": FixedPrize((10, 20))}, "prize", "a better place at least as much"),
        ({"rounds": 1, "capacity": 4, "prize": FixedPrize((4, 3, 2, 1, 1))}, "prize", "5 paid places but at most 4"),
    ],
)
def test_each_bad_option_is_refused_with_a_message_naming_it(
    changes: dict[str, object], option: str, says: str
) -> None:
    error = refused(**changes)
    assert error.option == option
    assert says in error.message


def test_knockout_sizes_are_4_16_64_256_and_halve_in_partnership() -> None:
    assert [knockout_capacity(r, partnership=False) for r in range(1, 5)] == [4, 16, 64, 256]
    assert [knockout_capacity(r, partnership=True) for r in range(1, 5)] == [4, 8, 16, 32]
    validate_options(options(variant="COMPLEX_PARTNERSHIP", capacity=8), NOW_MS)
    assert "partnership knockout seats exactly 8" in refused(variant="COMPLEX_PARTNERSHIP", capacity=16).message


def test_the_three_speeds_multiply_the_rules_turn_timers() -> None:
    normal = {name: seconds * 1000 for name, seconds in DEFAULT_TIMEOUT_S.items()}
    assert options(speed="normal").turn_timeouts_ms() == normal
    assert options(speed="fast").turn_timeouts_ms() == {k: v // 2 for k, v in normal.items()}
    assert options(speed="slow").turn_timeouts_ms() == {k: v * 2 for k, v in normal.items()}


def test_a_start_on_a_later_day_and_a_free_competition_with_a_fixed_prize_are_allowed() -> None:
    later = NOW_MS + 3 * 24 * 3_600_000
    validate_options(options(starts_at_ms=later, registration_closes_at_ms=later), NOW_MS)
    validate_options(options(entry_fee=0, prize=FixedPrize((500, 200))), NOW_MS)


def test_seventy_five_percent_of_the_capacity_is_rounded_up() -> None:
    assert options().min_entrants() == 12
    assert options(format="points", capacity=20).min_entrants() == 15
    assert options(rounds=1, capacity=4).min_entrants() == 3


def test_options_survive_their_file_form_and_an_unknown_one_is_named() -> None:
    for opts in (options(), options(entry_fee=0, prize=FixedPrize((9, 3)))):
        assert options_from_dict(opts.as_dict()) == opts
    with pytest.raises(CompetitionError, match="unknown option 'colour'"):
        options_from_dict({**options().as_dict(), "colour": "red"})
