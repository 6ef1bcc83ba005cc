"""The rules' constants, one copy each (docs/rules.md), shared by every service and tool.

Owns: card notation (§1), the variants and contracts by name in the engine's order (§2),
the doubling cards (§7), the turn-timer and leaving defaults (§9, §10), the table options
with their bounds and defaults (every option of `trix.v1.TableOptions`), the offset
between the proto enums and the engine's, the pattern of a player id, and what a display name
may not hold.

Pure data and small functions: imports neither the engine nor grpc/nats nor any service,
so every service, `trix.records` and `trix.engine` may import it (services never import
each other). The independent test model (tests/engine/model.py) keeps its own copy on
purpose: it is the second implementation the engine is checked against.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Final, Protocol

# ---- cards (§1) --------------------------------------------------------------

RANKS: Final = "23456789TJQKA"
"""§1 ranks from lowest to highest; a card's rank index is `card % 13`."""
SUITS: Final = "CDHS"
"""§1 suits in index order; a card's suit index is `card // 13`."""
NUM_CARDS: Final = 52
NUM_SEATS: Final = 4


def card_text(card: int) -> str:
    """§1 `49 -> "QS"`: rank letter then suit letter."""
    return RANKS[card % 13] + SUITS[card // 13]


def card_of_text(text: object) -> int | None:
    """§1 / §12 `"QS" -> 49`; None unless exactly an upper-case rank then suit (`TD`, never `10D` or `td`)."""
    if not isinstance(text, str) or len(text) != 2 or text[0] not in RANKS or text[1] not in SUITS:
        return None
    return SUITS.index(text[1]) * 13 + RANKS.index(text[0])


# ---- variants and contracts (§2), by name, in the engine's order ------------------

VARIANT_NAMES: Final = ("TRIX", "TRIX_PARTNERSHIP", "COMPLEX", "COMPLEX_PARTNERSHIP")
"""§2; `trix.engine.Variant(i).name == VARIANT_NAMES[i]`."""
PARTNERSHIP_VARIANT_NAMES: Final = frozenset({"TRIX_PARTNERSHIP", "COMPLEX_PARTNERSHIP"})
CONTRACT_NAMES: Final = ("KING", "QUEENS", "DIAMONDS", "TRICKS", "TRIX", "COMPLEX")
"""§2; `trix.engine.Contract(i).name == CONTRACT_NAMES[i]`."""
DEALS_PER_GAME: Final = {"TRIX": 20, "TRIX_PARTNERSHIP": 20, "COMPLEX": 8, "COMPLEX_PARTNERSHIP": 8}
"""§2 "deals": four kingdoms of five contracts, or of two."""

PROTO_ENUM_OFFSET: Final = 1
"""The proto enums (Variant, Contract, DoublingReveal, SelfTake, TeamTiebreak) keep 0 for
UNSPECIFIED, so each value is the engine's plus one."""


def engine_enum(proto_value: int) -> int:
    """The engine's value of a (specified) proto enum value: `VARIANT_TRIX (1) -> Variant.TRIX (0)`."""
    return int(proto_value) - PROTO_ENUM_OFFSET


def proto_enum(engine_value: int) -> int:
    """The proto value of an engine enum value: `Contract.KING (0) -> CONTRACT_KING (1)`."""
    return int(engine_value) + PROTO_ENUM_OFFSET


# ---- doubling (§7) ------------------------------------------------------------

KING_OF_HEARTS: Final = 2 * 13 + 11
QUEENS: Final = (0 * 13 + 10, 1 * 13 + 10, 2 * 13 + 10, 3 * 13 + 10)
"""QC, QD, QH, QS."""
DOUBLE_MASK_CARDS: Final = (*QUEENS, KING_OF_HEARTS)
"""A doubling answer's mask: bit i doubles this card (docs/engine-api.md)."""
DOUBLING_CARDS: Final[dict[str, tuple[int, ...]]] = {
    "KING": (KING_OF_HEARTS,),
    "QUEENS": QUEENS,
    "COMPLEX": (*QUEENS, KING_OF_HEARTS),
}
"""§7 "Doubling contracts: KING (KH), QUEENS (the queens), COMPLEX (KH and the queens)", by contract name."""
DOUBLING_CARDS_BY_CONTRACT: Final[dict[int, frozenset[int]]] = {
    CONTRACT_NAMES.index(name): frozenset(cards) for name, cards in DOUBLING_CARDS.items()
}
"""The same, by the engine's contract value (`trix.engine.Contract` is an IntEnum)."""
DOUBLED_CARD_VALUE: Final = {KING_OF_HEARTS: 75, **dict.fromkeys(QUEENS, 25)}
"""§7 the value v of a doubled card."""

# ---- timers and leaving (§9, §10) --------------------------------------------------

DEFAULT_CONTRACT_TIMEOUT_S: Final = 15
"""§9 the owner names a contract."""
DEFAULT_DOUBLE_TIMEOUT_S: Final = 8
"""§9 a doubling answer."""
DEFAULT_CARD_TIMEOUT_S: Final = 12
"""§9 playing a card."""
TIMED_DECISIONS: Final = ("contract", "double", "card")
"""§9 the decisions with a turn timer, in the order of the proto's `Decision` (1, 2, 3) and by the
name of their options (`<name>_timeout_s`, and `<name>_timeout_ms` for fast tables)."""
DEFAULT_TIMEOUT_S: Final = {
    "contract": DEFAULT_CONTRACT_TIMEOUT_S,
    "double": DEFAULT_DOUBLE_TIMEOUT_S,
    "card": DEFAULT_CARD_TIMEOUT_S,
}


class Options(Protocol):
    """A table's options (`trix.v1.TableOptions`): the fields it sets."""

    def ListFields(self) -> Sequence[tuple[Any, Any]]: ...


def decision_timeout_s(options: Options, decision: int) -> float:
    """§9 the turn timer of `decision` (the proto's `Decision`, 1..3) at a table with these options:
    milliseconds override seconds when set (fast tables, tests); omitted, the default."""
    name = TIMED_DECISIONS[decision - 1] if 1 <= decision <= len(TIMED_DECISIONS) else "contract"
    fields = {field.name: value for field, value in options.ListFields()}
    if f"{name}_timeout_ms" in fields:
        return float(fields[f"{name}_timeout_ms"]) / 1000
    return float(fields.get(f"{name}_timeout_s", DEFAULT_TIMEOUT_S[name]))


DEFAULT_LEAVE_GRACE_S: Final = 60
"""§10 `leave_grace_s`."""
DEFAULT_MAX_TIMEOUTS_IN_A_ROW: Final = 3
"""§10 `max_timeouts_in_a_row`."""

# ---- table options --------------------------------------------------------------


@dataclass(frozen=True)
class OptionSpec:
    """One table option as an int (bools 0/1, enums by proto value): default, bounds, and
    whether only the partnership variants use it."""

    default: int
    minimum: int
    maximum: int
    partnership_only: bool = False


TABLE_OPTIONS: Final[dict[str, OptionSpec]] = {
    "doubling": OptionSpec(1, 0, 1),  # §7 doubling on
    "doubling_reveal": OptionSpec(1, 1, 2),  # §7 SEQUENTIAL
    "doubling_self_take": OptionSpec(1, 1, 2),  # §7 NOBODY
    "team_tiebreak": OptionSpec(1, 1, 2, partnership_only=True),  # §8 LAST_TRIX
    "partnership_trix_early_end": OptionSpec(1, 0, 1, partnership_only=True),  # §6
    "contract_timeout_s": OptionSpec(DEFAULT_CONTRACT_TIMEOUT_S, 1, 600),  # §9
    "double_timeout_s": OptionSpec(DEFAULT_DOUBLE_TIMEOUT_S, 1, 600),  # §9
    "card_timeout_s": OptionSpec(DEFAULT_CARD_TIMEOUT_S, 1, 600),  # §9
    "leave_grace_s": OptionSpec(DEFAULT_LEAVE_GRACE_S, 0, 3600),  # §10
    "max_timeouts_in_a_row": OptionSpec(DEFAULT_MAX_TIMEOUTS_IN_A_ROW, 1, 100),  # §10
    "rake_percent": OptionSpec(0, 0, 100),  # §13
    "partner_chat": OptionSpec(1, 1, 2, partnership_only=True),  # §15 PHRASES_DURING_DEALS
}
"""Every field of `trix.v1.TableOptions` (common.proto) a player may set, resolved to an int."""

RECORD_OPTION_DEFAULTS: Final[dict[str, bool | str]] = {
    "doubling": True,  # §7
    "doubling_reveal": "SEQUENTIAL",  # §7
    "doubling_self_take": "NOBODY",  # §7
    "team_tiebreak": "LAST_TRIX",  # §8
    "partnership_trix_early_end": True,  # §6
}
"""§12 "Omitted options take their defaults": the rule options of a record, by name."""

# ---- ids --------------------------------------------------------------------------

PLAYER_ID_MAX_LENGTH: Final = 128
PLAYER_ID: Final = re.compile(r"[A-Za-z0-9_-]{1,128}")
"""A player id (also a table id or a service name), matched with `fullmatch`: it becomes a
NATS subject token and a KV key, so only these characters."""
PLAYER_ID_RULE: Final = "1-128 of A-Z a-z 0-9 _ -"
"""The pattern as a client reads it in an error message."""


def is_player_id(text: object) -> bool:
    """Whether `text` is a well-formed player id (`PLAYER_ID`)."""
    return isinstance(text, str) and PLAYER_ID.fullmatch(text) is not None


# ---- display names (shown to the other players of a table) ----------------------------------

INVISIBLE_LETTERS: Final = frozenset("\u3164\u115f\u1160\uffa0\u2800")
"""Hangul fillers and the blank Braille pattern: letters or symbols (categories Lo, So, so not
caught as control or format characters) that draw nothing; a name of them looks empty or
impersonates another."""
MAX_DISPLAY_NAME: Final = 32
"""Characters of a display name, at most."""
MAX_DISPLAY_NAME_BYTES: Final = 64
"""UTF-8 bytes of a display name, at most (what other players' screens and the records hold)."""
HIDDEN_CATEGORIES: Final = ("Cc", "Cf", "Cs", "Co", "Cn")
"""Control, format (bidi embeddings, overrides and isolates, zero-width spaces and joiners,
word joiners U+2060..), surrogate, private-use and unassigned characters: never in a display name."""
MAX_MARKS_PER_CHARACTER: Final = 3
"""Combining marks (Mn, Me) one character of a display name may carry after NFC: enough for
every script's accents and vowel signs, not for a stack that paints over the lines around."""


def display_name_problem(name: str) -> str:
    """Why `name` may not be shown to other players as it is (an invisible letter, a stack of
    combining marks), or "" if it may; the characters counted after NFC."""
    if not INVISIBLE_LETTERS.isdisjoint(name):
        return "display name must have no invisible letters (Hangul fillers)"
    marks = 0
    for ch in unicodedata.normalize("NFC", name):
        marks = marks + 1 if unicodedata.category(ch) in ("Mn", "Me") else 0
        if marks > MAX_MARKS_PER_CHARACTER:
            return f"display name must have at most {MAX_MARKS_PER_CHARACTER} combining marks on a character"
    return ""


def strip_display_name(name: str) -> str:
    """`name` (NFC) without its invisible letters and the combining marks of a character past
    MAX_MARKS_PER_CHARACTER."""
    kept: list[str] = []
    marks = 0
    for ch in unicodedata.normalize("NFC", name):
        if ch in INVISIBLE_LETTERS:
            continue
        marks = marks + 1 if unicodedata.category(ch) in ("Mn", "Me") else 0
        if marks <= MAX_MARKS_PER_CHARACTER:
            kept.append(ch)
    return "".join(kept)


def clean_display_name(raw: str) -> str:
    """A display name others may be shown: NFC, without control or format characters (NUL,
    ANSI escapes, right-to-left overrides, zero-width characters: HIDDEN_CATEGORIES),
    invisible letters or a stack of combining marks (`strip_display_name`), whitespace runs
    as one space, at most MAX_DISPLAY_NAME characters and MAX_DISPLAY_NAME_BYTES UTF-8 bytes
    (never a cut character). The gateway cleans sign-in names with it; matchmaking refuses
    what it would change (`display_name_problem` and the same limits)."""
    text = strip_display_name(raw)  # no invisible letters, marks capped per character
    text = "".join(
        " " if ch.isspace() else ch for ch in text if ch.isspace() or unicodedata.category(ch) not in HIDDEN_CATEGORIES
    )
    name = " ".join(text.split())[:MAX_DISPLAY_NAME]
    while len(name.encode()) > MAX_DISPLAY_NAME_BYTES:
        name = name[:-1]
    return name.rstrip()
