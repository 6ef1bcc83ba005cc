"""What a player asks for in matchmaking: a `Wish` (variant, table options resolved to
values, stake) and the checks of what a request may carry (player ids, client seeds,
display names).
The options, their bounds and defaults are `trix.rules.TABLE_OPTIONS`; the presets here
name the majlis each reproduces (docs/rules.md: every majlis difference is an option)."""

from __future__ import annotations

import unicodedata
from dataclasses import dataclass
from typing import Any

from trix.errors import InvalidArgument
from trix.fairness import FairnessError, validate_client_seed
from trix.rules import (
    HIDDEN_CATEGORIES,
    MAX_DISPLAY_NAME,
    MAX_DISPLAY_NAME_BYTES,
    PARTNERSHIP_VARIANT_NAMES,
    PLAYER_ID_RULE,
    TABLE_OPTIONS,
    VARIANT_NAMES,
    display_name_problem,
    is_player_id,
    proto_enum,
)

VARIANTS: dict[int, str] = {proto_enum(value): name for value, name in enumerate(VARIANT_NAMES)}
"""docs/rules.md §2, by the value of `trix.v1.Variant`."""
PARTNERSHIP_VARIANTS = frozenset(value for value, name in VARIANTS.items() if name in PARTNERSHIP_VARIANT_NAMES)

MAX_STAKE_COINS = 10_000_000
"""A stake above this is refused as absurd (docs/rules.md §13 sets no upper bound; we do)."""

OPTIONS = TABLE_OPTIONS
"""Every TableOptions field (common.proto), resolved to an int: bools 0/1, enums by value (trix.rules)."""

PRESETS: dict[str, dict[str, int]] = {
    "standard": {},  # every default: seed 002
    "majlis-000": {"doubling_self_take": 2},  # seed 000: the trick's leader gains
    "majlis-001": {"doubling_reveal": 2, "doubling_self_take": 2},  # seed 001: simultaneous doubling
    "majlis-003": {"doubling": 0, "team_tiebreak": 2},  # seed 003: no doubling, shared team ties
}
"""Named rules presets, each a set of options over the defaults (docs/rules.md: every majlis
difference is a table option)."""


@dataclass(frozen=True)
class Wish:
    """What a player asks to play: a variant, fully resolved options and a stake (0 = free)."""

    variant: int
    options: tuple[tuple[str, int], ...]
    stake: int = 0

    @property
    def paid(self) -> bool:
        return self.stake > 0

    def queue_key(self) -> str:
        """Tickets meet only within one queue: same variant, options and stake."""
        opts = ",".join(f"{k}={v}" for k, v in self.options)
        return f"{self.variant}|{self.stake}|{opts}"

    def options_dict(self) -> dict[str, int]:
        return dict(self.options)

    def to_json(self) -> dict[str, Any]:
        return {"variant": self.variant, "options": dict(self.options), "stake": self.stake}

    @classmethod
    def from_json(cls, raw: dict[str, Any]) -> Wish:
        options = tuple(sorted((k, int(v)) for k, v in raw["options"].items()))
        return cls(int(raw["variant"]), options, int(raw["stake"]))


def resolve_wish(variant: int, options: dict[str, int], preset: str, stake: int | None) -> Wish:
    """Validate a wish and resolve every option to a value (unset -> docs/rules.md default)."""
    if variant not in VARIANTS:
        raise InvalidArgument(f"unknown variant {variant}; use one of {', '.join(VARIANTS.values())}")
    partnership = variant in PARTNERSHIP_VARIANTS
    if preset:
        if preset not in PRESETS:
            raise InvalidArgument(f"unknown rules preset {preset!r}; use one of {', '.join(sorted(PRESETS))}")
        chosen = dict(PRESETS[preset])
    else:
        chosen = dict(options)
        for name, value in chosen.items():
            spec = OPTIONS.get(name)
            if spec is None:
                raise InvalidArgument(f"unknown table option {name!r}")
            if not spec.minimum <= value <= spec.maximum:
                raise InvalidArgument(f"table option {name} must be {spec.minimum}..{spec.maximum}: {value}")
            if spec.partnership_only and not partnership and value != spec.default:
                raise InvalidArgument(f"table option {name} applies to partnership variants only")
    if stake is None:
        coins = 0
    else:
        if stake <= 0:
            raise InvalidArgument(f"a stake must be a positive number of coins: {stake}")
        if stake > MAX_STAKE_COINS:
            raise InvalidArgument(f"a stake above {MAX_STAKE_COINS} coins is not accepted: {stake}")
        coins = stake
    if coins == 0 and chosen.get("rake_percent", 0) != 0:
        raise InvalidArgument("rake_percent applies to paid tables only (docs/rules.md §13)")
    resolved: list[tuple[str, int]] = []
    for name, spec in sorted(OPTIONS.items()):
        value = chosen.get(name, spec.default)
        if spec.partnership_only and not partnership:
            value = spec.default  # irrelevant outside partnership: one queue either way
        resolved.append((name, value))
    return Wish(variant, tuple(resolved), coins)


def check_player_id(player_id: str, what: str = "player id") -> str:
    if not is_player_id(player_id):
        raise InvalidArgument(f"{what} must be {PLAYER_ID_RULE}: {player_id!r}")
    return player_id


def check_display_name(name: str) -> str:
    """A seat's name as the gateway cleans a sign-in name (shown to the others at the
    table): refused, not cleaned again, when it has a control or format character (an ANSI
    escape, a right-to-left override), an invisible letter or a stack of combining marks
    (`trix.rules.display_name_problem`) or is too long."""
    if len(name) > MAX_DISPLAY_NAME or len(name.encode()) > MAX_DISPLAY_NAME_BYTES:
        raise InvalidArgument(
            f"display name must be at most {MAX_DISPLAY_NAME} characters and {MAX_DISPLAY_NAME_BYTES} bytes"
        )
    if any(unicodedata.category(ch) in HIDDEN_CATEGORIES for ch in name) or name != name.strip():
        raise InvalidArgument("display name must have no control or format characters and no edge spaces")
    if problem := display_name_problem(name):
        raise InvalidArgument(problem)
    return name


def check_client_seed(seed: str) -> str:
    """docs/rules.md §11, by `trix.fairness` (also for text that is not valid UTF-8)."""
    try:
        return validate_client_seed(seed)
    except FairnessError as exc:
        raise InvalidArgument(f"client seed must be at most 64 bytes of UTF-8 without '|' ({exc})") from None
