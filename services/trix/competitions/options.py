"""A competition's options (issue 43) and their validation.

Owns: every option an organiser sets (variant and the table options of docs/rules.md §7, the
speed, rounds, format, times, entry fee, prize, capacity, admission, seating, chat,
visibility), their bounds, and one check that names the first bad option in a message a
client can show. Also the documented constants: the speed multiples of the §9 timers, the
default house fee of a pool prize, the 75 % fill a competition needs at its start. Pure data;
no clock of its own (the caller passes `now_ms`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Final

from trix.rules import DEFAULT_TIMEOUT_S, PARTNERSHIP_VARIANT_NAMES, TIMED_DECISIONS, VARIANT_NAMES

FORMATS: Final = ("knockout", "points")
SPEED_MULTIPLE: Final = {"normal": 1.0, "fast": 0.5, "slow": 2.0}
"""The turn timers of a competition's tables: docs/rules.md §9's defaults times this (fast: half,
slow: twice as long); the table stamps them, the timers service fires them."""
ADMISSIONS: Final = ("auto", "approval")
SEATINGS: Final = ("random", "rating")
VISIBILITIES: Final = ("listed", "private")
DOUBLING_REVEALS: Final = ("SEQUENTIAL", "SIMULTANEOUS")
DOUBLING_SELF_TAKES: Final = ("NOBODY", "LEADER")
MIN_ROUNDS: Final = 1
MAX_ROUNDS: Final = 4
MAX_CAPACITY: Final = 256
MAX_ENTRY_FEE: Final = 1_000_000
MAX_FIXED_PRIZE: Final = 100_000_000
MAX_PAID_PLACES: Final = 16
DEFAULT_HOUSE_FEE_PERCENT: Final = 10
"""A pool prize: the house keeps floor(pool * house_fee_percent / 100); the rest is shared."""
MAX_HOUSE_FEE_PERCENT: Final = 50
MIN_FILL_PERCENT: Final = 75
"""A competition with fewer entrants than this percentage of its capacity at its start is
cancelled and every entrant gets the full fee back (issue 43)."""
MAX_START_AHEAD_MS: Final = 30 * 24 * 3600 * 1000
"""A start time may be on a later day, up to 30 days ahead."""


class CompetitionError(ValueError):
    """A request the competition rules refuse; `message` is one line a client can show."""

    def __init__(self, message: str, option: str = "") -> None:
        super().__init__(message)
        self.message = message
        self.option = option


@dataclass(frozen=True)
class FixedPrize:
    """Fixed coins per paid place, best first (the house pays what the fees do not cover)."""

    coins: tuple[int, ...]


@dataclass(frozen=True)
class PoolPrize:
    """Percent shares of the pool (the fees kept) per paid place, best first, summing to 100,
    after the house fee."""

    shares_percent: tuple[int, ...]
    house_fee_percent: int = DEFAULT_HOUSE_FEE_PERCENT


Prize = FixedPrize | PoolPrize


@dataclass(frozen=True)
class CompetitionOptions:
    """Everything an organiser sets; `validate_options` checks it."""

    variant: str
    format: str
    rounds: int
    capacity: int
    starts_at_ms: int
    registration_closes_at_ms: int
    entry_fee: int = 0
    prize: Prize = field(default_factory=lambda: FixedPrize(()))
    speed: str = "normal"
    doubling: bool = True
    doubling_reveal: str = "SEQUENTIAL"
    doubling_self_take: str = "NOBODY"
    admission: str = "auto"
    seating: str = "random"
    bot_fill: bool = True
    chat: bool = True
    visibility: str = "listed"

    @property
    def partnership(self) -> bool:
        return self.variant in PARTNERSHIP_VARIANT_NAMES

    @property
    def unit_size(self) -> int:
        """Players per unit: a team of two in partnership, else one."""
        return 2 if self.partnership else 1

    @property
    def units_per_table(self) -> int:
        return 4 // self.unit_size

    def min_entrants(self) -> int:
        """The fewest entrants at the start: MIN_FILL_PERCENT of the capacity, rounded up."""
        return -(-self.capacity * MIN_FILL_PERCENT // 100)

    def turn_timeouts_ms(self) -> dict[str, int]:
        """docs/rules.md §9 timers of the competition's tables at its speed, by decision name."""
        multiple = SPEED_MULTIPLE[self.speed]
        return {name: round(DEFAULT_TIMEOUT_S[name] * 1000 * multiple) for name in TIMED_DECISIONS}

    def table_options(self) -> dict[str, bool | str]:
        """The §12 record options of every table of the competition."""
        return {
            "doubling": self.doubling,
            "doubling_reveal": self.doubling_reveal,
            "doubling_self_take": self.doubling_self_take,
        }

    def as_dict(self) -> dict[str, Any]:
        prize: dict[str, Any]
        if isinstance(self.prize, FixedPrize):
            prize = {"fixed": list(self.prize.coins)}
        else:
            prize = {"pool": list(self.prize.shares_percent), "house_fee_percent": self.prize.house_fee_percent}
        out = {k: getattr(self, k) for k in self.__dataclass_fields__ if k != "prize"}
        out["prize"] = prize
        return out


def knockout_capacity(rounds: int, partnership: bool) -> int:
    """The entrants a knockout of `rounds` rounds seats: tables of four and one winner each go on
    (4, 16, 64, 256); in partnership the winning team of two goes on, so each round halves the
    field (4, 8, 16, 32)."""
    return int(2 ** (rounds + 1)) if partnership else int(4**rounds)


def options_from_dict(data: Any) -> CompetitionOptions:
    """Options from their `as_dict` form (a competition file); validated by the caller."""
    if not isinstance(data, dict):
        raise CompetitionError("options must be an object", "options")
    fields = dict(data)
    prize = fields.pop("prize", {"fixed": []})
    if not isinstance(prize, dict):
        raise CompetitionError("prize must be an object", "prize")
    if "pool" in prize:
        fields["prize"] = PoolPrize(tuple(prize["pool"]), prize.get("house_fee_percent", DEFAULT_HOUSE_FEE_PERCENT))
    else:
        fields["prize"] = FixedPrize(tuple(prize.get("fixed", ())))
    known = set(CompetitionOptions.__dataclass_fields__)
    unknown = sorted(set(fields) - known)
    if unknown:
        raise CompetitionError(f"unknown option {unknown[0]!r}", unknown[0])
    try:
        return CompetitionOptions(**fields)
    except TypeError as exc:
        raise CompetitionError(f"options incomplete: {exc}", "options") from exc


def _int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _choice(options: CompetitionOptions, name: str, allowed: tuple[str, ...]) -> None:
    value = getattr(options, name)
    if value not in allowed:
        raise CompetitionError(f"{name} must be one of {', '.join(allowed)} (got {value!r})", name)


def validate_options(options: CompetitionOptions, now_ms: int) -> CompetitionOptions:
    """The options unchanged if every one is allowed; else CompetitionError naming the first bad one."""
    _choice(options, "variant", VARIANT_NAMES)
    _choice(options, "format", FORMATS)
    _choice(options, "speed", tuple(SPEED_MULTIPLE))
    _choice(options, "doubling_reveal", DOUBLING_REVEALS)
    _choice(options, "doubling_self_take", DOUBLING_SELF_TAKES)
    _choice(options, "admission", ADMISSIONS)
    _choice(options, "seating", SEATINGS)
    _choice(options, "visibility", VISIBILITIES)
    for flag in ("doubling", "bot_fill", "chat"):
        if not isinstance(getattr(options, flag), bool):
            raise CompetitionError(f"{flag} must be true or false", flag)
    if not _int(options.rounds) or not MIN_ROUNDS <= options.rounds <= MAX_ROUNDS:
        raise CompetitionError(f"rounds must be {MIN_ROUNDS} to {MAX_ROUNDS} (got {options.rounds!r})", "rounds")
    _validate_capacity(options)
    _validate_times(options, now_ms)
    if not _int(options.entry_fee) or not 0 <= options.entry_fee <= MAX_ENTRY_FEE:
        raise CompetitionError(f"entry_fee must be 0 (free) to {MAX_ENTRY_FEE} coins", "entry_fee")
    _validate_prize(options)
    return options


def _validate_capacity(options: CompetitionOptions) -> None:
    capacity = options.capacity
    if not _int(capacity):
        raise CompetitionError("capacity must be a whole number", "capacity")
    if options.format == "knockout":
        size = knockout_capacity(options.rounds, options.partnership)
        if capacity != size:
            kind = "partnership knockout" if options.partnership else "knockout"
            raise CompetitionError(
                f"a {options.rounds}-round {kind} seats exactly {size} entrants (capacity {capacity})", "capacity"
            )
    elif not (4 <= capacity <= MAX_CAPACITY and capacity % 4 == 0):
        raise CompetitionError(
            f"capacity of a points competition must be a multiple of 4 from 4 to {MAX_CAPACITY}", "capacity"
        )


def _validate_times(options: CompetitionOptions, now_ms: int) -> None:
    starts, closes = options.starts_at_ms, options.registration_closes_at_ms
    if not _int(starts) or starts <= now_ms:
        raise CompetitionError("the start time must be in the future", "starts_at_ms")
    if starts - now_ms > MAX_START_AHEAD_MS:
        raise CompetitionError("the start time must be at most 30 days ahead", "starts_at_ms")
    if not _int(closes) or not now_ms < closes <= starts:
        raise CompetitionError(
            "registration must close in the future and no later than the start", "registration_closes_at_ms"
        )


def _validate_prize(options: CompetitionOptions) -> None:
    prize = options.prize
    if isinstance(prize, FixedPrize):
        coins = prize.coins
        if len(coins) > MAX_PAID_PLACES or not all(_int(c) and 0 < c <= MAX_FIXED_PRIZE for c in coins):
            raise CompetitionError(
                f"a fixed prize is 0 to {MAX_PAID_PLACES} places of 1 to {MAX_FIXED_PRIZE} coins each", "prize"
            )
        if list(coins) != sorted(coins, reverse=True):
            raise CompetitionError("a fixed prize pays a better place at least as much as a worse one", "prize")
        paid = len(coins)
    elif isinstance(prize, PoolPrize):
        shares = prize.shares_percent
        if options.entry_fee == 0:
            raise CompetitionError("a pool prize needs an entry fee (a free competition has no pool)", "prize")
        if not shares or len(shares) > MAX_PAID_PLACES or not all(_int(s) and s > 0 for s in shares):
            raise CompetitionError(f"a pool prize has 1 to {MAX_PAID_PLACES} positive shares", "prize")
        if sum(shares) != 100:
            raise CompetitionError(
                f"the pool shares must add up to 100 percent (they add up to {sum(shares)})", "prize"
            )
        if list(shares) != sorted(shares, reverse=True):
            raise CompetitionError("a pool prize gives a better place at least the share of a worse one", "prize")
        fee = prize.house_fee_percent
        if not _int(fee) or not 0 <= fee <= MAX_HOUSE_FEE_PERCENT:
            raise CompetitionError(f"the house fee is 0 to {MAX_HOUSE_FEE_PERCENT} percent of the pool", "prize")
        paid = len(shares)
    else:
        raise CompetitionError("the prize is fixed coins or shares of the pool", "prize")
    places = options.capacity // options.unit_size
    if paid > places:
        raise CompetitionError(f"{paid} paid places but at most {places} can finish", "prize")
