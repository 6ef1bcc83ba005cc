"""Game records (docs/rules.md §12): parse, check, replay, complete and verify them.

Owns: replaying every action through a rules engine passed in
(duck-typed to docs/engine-api.md, so the C engine `trix.engine.Game` and the
pure-Python model of the tests both fit), and recomputing scores, totals and
ranking. Must not: import grpc/nats or the engine itself (the caller passes the
engine in), nor put into a message any card the record does not already hold.

Every problem is a `RecordError` whose message is one line naming the deal and
the play (or doubling answer) by 0-based index, e.g. `deal 3, play 17: must follow
suit (C)`; the part after the colon is the engine's IllegalAction message.

Reading and checking the structure is `trix.record_checks`; its public names are exported
here too, so `trix.records` is the one import of a record's tools.
"""

from __future__ import annotations

import copy
import hashlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from trix.fairness import deal_from_seeds
from trix.record_checks import (
    CONTRACTS,
    MAX_RECORD_BYTES,
    NUM_DEALS,
    OPTION_VALUES,
    VARIANTS,
    RecordError,
    RecordSetup,
    check_answer,
    check_play,
    check_seat,
    check_top,
    deal_hands,
    int_list4,
    listed_hands,
    load_record,
    read_record_file,
    show,
)
from trix.rules import (
    DOUBLE_MASK_CARDS,
    DOUBLING_CARDS,
    NUM_SEATS,
)

__all__ = [
    "MAX_RECORD_BYTES",
    "GameFactory",
    "GameLike",
    "RecordError",
    "ReplayResult",
    "VerifyReport",
    "load_record",
    "read_record_file",
    "replay",
    "verify",
]
"""A record's tools; reading and checking are `trix.record_checks`'s, exported here too."""


# The engine's phases, events and actions (docs/engine-api.md).
PHASE_DOUBLING = 1
PHASE_PLAY = 2
PHASE_GAME_OVER = 4
EVENT_DEAL_SCORED = 8
ACTION_CHOOSE_BASE = 52
ACTION_DOUBLE_BASE = 64
ACTION_NO_DOUBLE = 64


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
        values[key] = OPTION_VALUES[key][str(value)] if key in OPTION_VALUES else value
    return options_cls(**values)


def replay(record: Any, game_cls: GameFactory, options_cls: Callable[..., Any]) -> ReplayResult:
    """Check `record` (parsed JSON) against the rules by replaying it through
    `game_cls(variant, options_cls(...), decks)`, and return it completed."""
    setup = check_top(record)
    variant = VARIANTS[setup.variant]
    num_deals = NUM_DEALS[setup.variant]
    if len(setup.deals) > num_deals:
        raise RecordError(f"deal {num_deals}: a {setup.variant} game has only {num_deals} deals")
    decks = [deal_hands(setup, deal, d) for d, deal in enumerate(setup.deals)]
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
        if given_owner is not None and (check_seat(given_owner, f"deal {d}, owner") != owner):
            raise RecordError(f"deal {d}, owner: seat {given_owner} in the record, docs/rules.md §3 gives seat {owner}")
        out_deal["owner"] = owner
        scores = _replay_deal(game, setup=setup, deal=deal, d=d, hands=decks[d], is_last=(d == last))
        given = int_list4(deal.get("scores"), f"deal {d}, scores")
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
    given_totals = int_list4(record.get("totals"), "totals")
    if given_totals is not None and given_totals != totals:
        differences.append(f"totals: {given_totals} in the record, {totals} replayed")
    if "ranking" in record and int_list4(record.get("ranking"), "ranking") != ranking:
        differences.append(f"ranking: {show(record.get('ranking'))} in the record, {ranking} replayed")
    completed["totals"] = totals
    completed["ranking"] = ranking
    return ReplayResult(completed, differences, finished=game.phase == PHASE_GAME_OVER)


def _replay_deal(
    game: GameLike,
    *,
    setup: RecordSetup,
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
        raise RecordError(f"deal {d}, contract: unknown contract {show(contract)}")
    _apply(game, owner, ACTION_CHOOSE_BASE + CONTRACTS[contract], f"deal {d}, contract")
    finished = _replay_doubles(
        game, setup=setup, doubles=doubles, d=d, contract=contract, hands=hands, may_stop=is_last and not plays
    )
    if not finished:
        return None
    scores: list[int] | None = None
    for p, item in enumerate(plays):
        where = f"deal {d}, play {p}"
        seat, card = check_play(item, where)
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
    setup: RecordSetup,
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
        seat, cards = check_answer(item, where)
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
    setup = check_top(record)
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
        listed = listed_hands(deal, d)
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
