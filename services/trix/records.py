"""Game records (docs/rules.md §12): parse, check, replay, complete and verify them.

Owns: the strict reading of a §12 record (never crashing, whatever the input),
deriving hands (§11), replaying every action through a rules engine passed in
(duck-typed to docs/engine-api.md, so the C engine `trix.engine.Game` and the
pure-Python model of the tests both fit), and recomputing scores, totals and
ranking. Must not: import grpc/nats or the engine itself (the caller passes the
engine in), nor put into a message any card the record does not already hold.

Every problem is a `RecordError` whose message is one line naming the deal and
the play (or doubling answer) by 0-based index, e.g. `deal 3, play 17: must follow
suit (C)`; the part after the colon is the engine's IllegalAction message.
"""

from __future__ import annotations

import copy
import hashlib
import json
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from trix.fairness import deal_from_seeds
from trix.rules import (
    CONTRACT_NAMES,
    DEALS_PER_GAME,
    DOUBLE_MASK_CARDS,
    DOUBLING_CARDS,
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
PHASE_DOUBLING = 1
PHASE_PLAY = 2
PHASE_GAME_OVER = 4
EVENT_DEAL_SCORED = 8
ACTION_CHOOSE_BASE = 52
ACTION_DOUBLE_BASE = 64
ACTION_NO_DOUBLE = 64

# §12 "Omitted options take their defaults."
DEFAULT_OPTIONS = RECORD_OPTION_DEFAULTS
_OPTION_VALUES: dict[str, dict[str, int]] = {
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


class GameLike(Protocol):
    """The part of docs/engine-api.md `Game` that a replay uses."""

    @property
    def phase(self) -> int: ...

    @property
    def deal_index(self) -> int: ...

    @property
    def owner(self) -> int | None: ...

    def to_act(self) -> tuple[int, ...]: ...

    def apply(self, seat: int, action: int) -> Sequence[tuple[Any, ...]]: ...

    def leave(self, seat: int) -> Sequence[tuple[Any, ...]]: ...

    def totals(self) -> tuple[int, int, int, int]: ...

    def ranking(self) -> tuple[int, int, int, int] | None: ...


GameFactory = Callable[..., GameLike]


@dataclass
class ReplayResult:
    """The completed record, and every recorded output that differs from the recomputed one."""

    record: dict[str, Any]
    differences: list[str] = field(default_factory=list)
    finished: bool = False


@dataclass
class VerifyReport:
    ok: bool
    lines: list[str]


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


def _show(value: Any) -> str:
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
        raise RecordError(f"{where}: unknown card {_show(text)}")
    return card


card_str = card_text


def _seat(value: Any, where: str) -> int:
    if not _is_int(value) or not 0 <= value < NUM_SEATS:
        raise RecordError(f"{where}: seat must be 0..3, not {_show(value)}")
    result: int = value
    return result


def _int_list4(value: Any, where: str) -> list[int] | None:
    if value is None:
        return None
    if not isinstance(value, list) or len(value) != NUM_SEATS or not all(_is_int(v) for v in value):
        raise RecordError(f"{where}: must be null or a list of 4 integers")
    return list(value)


# ---------------------------------------------------------------------------
# Checking the structure
# ---------------------------------------------------------------------------


@dataclass
class _Setup:
    variant: str
    options: dict[str, bool | str]
    server_seed: bytes | None
    client_seed: str | None
    deals: list[dict[str, Any]]
    left: int | None


def _check_top(record: Any) -> _Setup:
    if not isinstance(record, dict):
        raise RecordError("record: must be a JSON object")
    for key in record:
        if key not in TOP_LEVEL_KEYS:
            raise RecordError(f"record: unknown field {_show(key)}")
    if record.get("format") != RECORD_FORMAT:
        raise RecordError(f"record: format must be {RECORD_FORMAT!r}, not {_show(record.get('format'))}")
    variant = record.get("variant")
    if not isinstance(variant, str) or variant not in VARIANTS:
        raise RecordError(f"record: unknown variant {_show(variant)}")
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
                raise RecordError(f"deal {d}: unknown field {_show(key)}")
    _int_list4(record.get("totals"), "totals")
    _int_list4(record.get("ranking"), "ranking")
    left = record.get("left")
    if left is not None:
        left = _seat(left, "left")
    return _Setup(variant, options, server_seed, client_seed, deals, left)


def _check_options(options: Any) -> dict[str, bool | str]:
    if options is None:
        options = {}
    if not isinstance(options, dict):
        raise RecordError("options: must be a JSON object")
    result = dict(DEFAULT_OPTIONS)
    for key, value in options.items():
        if key not in DEFAULT_OPTIONS:
            raise RecordError(f"options: unknown option {_show(key)}")
        if key in _OPTION_VALUES:
            if not isinstance(value, str) or value not in _OPTION_VALUES[key]:
                allowed = ", ".join(_OPTION_VALUES[key])
                raise RecordError(f"options: {key} must be one of {allowed}, not {_show(value)}")
        elif not isinstance(value, bool):
            raise RecordError(f"options: {key} must be true or false, not {_show(value)}")
        result[key] = value
    return result


def _check_fairness(fairness: Any) -> tuple[bytes | None, str | None]:
    if fairness is None:
        return None, None
    if not isinstance(fairness, dict):
        raise RecordError("fairness: must be a JSON object")
    for key in fairness:
        if key not in ("commitment", "server_seed", "client_seed"):
            raise RecordError(f"fairness: unknown field {_show(key)}")
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


def _listed_hands(deal: dict[str, Any], d: int) -> list[list[int]] | None:
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


def _deal_hands(setup: _Setup, deal: dict[str, Any], d: int) -> list[list[int]]:
    """§12 "hands may be omitted when fairness.server_seed is present"; "hands, when
    listed together with a revealed server_seed, must be the hands §11 derives"."""
    listed = _listed_hands(deal, d)
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


def _answer(value: Any, where: str) -> tuple[int, list[int]]:
    if not isinstance(value, dict) or set(value) != {"seat", "cards"}:
        raise RecordError(f"{where}: must be an object with seat and cards")
    seat = _seat(value["seat"], where)
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


def _play(value: Any, where: str) -> tuple[int, int]:
    if not isinstance(value, dict) or set(value) != {"seat", "card"}:
        raise RecordError(f"{where}: must be an object with seat and card")
    return _seat(value["seat"], where), parse_card(value["card"], where)


# ---------------------------------------------------------------------------
# Replay
# ---------------------------------------------------------------------------


def _apply(game: GameLike, seat: int, action: int, where: str) -> Sequence[tuple[Any, ...]]:
    try:
        return game.apply(seat, action)
    except Exception as exc:
        message = getattr(exc, "message", None)
        if isinstance(message, str) and hasattr(exc, "code"):  # the engine's IllegalAction
            raise RecordError(f"{where}: {message}") from None
        raise


def _scored(events: Sequence[tuple[Any, ...]]) -> list[int] | None:
    for event in events:
        if event[0] == EVENT_DEAL_SCORED:
            return [int(x) for x in event[2]]
    return None


def _engine_options(options_cls: Callable[..., Any], options: dict[str, bool | str]) -> Any:
    values: dict[str, Any] = {}
    for key, value in options.items():
        values[key] = _OPTION_VALUES[key][str(value)] if key in _OPTION_VALUES else value
    return options_cls(**values)


def replay(record: Any, game_cls: GameFactory, options_cls: Callable[..., Any]) -> ReplayResult:
    """Check `record` (parsed JSON) against the rules by replaying it through
    `game_cls(variant, options_cls(...), decks)`, and return it completed."""
    setup = _check_top(record)
    variant = VARIANTS[setup.variant]
    num_deals = NUM_DEALS[setup.variant]
    if len(setup.deals) > num_deals:
        raise RecordError(f"deal {num_deals}: a {setup.variant} game has only {num_deals} deals")
    decks = [_deal_hands(setup, deal, d) for d, deal in enumerate(setup.deals)]
    options = setup.options
    try:
        game = game_cls(variant, _engine_options(options_cls, options), decks)
    except Exception as exc:  # noqa: BLE001 - hands are checked above: an engine refusal
        raise RecordError(f"record: the engine refused the deals ({getattr(exc, 'message', exc)})") from None
    completed = copy.deepcopy(record)
    completed["options"] = dict(options)
    differences: list[str] = []
    last = len(setup.deals) - 1
    for d, deal in enumerate(setup.deals):
        out_deal = completed["deals"][d]
        if game.phase == PHASE_GAME_OVER:
            raise RecordError(f"deal {d}: the game is already over")
        # §12 "owner is checked against §3 (filled in when absent)"
        owner = game.owner
        given_owner = deal.get("owner")
        if given_owner is not None and (_seat(given_owner, f"deal {d}, owner") != owner):
            raise RecordError(f"deal {d}, owner: seat {given_owner} in the record, docs/rules.md §3 gives seat {owner}")
        out_deal["owner"] = owner
        scores = _replay_deal(game, setup=setup, deal=deal, d=d, hands=decks[d], is_last=(d == last))
        given = _int_list4(deal.get("scores"), f"deal {d}, scores")
        if given is not None and given != scores:
            differences.append(f"deal {d}: scores {given} in the record, {scores} replayed")
        out_deal["scores"] = scores
    if setup.left is not None:
        # §12 "seat S left a paid table for good after the last play in the record"
        if game.phase == PHASE_GAME_OVER:
            raise RecordError("left: the game is already over")
        game.leave(setup.left)
    totals = list(game.totals())
    ranking_t = game.ranking()
    ranking = list(ranking_t) if ranking_t is not None else None
    given_totals = _int_list4(record.get("totals"), "totals")
    if given_totals is not None and given_totals != totals:
        differences.append(f"totals: {given_totals} in the record, {totals} replayed")
    if "ranking" in record and _int_list4(record.get("ranking"), "ranking") != ranking:
        differences.append(f"ranking: {_show(record.get('ranking'))} in the record, {ranking} replayed")
    completed["totals"] = totals
    completed["ranking"] = ranking
    return ReplayResult(completed, differences, finished=game.phase == PHASE_GAME_OVER)


def _replay_deal(
    game: GameLike,
    *,
    setup: _Setup,
    deal: dict[str, Any],
    d: int,
    hands: list[list[int]],
    is_last: bool,
) -> list[int] | None:
    """Replay one deal; return its scores, or None when it is unfinished (last deal only)."""
    owner = game.owner
    if owner is None:
        raise RecordError(f"deal {d}: the engine has no owner for this deal")
    contract = deal.get("contract")
    doubles = deal.get("doubles", [])
    plays = deal.get("plays", [])
    if not isinstance(doubles, list):
        raise RecordError(f"deal {d}, doubles: must be a list")
    if not isinstance(plays, list):
        raise RecordError(f"deal {d}, plays: must be a list")
    if contract is None:
        # A running game may stop before the owner has picked (§12 "at most one unfinished deal").
        if not is_last or doubles or plays:
            raise RecordError(f"deal {d}, contract: missing")
        return None
    if not isinstance(contract, str) or contract not in CONTRACTS:
        raise RecordError(f"deal {d}, contract: unknown contract {_show(contract)}")
    _apply(game, owner, ACTION_CHOOSE_BASE + CONTRACTS[contract], f"deal {d}, contract")
    finished = _replay_doubles(
        game, setup=setup, doubles=doubles, d=d, contract=contract, hands=hands, may_stop=is_last and not plays
    )
    if not finished:
        return None
    scores: list[int] | None = None
    for p, item in enumerate(plays):
        where = f"deal {d}, play {p}"
        seat, card = _play(item, where)
        if scores is not None or game.deal_index != d or game.phase != PHASE_PLAY:
            # §12 "A card after the deal has ended ... is illegal."
            raise RecordError(f"{where}: deal has ended")
        scores = _scored(_apply(game, seat, card, where))
    if scores is None and not is_last:
        raise RecordError(f"deal {d}, play {len(plays)}: the deal is unfinished but deal {d + 1} follows")
    return scores


def _replay_doubles(
    game: GameLike,
    *,
    setup: _Setup,
    doubles: list[Any],
    d: int,
    contract: str,
    hands: list[list[int]],
    may_stop: bool,
) -> bool:
    """§7 / §12 doubling answers. Returns False when a running game stops mid-doubling."""
    applies = bool(setup.options["doubling"]) and contract in DOUBLING_CARDS
    if not applies:
        # §12 "Where doubling does not apply, doubles is empty."
        if doubles:
            raise RecordError(f"deal {d}, doubling answer 0: doubling does not apply to this deal")
        return True
    eligible_cards = DOUBLING_CARDS[contract]
    eligible = [any(c in eligible_cards for c in hands[s]) for s in range(NUM_SEATS)]
    sequential = setup.options["doubling_reveal"] == "SEQUENTIAL"
    answered: set[int] = set()

    def auto_answer(seats: Sequence[int]) -> None:
        # §12 "the answers of seats without an eligible card (always "no") are left out":
        # the replayer gives them for those seats.
        for s in seats:
            if game.phase == PHASE_DOUBLING and game.deal_index == d and s not in answered and not eligible[s]:
                _apply(game, s, ACTION_NO_DOUBLE, f"deal {d}, doubling answer of seat {s}")
                answered.add(s)

    def sequential_auto() -> None:
        # SEQUENTIAL: "seats answer in turn starting with the owner"
        while game.phase == PHASE_DOUBLING and game.deal_index == d:
            acting = game.to_act()
            if len(acting) != 1 or eligible[acting[0]] or acting[0] in answered:
                return
            auto_answer(acting)

    for a, item in enumerate(doubles):
        where = f"deal {d}, doubling answer {a}"
        seat, cards = _answer(item, where)
        if seat in answered and eligible[seat]:
            raise RecordError(f"{where}: seat already answered")
        if not eligible[seat]:
            raise RecordError(
                f"{where}: seat {seat} holds no card that can be doubled, its answer is left out (docs/rules.md §12)"
            )
        if sequential:
            sequential_auto()
        if game.phase != PHASE_DOUBLING or game.deal_index != d:
            raise RecordError(f"{where}: every seat has answered")
        mask = sum(1 << DOUBLE_MASK_CARDS.index(c) for c in cards)
        _apply(game, seat, ACTION_DOUBLE_BASE + mask, where)
        answered.add(seat)
    if sequential:
        sequential_auto()
    else:
        auto_answer(range(NUM_SEATS))
    if game.phase == PHASE_DOUBLING and game.deal_index == d:
        if may_stop:
            return False
        missing = min(s for s in range(NUM_SEATS) if s not in answered)
        if sequential:
            missing = game.to_act()[0]
        raise RecordError(f"deal {d}, doubling answer {len(doubles)}: missing answer of seat {missing}")
    return True


# ---------------------------------------------------------------------------
# Verify (§11)
# ---------------------------------------------------------------------------


def verify(record: Any) -> VerifyReport:
    """§11 "anyone can then recompute the commitment and every deal": check that
    SHA-256(server_seed) is the commitment and every listed hand is the derived one."""
    setup = _check_top(record)
    lines: list[str] = []
    ok = True
    fairness = record.get("fairness")
    commitment = fairness.get("commitment") if isinstance(fairness, dict) else None
    if setup.server_seed is None:
        return VerifyReport(
            False,
            ["server_seed: not revealed (the game is still running?), nothing to verify"],
        )
    if commitment is None:
        ok = False
        lines.append("commitment: missing")
    elif hashlib.sha256(setup.server_seed).hexdigest() == commitment:
        lines.append("commitment: ok, SHA-256(server_seed) matches")
    else:
        ok = False
        lines.append("commitment: MISMATCH, SHA-256(server_seed) is not the published commitment")
    if setup.client_seed is None:
        return VerifyReport(False, [*lines, "client_seed: missing, the deals cannot be recomputed"])
    for d, deal in enumerate(setup.deals):
        listed = _listed_hands(deal, d)
        if listed is None:
            lines.append(f"deal {d}: hands not listed, derived from the seeds")
            continue
        derived = [list(h) for h in deal_from_seeds(setup.server_seed, setup.client_seed, d)]
        if listed == derived:
            lines.append(f"deal {d}: hands ok")
        else:
            ok = False
            bad = [s for s in range(NUM_SEATS) if listed[s] != derived[s]]
            lines.append(f"deal {d}: hands MISMATCH for seats {bad}")
    lines.append("verified: all good" if ok else "verification FAILED")
    return VerifyReport(ok, lines)
