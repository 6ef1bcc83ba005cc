"""Reading and checking a game record (docs/rules.md §12), before any replay.

Owns: the strict reading of a §12 record (never crashing, whatever the input: JSON only,
bounded size), its format's names and values, the checks of its structure (top-level keys,
options, fairness, each deal's hands, doubling answers and plays), the hands derived from
the seeds (§11), and `RecordError`, whose message is one line naming the deal and the play
(or doubling answer) by 0-based index. Must not import grpc/nats or the engine.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from trix.fairness import deal_from_seeds
from trix.rules import (
    CONTRACT_NAMES,
    DEALS_PER_GAME,
    DOUBLE_MASK_CARDS,
    NUM_SEATS,
    RECORD_OPTION_DEFAULTS,
    VARIANT_NAMES,
    card_of_text,
    card_text,
)

RECORD_FORMAT = "trix-game/1"
MAX_RECORD_BYTES = 5 * 1024 * 1024  # a whole 20-deal game is ~35 kB; this is generous
CARDS_PER_HAND = 13

# Same ints as docs/engine-api.md (and docs/rules.md §1 / §2 names): trix.rules.
VARIANTS = {name: value for value, name in enumerate(VARIANT_NAMES)}
CONTRACTS = {name: value for value, name in enumerate(CONTRACT_NAMES)}
NUM_DEALS = DEALS_PER_GAME  # §2 "deals": 20 in the TRIX variants, 8 in the COMPLEX ones.
REVEALS = {"SEQUENTIAL": 0, "SIMULTANEOUS": 1}
SELF_TAKES = {"NOBODY": 0, "LEADER": 1}
TEAM_TIEBREAKS = {"LAST_TRIX": 0, "SHARED": 1}

# §12 "Omitted options take their defaults."
DEFAULT_OPTIONS = RECORD_OPTION_DEFAULTS
OPTION_VALUES: dict[str, dict[str, int]] = {
    "doubling_reveal": REVEALS,
    "doubling_self_take": SELF_TAKES,
    "team_tiebreak": TEAM_TIEBREAKS,
}
TOP_LEVEL_KEYS = frozenset(
    {
        "format",
        "variant",
        "options",
        "players",
        "fairness",
        "deals",
        "totals",
        "ranking",
        "left",
    }
)
DEAL_KEYS = frozenset({"hands", "owner", "contract", "doubles", "plays", "scores"})
_HEX64 = re.compile(r"[0-9a-f]{64}")


class RecordError(Exception):
    """A record that is malformed or breaks a rule. `str()` is one line."""

    def __init__(self, message: str) -> None:
        one_line = " ".join(message.split("\n"))
        super().__init__(one_line)
        self.message = one_line


# ---------------------------------------------------------------------------
# Reading
# ---------------------------------------------------------------------------


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def load_record(data: bytes | str) -> Any:
    """Parse the JSON text of a record; any failure is a RecordError, never a crash."""
    if isinstance(data, bytes):
        if len(data) > MAX_RECORD_BYTES:
            raise RecordError(f"record: larger than {MAX_RECORD_BYTES} bytes")
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise RecordError(f"record: not UTF-8 text (byte {exc.start})") from None
    else:
        text = data
        if len(text) > MAX_RECORD_BYTES:
            raise RecordError(f"record: larger than {MAX_RECORD_BYTES} bytes")
    try:
        return json.loads(text, parse_constant=_reject_constant)
    except json.JSONDecodeError as exc:
        raise RecordError(f"record: not valid JSON ({exc.msg}, line {exc.lineno} column {exc.colno})") from None
    except (ValueError, RecursionError) as exc:
        kind = "nested too deeply" if isinstance(exc, RecursionError) else str(exc)
        raise RecordError(f"record: not valid JSON ({kind})") from None


def read_record_file(path: str) -> Any:
    """Read and parse a record file, capped at MAX_RECORD_BYTES."""
    try:
        with open(path, "rb") as f:
            data = f.read(MAX_RECORD_BYTES + 1)
    except OSError as exc:
        raise RecordError(f"record: cannot read {path!r} ({exc.strerror or type(exc).__name__})") from None
    return load_record(data)


def show(value: Any) -> str:
    """A short one-line rendering of a value taken from the record, for messages."""
    try:
        text = json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError, RecursionError):
        text = type(value).__name__
    text = " ".join(text.split())
    return text if len(text) <= 24 else text[:21] + "..."


def _is_int(value: Any) -> bool:
    return type(value) is int  # bool is an int subclass and is not a seat


def parse_card(text: Any, where: str) -> int:
    """§12 "Cards are written exactly as in §1 (TD, never 10D or td)"."""
    card = card_of_text(text)
    if card is None:
        raise RecordError(f"{where}: unknown card {show(text)}")
    return card


card_str = card_text


def check_seat(value: Any, where: str) -> int:
    if not _is_int(value) or not 0 <= value < NUM_SEATS:
        raise RecordError(f"{where}: seat must be 0..3, not {show(value)}")
    result: int = value
    return result


def int_list4(value: Any, where: str) -> list[int] | None:
    if value is None:
        return None
    if not isinstance(value, list) or len(value) != NUM_SEATS or not all(_is_int(v) for v in value):
        raise RecordError(f"{where}: must be null or a list of 4 integers")
    return list(value)


# ---------------------------------------------------------------------------
# Checking the structure
# ---------------------------------------------------------------------------


@dataclass
class RecordSetup:
    variant: str
    options: dict[str, bool | str]
    server_seed: bytes | None
    client_seed: str | None
    deals: list[dict[str, Any]]
    left: int | None


def check_top(record: Any) -> RecordSetup:
    if not isinstance(record, dict):
        raise RecordError("record: must be a JSON object")
    for key in record:
        if key not in TOP_LEVEL_KEYS:
            raise RecordError(f"record: unknown field {show(key)}")
    if record.get("format") != RECORD_FORMAT:
        raise RecordError(f"record: format must be {RECORD_FORMAT!r}, not {show(record.get('format'))}")
    variant = record.get("variant")
    if not isinstance(variant, str) or variant not in VARIANTS:
        raise RecordError(f"record: unknown variant {show(variant)}")
    options = _check_options(record.get("options"))
    players = record.get("players")
    if players is not None and (
        not isinstance(players, list) or len(players) != NUM_SEATS or not all(isinstance(p, str) for p in players)
    ):
        raise RecordError("players: must be a list of 4 strings")
    server_seed, client_seed = _check_fairness(record.get("fairness"))
    deals = record.get("deals")
    if not isinstance(deals, list):
        raise RecordError("deals: must be a list")
    for d, deal in enumerate(deals):
        if not isinstance(deal, dict):
            raise RecordError(f"deal {d}: must be a JSON object")
        for key in deal:
            if key not in DEAL_KEYS:
                raise RecordError(f"deal {d}: unknown field {show(key)}")
    int_list4(record.get("totals"), "totals")
    int_list4(record.get("ranking"), "ranking")
    left = record.get("left")
    if left is not None:
        left = check_seat(left, "left")
    return RecordSetup(variant, options, server_seed, client_seed, deals, left)


def _check_options(options: Any) -> dict[str, bool | str]:
    if options is None:
        options = {}
    if not isinstance(options, dict):
        raise RecordError("options: must be a JSON object")
    result = dict(DEFAULT_OPTIONS)
    for key, value in options.items():
        if key not in DEFAULT_OPTIONS:
            raise RecordError(f"options: unknown option {show(key)}")
        if key in OPTION_VALUES:
            if not isinstance(value, str) or value not in OPTION_VALUES[key]:
                allowed = ", ".join(OPTION_VALUES[key])
                raise RecordError(f"options: {key} must be one of {allowed}, not {show(value)}")
        elif not isinstance(value, bool):
            raise RecordError(f"options: {key} must be true or false, not {show(value)}")
        result[key] = value
    return result


def _check_fairness(fairness: Any) -> tuple[bytes | None, str | None]:
    if fairness is None:
        return None, None
    if not isinstance(fairness, dict):
        raise RecordError("fairness: must be a JSON object")
    for key in fairness:
        if key not in ("commitment", "server_seed", "client_seed"):
            raise RecordError(f"fairness: unknown field {show(key)}")
    commitment = fairness.get("commitment")
    if commitment is not None and (not isinstance(commitment, str) or not _HEX64.fullmatch(commitment)):
        raise RecordError("fairness: commitment must be 64 lowercase hex digits")
    seed = fairness.get("server_seed")
    server_seed: bytes | None = None
    if seed is not None:
        if not isinstance(seed, str) or not _HEX64.fullmatch(seed):
            raise RecordError("fairness: server_seed must be null or 64 lowercase hex digits (32 bytes)")
        server_seed = bytes.fromhex(seed)
    client_seed = fairness.get("client_seed")
    if client_seed is not None and not isinstance(client_seed, str):
        raise RecordError("fairness: client_seed must be a string")
    return server_seed, client_seed


def listed_hands(deal: dict[str, Any], d: int) -> list[list[int]] | None:
    hands = deal.get("hands")
    if hands is None:
        return None
    where = f"deal {d}, hands"
    if not isinstance(hands, list) or len(hands) != NUM_SEATS:
        raise RecordError(f"{where}: must be 4 lists of 13 cards")
    result: list[list[int]] = []
    for s, hand in enumerate(hands):
        if not isinstance(hand, list) or len(hand) != CARDS_PER_HAND:
            raise RecordError(f"{where}: seat {s} must hold 13 cards")
        result.append(sorted(parse_card(c, f"{where} of seat {s}") for c in hand))
    seen: set[int] = set()
    for hand in result:
        for c in hand:
            if c in seen:
                raise RecordError(f"{where}: {card_str(c)} is dealt twice")
            seen.add(c)
    return result


def deal_hands(setup: RecordSetup, deal: dict[str, Any], d: int) -> list[list[int]]:
    """§12 "hands may be omitted when fairness.server_seed is present"; "hands, when
    listed together with a revealed server_seed, must be the hands §11 derives"."""
    listed = listed_hands(deal, d)
    derived: list[list[int]] | None = None
    if setup.server_seed is not None:
        if setup.client_seed is None:
            raise RecordError("fairness: client_seed is needed with a server_seed")
        derived = [list(h) for h in deal_from_seeds(setup.server_seed, setup.client_seed, d)]
    if listed is not None and derived is not None and listed != derived:
        raise RecordError(f"deal {d}, hands: do not match the server seed (docs/rules.md §11)")
    hands = listed if listed is not None else derived
    if hands is None:
        raise RecordError(f"deal {d}, hands: missing, and no server_seed to derive them")
    return hands


def check_answer(value: Any, where: str) -> tuple[int, list[int]]:
    if not isinstance(value, dict) or set(value) != {"seat", "cards"}:
        raise RecordError(f"{where}: must be an object with seat and cards")
    seat = check_seat(value["seat"], where)
    cards = value["cards"]
    if not isinstance(cards, list) or len(cards) > len(DOUBLE_MASK_CARDS):
        raise RecordError(f"{where}: cards must be a list of cards")
    parsed: list[int] = []
    for text in cards:
        card = parse_card(text, where)
        if card not in DOUBLE_MASK_CARDS:
            raise RecordError(f"{where}: card cannot be doubled ({card_str(card)})")
        if card in parsed:
            raise RecordError(f"{where}: {card_str(card)} is listed twice")
        parsed.append(card)
    return seat, parsed


def check_play(value: Any, where: str) -> tuple[int, int]:
    if not isinstance(value, dict) or set(value) != {"seat", "card"}:
        raise RecordError(f"{where}: must be an object with seat and card")
    return check_seat(value["seat"], where), parse_card(value["card"], where)
