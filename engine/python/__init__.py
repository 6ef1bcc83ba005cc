"""trix.engine: the Python face of the C rules engine (docs/engine-api.md).

Owns the typed API around the C extension `trix.engine._core`: enums, the
frozen Options, action helpers, event filtering (docs/rules.md §14), and the
`Game` class whose hot paths (`to_act`, `legal_actions`, `apply`) are the C
methods themselves. It holds no rules of its own and must not fall back to
Python if the extension is missing: the ImportError propagates.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from enum import IntEnum
from typing import Any

from trix import rules

from . import _core

__all__ = [
    "ACTION_NO_DOUBLE",
    "BOT",
    "CARD_PLAYED",
    "CONTRACT_CHOSEN",
    "DEAL_SCORED",
    "DEAL_STARTED",
    "DOUBLES_REVEALED",
    "DOUBLE_ANSWERED",
    "GAME_ENDED",
    "LOWEST",
    "RANDOM",
    "SEAT_LEFT",
    "SEAT_OUT",
    "SEAT_PASSED",
    "TRICK_TAKEN",
    "Contract",
    "Event",
    "EventKind",
    "Game",
    "IllegalAction",
    "IllegalReason",
    "Options",
    "Phase",
    "Policy",
    "Reveal",
    "SelfTake",
    "TeamTiebreak",
    "Variant",
    "action_str",
    "card_str",
    "choose",
    "double",
    "parse_card",
    "play",
    "playout",
    "playout_from",
    "visible_events",
]

Event = tuple[Any, ...]


class Variant(IntEnum):
    """docs/rules.md §2."""

    TRIX = 0
    TRIX_PARTNERSHIP = 1
    COMPLEX = 2
    COMPLEX_PARTNERSHIP = 3


class Contract(IntEnum):
    """docs/rules.md §2, §4-§6."""

    KING = 0
    QUEENS = 1
    DIAMONDS = 2
    TRICKS = 3
    TRIX = 4
    COMPLEX = 5


class Reveal(IntEnum):
    """docs/rules.md §7 option `doubling_reveal`."""

    SEQUENTIAL = 0
    SIMULTANEOUS = 1


class SelfTake(IntEnum):
    """docs/rules.md §7 option `doubling_self_take`."""

    NOBODY = 0
    LEADER = 1


class TeamTiebreak(IntEnum):
    """docs/rules.md §8 option `team_tiebreak`."""

    LAST_TRIX = 0
    SHARED = 1


class Phase(IntEnum):
    CHOOSE_CONTRACT = 0
    DOUBLING = 1
    PLAY = 2
    AWAITING_DEAL = 3
    GAME_OVER = 4


_PHASES = tuple(Phase(value) for value in range(len(Phase)))
"""Phase by its number (the C core's `_phase`)."""


class IllegalReason(IntEnum):
    """Why an action was refused; the same numbers as the C `trix_status`."""

    NOT_YOUR_TURN = 1
    WRONG_PHASE = 2
    NOT_IN_HAND = 3
    MUST_FOLLOW_SUIT = 4
    NOT_PLAYABLE_ON_LAYOUT = 5
    CONTRACT_ALREADY_PLAYED = 6
    CONTRACT_NOT_IN_VARIANT = 7
    NOT_ELIGIBLE_TO_DOUBLE = 8
    ALREADY_ANSWERED = 9
    GAME_OVER = 10
    BAD_ACTION = 11
    BAD_SEAT = 12


class EventKind(IntEnum):
    DEAL_STARTED = 0
    CONTRACT_CHOSEN = 1
    DOUBLE_ANSWERED = 2
    DOUBLES_REVEALED = 3
    CARD_PLAYED = 4
    TRICK_TAKEN = 5
    SEAT_PASSED = 6
    SEAT_OUT = 7
    DEAL_SCORED = 8
    GAME_ENDED = 9
    SEAT_LEFT = 10


DEAL_STARTED = EventKind.DEAL_STARTED
CONTRACT_CHOSEN = EventKind.CONTRACT_CHOSEN
DOUBLE_ANSWERED = EventKind.DOUBLE_ANSWERED
DOUBLES_REVEALED = EventKind.DOUBLES_REVEALED
CARD_PLAYED = EventKind.CARD_PLAYED
TRICK_TAKEN = EventKind.TRICK_TAKEN
SEAT_PASSED = EventKind.SEAT_PASSED
SEAT_OUT = EventKind.SEAT_OUT
DEAL_SCORED = EventKind.DEAL_SCORED
GAME_ENDED = EventKind.GAME_ENDED
SEAT_LEFT = EventKind.SEAT_LEFT


class Policy(IntEnum):
    """Playout policies (C `trix_policy`)."""

    RANDOM = 0
    LOWEST = 1
    BOT = 2


RANDOM = Policy.RANDOM
LOWEST = Policy.LOWEST
BOT = Policy.BOT


@dataclass(frozen=True)
class Options:
    """The engine's table options; each field names the rule it selects."""

    doubling: bool = True  # docs/rules.md §7
    doubling_reveal: Reveal = Reveal.SEQUENTIAL  # §7
    doubling_self_take: SelfTake = SelfTake.NOBODY  # §7
    team_tiebreak: TeamTiebreak = TeamTiebreak.LAST_TRIX  # §8
    partnership_trix_early_end: bool = True  # §6 (partnership variants only)


class IllegalAction(Exception):
    """An action refused by the rules; the game state is unchanged."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = IllegalReason(code)
        self.message = message

    def __reduce__(self) -> tuple[Any, ...]:
        return (IllegalAction, (int(self.code), self.message))


_core._register(IllegalAction)

# ---- cards and actions (docs/rules.md §1, docs/engine-api.md) -------------------

ACTION_NO_DOUBLE = 64
_CHOOSE_BASE = 52
_DOUBLE_BASE = 64
# Doubling mask bits: bit0 QC, bit1 QD, bit2 QH, bit3 QS, bit4 KH.
_DOUBLE_BIT_CARDS = rules.DOUBLE_MASK_CARDS


def card_str(card: int) -> str:
    """`49 -> "QS"` (docs/rules.md §1)."""
    if not isinstance(card, int) or not 0 <= card < 52:
        raise ValueError(f"not a card id: {card!r}")
    return rules.card_text(card)


def parse_card(text: str) -> int:
    """`"QS" -> 49`; only exact upper-case rank then suit (`TD`, never `10D`)."""
    card = rules.card_of_text(text)
    if card is None:
        raise ValueError(f"not a card: {text!r}")
    return card


def play(card: int) -> int:
    card_str(card)
    return card


def choose(contract: int) -> int:
    return _CHOOSE_BASE + int(Contract(contract))


def double_mask(cards: Iterable[int]) -> int:
    mask = 0
    for c in cards:
        if c not in _DOUBLE_BIT_CARDS:
            raise ValueError(f"card cannot be doubled ({card_str(c)})")
        mask |= 1 << _DOUBLE_BIT_CARDS.index(c)
    return mask


def double(cards: Iterable[int]) -> int:
    """The doubling answer for these cards (empty: "no double")."""
    return _DOUBLE_BASE + double_mask(cards)


def mask_cards(mask: int) -> tuple[int, ...]:
    """Cards of a doubling mask, sorted by id."""
    return tuple(sorted(c for b, c in enumerate(_DOUBLE_BIT_CARDS) if mask >> b & 1))


def action_str(action: int) -> str:
    if 0 <= action < 52:
        return f"play {card_str(action)}"
    if _CHOOSE_BASE <= action < _CHOOSE_BASE + len(Contract):
        return f"choose {Contract(action - _CHOOSE_BASE).name}"
    if _DOUBLE_BASE <= action < _DOUBLE_BASE + 32:
        cards = mask_cards(action - _DOUBLE_BASE)
        return "double " + " ".join(card_str(c) for c in cards) if cards else "no double"
    raise ValueError(f"not an action: {action!r}")


# ---- visibility (docs/rules.md §14) --------------------------------------------


def visible_events(events: Iterable[Event], seat: int | None, reveal: Reveal | None = None) -> list[Event]:
    """The events a seat (or spectators, `None`) may see.

    Only a SIMULTANEOUS doubling answer is secret: it is shown to the
    answering seat alone until DOUBLES_REVEALED. The event tuples do not say
    which mode the table uses, so pass `reveal` (the table's
    `options.doubling_reveal`); when it is omitted the safe reading
    (SIMULTANEOUS, hide) applies. `Game.visible_events` passes it for you.
    """
    hide = reveal is None or reveal == Reveal.SIMULTANEOUS
    out: list[Event] = []
    for ev in events:
        if hide and ev[0] == DOUBLE_ANSWERED and ev[1] != seat:
            continue
        out.append(ev)
    return out


# ---- the game ---------------------------------------------------------------

_NO_SEAT = 0xFF
_NO_RANK = 0xFF
_DOUBLING_CARDS = rules.DOUBLING_CARDS_BY_CONTRACT


def _options_from_tuple(t: tuple[int, int, int, int, int]) -> Options:
    return Options(bool(t[0]), Reveal(t[1]), SelfTake(t[2]), TeamTiebreak(t[3]), bool(t[4]))


class Game(_core.Game):
    """A game of Trix. `to_act`, `legal_actions` and `apply` are C methods."""

    __slots__ = ()

    def __init__(
        self,
        variant: Variant,
        options: Options = Options(),
        decks: Sequence[Sequence[Sequence[int]]] = (),
    ) -> None:
        super().__init__(int(variant), options, decks)

    @property
    def variant(self) -> Variant:
        return Variant(self._variant)

    @property
    def options(self) -> Options:
        return _options_from_tuple(self._options_tuple())

    @property
    def phase(self) -> Phase:
        return _PHASES[self._phase]  # an enum call per look was a visible share of the table's action

    @property
    def contract(self) -> Contract | None:
        c = self._contract
        return None if c is None else Contract(c)

    def visible_events(self, events: Iterable[Event], seat: int | None) -> list[Event]:
        """`visible_events` with this table's doubling mode."""
        return visible_events(events, seat, self.options.doubling_reveal)

    def view(self, seat: int | None) -> dict[str, Any]:
        """What `seat` (or spectators, `None`) may see now (docs/rules.md §14)."""
        if seat is not None and (not isinstance(seat, int) or not 0 <= seat < 4):
            raise IllegalAction(IllegalReason.BAD_SEAT, f"bad seat ({seat})")
        st = self._state()
        phase = Phase(st["phase"])
        simultaneous = self.options.doubling_reveal == Reveal.SIMULTANEOUS
        answered_mask: int = st["answered"]
        answer_mask: tuple[int, ...] = st["answer_mask"]
        doubling_open = phase == Phase.DOUBLING
        if doubling_open and simultaneous:
            # §14: nobody sees who has answered until all four have.
            if seat is None or answered_mask >> seat & 1:
                to_act: list[int] = []
            else:
                to_act = [seat]
            answered: list[int] = []
        else:
            to_act = list(self.to_act())
            hist = self._history()
            cur = hist[-1] if hist and phase in (Phase.DOUBLING, Phase.PLAY) else None
            answered = [s for s, _ in cur[2]] if cur is not None else []
        public_answers = [] if (doubling_open and simultaneous) else answered
        doubled = sorted((s, c) for s in public_answers for c in mask_cards(answer_mask[s]))
        my_double: tuple[int, ...] | None = None
        if seat is not None and phase in (Phase.DOUBLING, Phase.PLAY) and answered_mask >> seat & 1:
            my_double = mask_cards(answer_mask[seat])
        leader: int = st["trick_leader"]
        trick = [((leader + i) % 4, c) for i, c in enumerate(st["trick_cards"])]
        layout: list[tuple[int, int] | None] = []
        for suit in range(4):
            lo, hi = st["row_low"][suit], st["row_high"][suit]
            layout.append(None if lo == _NO_RANK else (suit * 13 + lo, suit * 13 + hi))
        played = st["played_contracts"]
        view: dict[str, Any] = {
            "variant": self.variant,
            "phase": phase,
            "deal_index": self.deal_index,
            "kingdom": self.kingdom,
            "owner": self.owner,
            "contract": self.contract,
            "to_act": to_act,
            "hand_counts": st["hand_counts"],
            "trick": trick,
            "trick_leader": None if leader == _NO_SEAT or phase != Phase.PLAY else leader,
            "tricks_taken": st["tricks_taken"],
            "layout": layout,
            "doubled": doubled,
            "my_double": my_double,
            "answered": answered,
            "out": list(st["out"]),
            "scores": self.scores(),
            "totals": self.totals(),
            "ranking": self.ranking(),
            "played_contracts": [Contract(c) for c in range(6) if played >> c & 1],
        }
        if seat is not None:
            view["hand"] = self.hand(seat)
        return view

    def record(self) -> dict[str, Any]:
        """docs/rules.md §12 record, without players and fairness."""
        opts = self.options
        deals: list[dict[str, Any]] = []
        for owner, contract, answers, plays, scores, hands in self._history():
            holder = {c: s for s in range(4) for c in hands[s]}
            eligible = _DOUBLING_CARDS.get(Contract(contract), frozenset()) if contract is not None else frozenset()
            doubles = [
                {"seat": s, "cards": [card_str(c) for c in mask_cards(m)]}
                for s, m in answers
                # §12: seats without an eligible card ("no" only) are left out
                if eligible & set(hands[s])
            ]
            deals.append(
                {
                    "hands": [[card_str(c) for c in h] for h in hands],
                    "owner": owner,
                    "contract": None if contract is None else Contract(contract).name,
                    "doubles": doubles,
                    "plays": [{"seat": holder[c], "card": card_str(c)} for c in plays],
                    "scores": None if scores is None else list(scores),
                }
            )
        ranking = self.ranking()
        rec: dict[str, Any] = {
            "format": "trix-game/1",
            "variant": self.variant.name,
            "options": {
                "doubling": opts.doubling,
                "doubling_reveal": opts.doubling_reveal.name,
                "doubling_self_take": opts.doubling_self_take.name,
                "team_tiebreak": opts.team_tiebreak.name,
                "partnership_trix_early_end": opts.partnership_trix_early_end,
            },
            "deals": deals,
            "totals": list(self.totals()),
            "ranking": None if ranking is None else list(ranking),
        }
        left = self._state()["left"]
        if left != _NO_SEAT:
            rec["left"] = left
        return rec

    def __copy__(self) -> Game:
        return self.clone()

    def __deepcopy__(self, memo: dict[int, Any]) -> Game:
        return self.clone()

    def __reduce__(self) -> tuple[Any, ...]:
        return (Game.restore, (self.snapshot(),))


def playout(
    variant: Variant,
    options: Options = Options(),
    seed: int = 0,
    policies: Sequence[int] = (BOT, BOT, BOT, BOT),
) -> tuple[tuple[int, int, int, int], tuple[int, int, int, int], int]:
    """A whole game inside C with its own PRNG deals: (totals, ranking, moves)."""
    return _core.playout(int(variant), options, seed, tuple(int(p) for p in policies))


def playout_from(
    game: Game, seed: int = 0, policies: Sequence[int] = (BOT, BOT, BOT, BOT)
) -> tuple[tuple[int, int, int, int], tuple[int, int, int, int], int]:
    """Play `game` to its end inside C (the game itself is unchanged)."""
    return _core.playout_from(game, seed, tuple(int(p) for p in policies))
