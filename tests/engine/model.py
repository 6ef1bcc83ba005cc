"""A readable pure-Python model of the Trix rules (docs/rules.md §1-§8, §10, §12, §14).

This module owns nothing but the rules: it implements the same API as the C
engine `trix.engine` (docs/engine-api.md) so that tests can play the same game
through both and compare every step (tests/engine/test_differential.py), and so
that the record tools (`trix.records`) can be checked before the C engine exists.

It is written for clarity, not speed, and must stay importable on its own: it
never imports `trix.engine` (a model that shared code with the engine could not
catch the engine's bugs). Enum values are the same ints as the engine's.
"""

from __future__ import annotations

import copy
import enum
import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

# ---------------------------------------------------------------------------
# §1 Cards, seats, direction
# ---------------------------------------------------------------------------

SUITS = "CDHS"  # "Suits, in this fixed index order: C clubs, D diamonds, H hearts, S spades."
RANKS = "23456789TJQKA"  # "Ranks, low to high: 2 3 4 5 6 7 8 9 T J Q K A."
NUM_SEATS = 4
CARDS_PER_HAND = 13
NUM_CARDS = 52

CLUBS, DIAMONDS_SUIT, HEARTS, SPADES = 0, 1, 2, 3
RANK_JACK, RANK_QUEEN, RANK_KING = 11, 12, 13


def make_card(suit: int, rank: int) -> int:
    """§1: "Card id = suit_index * 13 + (rank - 2), rank 2..14 (A = 14)"."""
    return suit * 13 + (rank - 2)


def suit_of(card: int) -> int:
    return card // 13


def rank_of(card: int) -> int:
    return card % 13 + 2


def card_str(card: int) -> str:
    """§1: "Text form is rank then suit: 2C, TD, QS, KH, AS"."""
    if not (isinstance(card, int) and 0 <= card < NUM_CARDS):
        raise ValueError(f"not a card id: {card!r}")
    return RANKS[card % 13] + SUITS[card // 13]


def parse_card(text: str) -> int:
    """Only the exact upper-case form of §1 / §12 ("TD", never "10D" or "td")."""
    if not isinstance(text, str) or len(text) != 2 or text[0] not in RANKS or text[1] not in SUITS:
        raise ValueError(f"not a card: {text!r}")
    return SUITS.index(text[1]) * 13 + RANKS.index(text[0])


KING_OF_HEARTS = make_card(HEARTS, RANK_KING)  # KH
SEVEN_OF_HEARTS = make_card(HEARTS, 7)  # 7H: §3 its holder owns the first kingdom
QUEENS_CARDS = tuple(make_card(s, RANK_QUEEN) for s in range(4))  # QC QD QH QS
JACKS = tuple(make_card(s, RANK_JACK) for s in range(4))


def next_seat(seat: int) -> int:
    """§1: play always moves "to the right": next(s) = (s + 1) % 4."""
    return (seat + 1) % NUM_SEATS


def partner(seat: int) -> int:
    """§1: partner(s) = (s + 2) % 4; teams are {0, 2} and {1, 3}."""
    return (seat + 2) % NUM_SEATS


# ---------------------------------------------------------------------------
# Enums (same int values as trix.engine, docs/engine-api.md)
# ---------------------------------------------------------------------------


class Variant(enum.IntEnum):
    TRIX = 0
    TRIX_PARTNERSHIP = 1
    COMPLEX = 2
    COMPLEX_PARTNERSHIP = 3


class Contract(enum.IntEnum):
    KING = 0
    QUEENS = 1
    DIAMONDS = 2
    TRICKS = 3
    TRIX = 4
    COMPLEX = 5


class Reveal(enum.IntEnum):
    SEQUENTIAL = 0
    SIMULTANEOUS = 1


class SelfTake(enum.IntEnum):
    NOBODY = 0
    LEADER = 1


class TeamTiebreak(enum.IntEnum):
    LAST_TRIX = 0
    SHARED = 1


class Phase(enum.IntEnum):
    CHOOSE_CONTRACT = 0
    DOUBLING = 1
    PLAY = 2
    AWAITING_DEAL = 3
    GAME_OVER = 4


class EventKind(enum.IntEnum):
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


class IllegalReason(enum.IntEnum):
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


class IllegalAction(Exception):
    """An action the rules forbid; the game state is left unchanged."""

    def __init__(self, code: IllegalReason, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


Event = tuple[Any, ...]

# §2 Variants
PARTNERSHIP_VARIANTS = (Variant.TRIX_PARTNERSHIP, Variant.COMPLEX_PARTNERSHIP)
VARIANT_CONTRACTS: dict[Variant, tuple[Contract, ...]] = {
    Variant.TRIX: (
        Contract.KING,
        Contract.QUEENS,
        Contract.DIAMONDS,
        Contract.TRICKS,
        Contract.TRIX,
    ),
    Variant.TRIX_PARTNERSHIP: (
        Contract.KING,
        Contract.QUEENS,
        Contract.DIAMONDS,
        Contract.TRICKS,
        Contract.TRIX,
    ),
    Variant.COMPLEX: (Contract.COMPLEX, Contract.TRIX),
    Variant.COMPLEX_PARTNERSHIP: (Contract.COMPLEX, Contract.TRIX),
}
NUM_KINGDOMS = 4  # §3 "A game is 4 kingdoms"

# §5 Penalties
KING_OF_HEARTS_PENALTY = -75
QUEEN_PENALTY = -25
DIAMOND_PENALTY = -10
TRICK_PENALTY = -15
# §6 TRIX places: "+200, the second +150, the third +100 ... the last gets +50"
TRIX_PLACE_POINTS = (200, 150, 100, 50)
# §7 "value v (KH: 75, a queen: 25)"
DOUBLE_VALUE_KING = 75
DOUBLE_VALUE_QUEEN = 25

# docs/engine-api.md: actions are one int each.
ACTION_CHOOSE_BASE = 52
ACTION_DOUBLE_BASE = 64
ACTION_NO_DOUBLE = 64
# mask bits: bit0 QC, bit1 QD, bit2 QH, bit3 QS, bit4 KH
DOUBLE_MASK_CARDS = (*QUEENS_CARDS, KING_OF_HEARTS)


def play(card: int) -> int:
    return card


def choose(contract: int) -> int:
    return ACTION_CHOOSE_BASE + int(contract)


def double(cards: Sequence[int]) -> int:
    mask = 0
    for c in cards:
        mask |= 1 << DOUBLE_MASK_CARDS.index(c)
    return ACTION_DOUBLE_BASE + mask


def mask_cards(mask: int) -> tuple[int, ...]:
    return tuple(sorted(c for i, c in enumerate(DOUBLE_MASK_CARDS) if mask >> i & 1))


def action_str(action: int) -> str:
    if 0 <= action < NUM_CARDS:
        return f"play {card_str(action)}"
    if ACTION_CHOOSE_BASE <= action < ACTION_CHOOSE_BASE + len(Contract):
        return f"choose {Contract(action - ACTION_CHOOSE_BASE).name}"
    if action == ACTION_NO_DOUBLE:
        return "no double"
    if ACTION_DOUBLE_BASE < action < ACTION_DOUBLE_BASE + 32:
        return "double " + " ".join(card_str(c) for c in mask_cards(action - ACTION_DOUBLE_BASE))
    raise ValueError(f"not an action: {action!r}")


@dataclass(frozen=True)
class Options:
    doubling: bool = True  # docs/rules.md §7
    doubling_reveal: Reveal = Reveal.SEQUENTIAL  # §7
    doubling_self_take: SelfTake = SelfTake.NOBODY  # §7
    team_tiebreak: TeamTiebreak = TeamTiebreak.LAST_TRIX  # §8
    partnership_trix_early_end: bool = True  # §6 (partnership variants only)


def doubling_cards(contract: Contract) -> tuple[int, ...]:
    """§7 "Doubling contracts: KING (the card KH), QUEENS (any queen), COMPLEX (KH and any queen)"."""
    if contract == Contract.KING:
        return (KING_OF_HEARTS,)
    if contract == Contract.QUEENS:
        return QUEENS_CARDS
    if contract == Contract.COMPLEX:
        return (*QUEENS_CARDS, KING_OF_HEARTS)
    return ()


def check_hands(hands: Sequence[Sequence[int]]) -> list[list[int]]:
    """A deal is 4 hands of 13 card ids that together hold every card once (§3)."""
    try:
        result = [sorted(int(c) for c in h) for h in hands]
    except (TypeError, ValueError) as exc:
        raise ValueError("hands must be 4 lists of card ids") from exc
    if len(result) != NUM_SEATS or any(len(h) != CARDS_PER_HAND for h in result):
        raise ValueError("a deal is 4 hands of 13 cards")
    if sorted(c for h in result for c in h) != list(range(NUM_CARDS)):
        raise ValueError("the hands must hold every card exactly once")
    return result


@dataclass
class _DealState:
    """Everything about the deal being played; replaced at each DEAL_STARTED."""

    index: int
    owner: int
    initial_hands: list[list[int]]
    hands: list[set[int]]
    contract: Contract | None = None
    # doubling (§7)
    answers: dict[int, tuple[int, ...]] = field(default_factory=dict)
    answer_order: list[int] = field(default_factory=list)
    next_answer: int | None = None  # SEQUENTIAL: the seat to answer now
    revealed: bool = False
    doubler_of: dict[int, int] = field(default_factory=dict)  # doubled card -> doubler
    # trick play (§4)
    trick: list[tuple[int, int]] = field(default_factory=list)
    leader: int | None = None
    trick_index: int = 0
    tricks_taken: list[int] = field(default_factory=lambda: [0] * NUM_SEATS)
    taken_cards: set[int] = field(default_factory=set)
    # layout (§6): per suit (low, high) or None
    layout: list[tuple[int, int] | None] = field(default_factory=lambda: [None] * 4)
    out: list[int] = field(default_factory=list)
    turn: int | None = None
    plays: list[tuple[int, int]] = field(default_factory=list)
    points: list[int] = field(default_factory=lambda: [0] * NUM_SEATS)
    finished: bool = False


class Game:
    """One game of Trix; the same verbs as trix.engine.Game (docs/engine-api.md)."""

    def __init__(
        self,
        variant: Variant | int,
        options: Options = Options(),
        decks: Sequence[Sequence[Sequence[int]]] = (),
    ) -> None:
        self._variant = Variant(variant)
        self._options = Options(
            doubling=bool(options.doubling),
            doubling_reveal=Reveal(options.doubling_reveal),
            doubling_self_take=SelfTake(options.doubling_self_take),
            team_tiebreak=TeamTiebreak(options.team_tiebreak),
            partnership_trix_early_end=bool(options.partnership_trix_early_end),
        )
        contracts = VARIANT_CONTRACTS[self._variant]
        self._deals_per_kingdom = len(contracts)
        # §2: 20 deals (5 contracts x 4 kingdoms) or 8 (2 x 4)
        self._num_deals = self._deals_per_kingdom * NUM_KINGDOMS
        if len(decks) > self._num_deals:
            raise ValueError(f"more decks than deals ({self._num_deals})")
        self._decks: list[list[list[int]]] = [check_hands(d) for d in decks]
        self._deal_index = 0
        self._kingdom_owner: int | None = None
        self._played: list[Contract] = []
        self._totals = [0] * NUM_SEATS
        self._ranking: tuple[int, int, int, int] | None = None
        self._phase = Phase.AWAITING_DEAL
        self._deal: _DealState | None = None
        self._records: list[dict[str, Any]] = []
        self._left: int | None = None
        self._last_trix_first_out: int | None = None
        if self._decks:
            self._start_deal()

    # -- read-only properties ------------------------------------------------

    @property
    def variant(self) -> Variant:
        return self._variant

    @property
    def options(self) -> Options:
        return self._options

    @property
    def phase(self) -> Phase:
        return self._phase

    @property
    def deal_index(self) -> int:
        return self._deal_index

    @property
    def kingdom(self) -> int:
        return min(self._deal_index, self._num_deals - 1) // self._deals_per_kingdom

    @property
    def owner(self) -> int | None:
        return self._kingdom_owner

    @property
    def contract(self) -> Contract | None:
        if self._deal is None or self._phase in (Phase.AWAITING_DEAL, Phase.GAME_OVER):
            return None
        return self._deal.contract

    @property
    def num_deals(self) -> int:
        return self._num_deals

    def _is_partnership(self) -> bool:
        return self._variant in PARTNERSHIP_VARIANTS

    # -- deals -------------------------------------------------------------

    def provide_deal(self, hands: Sequence[Sequence[int]]) -> list[Event]:
        """Supply the deck of the first deal without one; if the game was awaiting
        that deal, it starts (DEAL_STARTED)."""
        if self._phase == Phase.GAME_OVER:
            raise IllegalAction(IllegalReason.GAME_OVER, "game is over")
        if len(self._decks) >= self._num_deals:
            raise ValueError("every deal already has its deck")
        self._decks.append(check_hands(hands))
        if self._phase == Phase.AWAITING_DEAL and self._deal_index < len(self._decks):
            return self._start_deal()
        return []

    def _start_deal(self) -> list[Event]:
        hands = self._decks[self._deal_index]
        if self._deal_index == 0:
            # §3 "The holder of 7H in the game's first deal owns the first kingdom"
            self._kingdom_owner = next(s for s in range(4) if SEVEN_OF_HEARTS in hands[s])
        assert self._kingdom_owner is not None
        self._deal = _DealState(
            index=self._deal_index,
            owner=self._kingdom_owner,
            initial_hands=[list(h) for h in hands],
            hands=[set(h) for h in hands],
        )
        self._phase = Phase.CHOOSE_CONTRACT
        return [
            (
                EventKind.DEAL_STARTED,
                self._deal_index,
                self.kingdom,
                self._kingdom_owner,
            )
        ]

    # -- whose turn, what is legal ----------------------------------------

    def to_act(self) -> tuple[int, ...]:
        deal = self._deal
        if deal is None or self._phase in (Phase.AWAITING_DEAL, Phase.GAME_OVER):
            return ()
        if self._phase == Phase.CHOOSE_CONTRACT:
            return (deal.owner,)
        if self._phase == Phase.DOUBLING:
            if self._options.doubling_reveal == Reveal.SIMULTANEOUS:
                return tuple(s for s in range(4) if s not in deal.answers)
            assert deal.next_answer is not None
            return (deal.next_answer,)
        assert deal.turn is not None
        return (deal.turn,)

    def legal_actions(self, seat: int) -> list[int]:
        if not (isinstance(seat, int) and 0 <= seat < NUM_SEATS) or seat not in self.to_act():
            return []
        deal = self._deal
        assert deal is not None
        if self._phase == Phase.CHOOSE_CONTRACT:
            # §3 "picks a contract not yet played in this kingdom"
            return sorted(choose(c) for c in VARIANT_CONTRACTS[self._variant] if c not in self._played)
        if self._phase == Phase.DOUBLING:
            # §7 "which of its eligible cards it doubles (any subset, possibly none)"
            eligible = self._eligible(seat)
            masks = set()
            for subset in range(1 << len(eligible)):
                chosen = [c for i, c in enumerate(eligible) if subset >> i & 1]
                masks.add(double(chosen))
            return sorted(masks)
        return sorted(self._playable_cards(seat))

    def _eligible(self, seat: int) -> list[int]:
        deal = self._deal
        assert deal is not None and deal.contract is not None
        return [c for c in doubling_cards(deal.contract) if c in deal.hands[seat]]

    def _playable_cards(self, seat: int) -> list[int]:
        deal = self._deal
        assert deal is not None and deal.contract is not None
        hand = deal.hands[seat]
        if deal.contract == Contract.TRIX:
            return [c for c in hand if self._layout_accepts(c)]
        if not deal.trick:
            # §4 "The leader plays any card, even a heart or KH in KING."
            return list(hand)
        led = suit_of(deal.trick[0][1])
        following = [c for c in hand if suit_of(c) == led]
        # §4 "must follow the led suit if it holds one, otherwise it may play any card"
        return following if following else list(hand)

    def _layout_accepts(self, card: int) -> bool:
        """§6 "A card is legal when it is a jack, or when its suit's jack is on the table
        and its rank is one above the row's highest card or one below the row's lowest"."""
        deal = self._deal
        assert deal is not None
        row = deal.layout[suit_of(card)]
        if rank_of(card) == RANK_JACK:
            return row is None
        if row is None:
            return False
        low, high = row
        return (card == high + 1 and rank_of(high) < 14) or (card == low - 1 and rank_of(low) > 2)

    # -- apply ---------------------------------------------------------------

    def apply(self, seat: int, action: int) -> list[Event]:
        """Check first, then act (docs/architecture.md, "Style"): an IllegalAction leaves the state unchanged."""
        if self._phase == Phase.GAME_OVER:
            raise IllegalAction(IllegalReason.GAME_OVER, "game is over")
        if not (type(seat) is int and 0 <= seat < NUM_SEATS):
            raise IllegalAction(IllegalReason.BAD_SEAT, f"bad seat ({seat!r})")
        if type(action) is not int or not (
            0 <= action < NUM_CARDS
            or ACTION_CHOOSE_BASE <= action < ACTION_CHOOSE_BASE + len(Contract)
            or ACTION_DOUBLE_BASE <= action < ACTION_DOUBLE_BASE + 32
        ):
            raise IllegalAction(IllegalReason.BAD_ACTION, f"bad action ({action!r})")
        if self._phase == Phase.AWAITING_DEAL:
            raise IllegalAction(IllegalReason.WRONG_PHASE, _wrong_phase_message(self._phase))
        if action < NUM_CARDS:
            wanted = Phase.PLAY
        elif action < ACTION_DOUBLE_BASE:
            wanted = Phase.CHOOSE_CONTRACT
        else:
            wanted = Phase.DOUBLING
        if self._phase != wanted:
            raise IllegalAction(IllegalReason.WRONG_PHASE, _wrong_phase_message(self._phase))
        deal = self._deal
        assert deal is not None
        acting = self.to_act()
        if seat not in acting:
            # §7 "every seat answers once": a second answer is refused as such (in
            # SEQUENTIAL the answers are public anyway, so this tells nothing new).
            if self._phase == Phase.DOUBLING and seat in deal.answers:
                raise IllegalAction(IllegalReason.ALREADY_ANSWERED, "seat already answered")
            raise IllegalAction(IllegalReason.NOT_YOUR_TURN, f"not your turn (seat {acting[0]} to act)")
        if self._phase == Phase.CHOOSE_CONTRACT:
            return self._apply_choose(seat, Contract(action - ACTION_CHOOSE_BASE))
        if self._phase == Phase.DOUBLING:
            return self._apply_double(seat, mask_cards(action - ACTION_DOUBLE_BASE))
        return self._apply_card(seat, action)

    def _apply_choose(self, seat: int, contract: Contract) -> list[Event]:
        deal = self._deal
        assert deal is not None
        if contract not in VARIANT_CONTRACTS[self._variant]:
            raise IllegalAction(
                IllegalReason.CONTRACT_NOT_IN_VARIANT,
                f"contract not in this variant ({contract.name})",
            )
        if contract in self._played:
            # §3 "Each contract is played exactly once per kingdom."
            raise IllegalAction(
                IllegalReason.CONTRACT_ALREADY_PLAYED,
                f"contract already played in this kingdom ({contract.name})",
            )
        deal.contract = contract
        self._played.append(contract)
        events: list[Event] = [(EventKind.CONTRACT_CHOSEN, seat, contract)]
        # §7: doubling applies to KING, QUEENS, COMPLEX when the option is on.
        if self._options.doubling and doubling_cards(contract):
            self._phase = Phase.DOUBLING
            # SEQUENTIAL: "seats answer in turn starting with the owner"
            deal.next_answer = deal.owner
            return events
        events += self._start_play()
        return events

    def _apply_double(self, seat: int, cards: tuple[int, ...]) -> list[Event]:
        deal = self._deal
        assert deal is not None and deal.contract is not None
        allowed = doubling_cards(deal.contract)
        # §7 "which of its eligible cards it doubles": eligible = a doubling card of this
        # contract (named first if any is not) that the seat holds.
        for c in cards:
            if c not in allowed:
                raise IllegalAction(IllegalReason.NOT_ELIGIBLE_TO_DOUBLE, f"card cannot be doubled ({card_str(c)})")
        for c in cards:
            if c not in deal.hands[seat]:
                raise IllegalAction(IllegalReason.NOT_ELIGIBLE_TO_DOUBLE, f"card cannot be doubled ({card_str(c)})")
        deal.answers[seat] = cards
        deal.answer_order.append(seat)
        for c in cards:
            deal.doubler_of[c] = seat
        events: list[Event] = [(EventKind.DOUBLE_ANSWERED, seat, cards)]
        if len(deal.answers) < NUM_SEATS:
            deal.next_answer = next_seat(seat)
            return events
        deal.next_answer = None
        if self._options.doubling_reveal == Reveal.SIMULTANEOUS:
            # §7 SIMULTANEOUS: "then all doubled cards are revealed together"
            events.append(
                (
                    EventKind.DOUBLES_REVEALED,
                    tuple((s, deal.answers[s]) for s in range(4)),
                )
            )
        deal.revealed = True
        events += self._start_play()
        return events

    def _start_play(self) -> list[Event]:
        deal = self._deal
        assert deal is not None
        self._phase = Phase.PLAY
        # §3 "The owner leads the first trick (trick contracts) or plays first (TRIX)."
        deal.leader = deal.owner
        if deal.contract == Contract.TRIX:
            deal.leader = None
            # §6 "the owner without a jack at the start included, passes"
            return self._advance_trix_turn(deal.owner)
        deal.turn = deal.owner
        return []

    def _apply_card(self, seat: int, card: int) -> list[Event]:
        deal = self._deal
        assert deal is not None and deal.contract is not None
        if card not in deal.hands[seat]:
            raise IllegalAction(IllegalReason.NOT_IN_HAND, f"card not in hand ({card_str(card)})")
        if deal.contract == Contract.TRIX:
            if not self._layout_accepts(card):
                raise IllegalAction(
                    IllegalReason.NOT_PLAYABLE_ON_LAYOUT,
                    f"not playable on the layout ({card_str(card)})",
                )
            return self._play_on_layout(seat, card)
        if card not in self._playable_cards(seat):
            led = suit_of(deal.trick[0][1])
            raise IllegalAction(IllegalReason.MUST_FOLLOW_SUIT, f"must follow suit ({SUITS[led]})")
        return self._play_to_trick(seat, card)

    # -- §4 / §5 / §7 trick play -----------------------------------------

    def _play_to_trick(self, seat: int, card: int) -> list[Event]:
        deal = self._deal
        assert deal is not None and deal.contract is not None
        deal.hands[seat].discard(card)
        deal.trick.append((seat, card))
        deal.plays.append((seat, card))
        events: list[Event] = [(EventKind.CARD_PLAYED, seat, card)]
        if len(deal.trick) < NUM_SEATS:
            deal.turn = next_seat(seat)
            return events
        # §4 "The highest card of the led suit wins the trick; the winner leads the next one."
        led = suit_of(deal.trick[0][1])
        winner = max((c, s) for s, c in deal.trick if suit_of(c) == led)[1]
        points = self._trick_points(winner, [c for _, c in deal.trick])
        for s in range(4):
            deal.points[s] += points[s]
        deal.tricks_taken[winner] += 1
        deal.taken_cards.update(c for _, c in deal.trick)
        events.append((EventKind.TRICK_TAKEN, winner, deal.trick_index, tuple(points)))
        deal.trick_index += 1
        deal.trick = []
        deal.leader = winner
        deal.turn = winner
        if self._trick_deal_over():
            events += self._finish_deal()
        return events

    def _trick_points(self, taker: int, cards: list[int]) -> list[int]:
        """§5 penalties to the seat that takes the trick, then §7 doubled cards."""
        deal = self._deal
        assert deal is not None and deal.contract is not None
        contract = deal.contract
        points = [0] * NUM_SEATS
        penalty = 0
        if contract in (Contract.TRICKS, Contract.COMPLEX):
            penalty += TRICK_PENALTY
        for c in cards:
            if contract in (Contract.KING, Contract.COMPLEX) and c == KING_OF_HEARTS:
                penalty += KING_OF_HEARTS_PENALTY
            if contract in (Contract.QUEENS, Contract.COMPLEX) and c in QUEENS_CARDS:
                penalty += QUEEN_PENALTY  # §5 "QD counts as a queen and as a diamond"
            if contract in (Contract.DIAMONDS, Contract.COMPLEX) and suit_of(c) == DIAMONDS_SUIT:
                penalty += DIAMOND_PENALTY
        points[taker] += penalty
        # §7 "Each doubled card is scored on its own": one application per doubled card.
        trick_leader = deal.trick[0][0]
        for c in sorted(cards):
            if c not in deal.doubler_of:
                continue
            value = DOUBLE_VALUE_KING if c == KING_OF_HEARTS else DOUBLE_VALUE_QUEEN
            doubler = deal.doubler_of[c]
            points[taker] -= value  # "the taker loses v more"
            if doubler != taker:
                points[doubler] += value  # "the doubler, if the doubler is not the taker"
            elif self._options.doubling_self_take == SelfTake.LEADER and trick_leader != taker:
                # LEADER: "the seat that led that trick gains +v, unless it is the taker"
                points[trick_leader] += value
            # NOBODY: "nobody gains"
        return points

    def _trick_deal_over(self) -> bool:
        """§4 "A deal ends early once nothing is left to score"."""
        deal = self._deal
        assert deal is not None
        if deal.trick_index == CARDS_PER_HAND:
            return True
        taken = deal.taken_cards
        if deal.contract == Contract.KING:
            return KING_OF_HEARTS in taken
        if deal.contract == Contract.QUEENS:
            return all(q in taken for q in QUEENS_CARDS)
        if deal.contract == Contract.DIAMONDS:
            return sum(1 for c in taken if suit_of(c) == DIAMONDS_SUIT) == 13
        return False  # "TRICKS and COMPLEX always play all 13 tricks"

    # -- §6 TRIX layout ---------------------------------------------------

    def _play_on_layout(self, seat: int, card: int) -> list[Event]:
        deal = self._deal
        assert deal is not None
        deal.hands[seat].discard(card)
        deal.plays.append((seat, card))
        suit = suit_of(card)
        row = deal.layout[suit]
        deal.layout[suit] = (card, card) if row is None else (min(row[0], card), max(row[1], card))
        events: list[Event] = [(EventKind.CARD_PLAYED, seat, card)]
        if not deal.hands[seat]:
            events.append(self._seat_out(seat))
            if self._trix_deal_over(events):
                events += self._finish_deal()
                return events
        events += self._advance_trix_turn(next_seat(seat))
        return events

    def _seat_out(self, seat: int) -> Event:
        deal = self._deal
        assert deal is not None
        deal.out.append(seat)
        place = len(deal.out)
        points = TRIX_PLACE_POINTS[place - 1]
        deal.points[seat] += points
        return (EventKind.SEAT_OUT, seat, place, points)

    def _trix_deal_over(self, events: list[Event]) -> bool:
        """Adds the remaining SEAT_OUT events (in place order) when the deal ends."""
        deal = self._deal
        assert deal is not None
        out = deal.out
        rest = [s for s in range(4) if s not in out]
        if len(out) == 3:
            # §6 "the deal ends when three seats are out and the last gets +50"
            events.append(self._seat_out(rest[0]))
            return True
        if (
            len(out) == 2
            and self._is_partnership()
            and self._options.partnership_trix_early_end
            and out[1] == partner(out[0])
        ):
            # §6 partnership_trix_early_end: "of the other two, the seat holding fewer
            # cards gets +100 and the other +50; on equal counts the seat right after
            # the second one out, next(second out), gets +100."
            a, b = rest
            count_a, count_b = len(deal.hands[a]), len(deal.hands[b])
            third = next_seat(out[1])  # "on equal counts ... next(second out)"
            if count_a != count_b:
                third = a if count_a < count_b else b
            fourth = b if third == a else a
            events.append(self._seat_out(third))
            events.append(self._seat_out(fourth))
            return True
        return False

    def _advance_trix_turn(self, seat: int) -> list[Event]:
        """§6 "On his turn a seat must place one legal card if it has any ...; otherwise it
        passes automatically. A seat with no cards is skipped." """
        deal = self._deal
        assert deal is not None
        events: list[Event] = []
        for _ in range(8):
            if not deal.hands[seat]:
                seat = next_seat(seat)  # skipped: no event, it is out
                continue
            if any(self._layout_accepts(c) for c in deal.hands[seat]):
                deal.turn = seat
                return events
            events.append((EventKind.SEAT_PASSED, seat))
            seat = next_seat(seat)
        raise AssertionError("no seat can play on the layout")  # impossible by §6

    # -- end of deal / game (§8) ------------------------------------------

    def _finish_deal(self) -> list[Event]:
        deal = self._deal
        assert deal is not None and deal.contract is not None
        deal.finished = True
        scores = tuple(deal.points)
        for s in range(4):
            self._totals[s] += scores[s]
        if deal.contract == Contract.TRIX:
            self._last_trix_first_out = deal.out[0]
        self._records.append(self._deal_record(deal, scores))
        events: list[Event] = [(EventKind.DEAL_SCORED, deal.index, scores)]
        if self._deal_index + 1 == self._num_deals:
            # §8 "After the last deal of the fourth kingdom the totals are final."
            # (deal_index stays on that last deal.)
            self._phase = Phase.GAME_OVER
            self._ranking = self._final_ranking()
            events.append((EventKind.GAME_ENDED, tuple(self._totals), self._ranking))
            return events
        self._deal_index += 1
        if self._deal_index % self._deals_per_kingdom == 0:
            # §3 "Each following kingdom is owned by next(previous owner)"
            assert self._kingdom_owner is not None
            self._kingdom_owner = next_seat(self._kingdom_owner)
            self._played = []
        if self._deal_index < len(self._decks):
            events += self._start_deal()
        else:
            self._phase = Phase.AWAITING_DEAL
        return events

    def _deal_record(self, deal: _DealState, scores: tuple[int, ...] | None) -> dict[str, Any]:
        """One entry of §12 `deals`."""
        doubles = []
        if deal.contract is not None and self._options.doubling and doubling_cards(deal.contract):
            for s in deal.answer_order:
                # §12 "the answers of seats without an eligible card (always "no") are left out"
                if any(c in deal.initial_hands[s] for c in doubling_cards(deal.contract)):
                    doubles.append({"seat": s, "cards": [card_str(c) for c in deal.answers[s]]})
        return {
            "hands": [[card_str(c) for c in h] for h in deal.initial_hands],
            "owner": deal.owner,
            "contract": deal.contract.name if deal.contract is not None else None,
            "doubles": doubles,
            "plays": [{"seat": s, "card": card_str(c)} for s, c in deal.plays],
            "scores": list(scores) if scores is not None else None,
        }

    def _final_ranking(self) -> tuple[int, int, int, int]:
        totals = self._totals
        if not self._is_partnership():
            # §8 "equal totals share a place (1, 1, 3, 4)"
            return _places(totals, range(4))  # type: ignore[return-value]
        team = [totals[0] + totals[2], totals[1] + totals[3]]
        if team[0] > team[1]:
            first = 0
        elif team[1] > team[0]:
            first = 1
        elif self._options.team_tiebreak == TeamTiebreak.SHARED:
            return (1, 1, 1, 1)  # SHARED: "both teams win"
        else:
            # LAST_TRIX: "the team whose member went out first in the last TRIX deal wins"
            assert self._last_trix_first_out is not None
            first = self._last_trix_first_out % 2
        return tuple(1 if s % 2 == first else 2 for s in range(4))  # type: ignore[return-value]

    # -- §10 leaving -------------------------------------------------------

    def leave(self, seat: int) -> list[Event]:
        """§10: a player who leaves a paid table for good ends the game at once."""
        if self._phase == Phase.GAME_OVER:
            raise IllegalAction(IllegalReason.GAME_OVER, "game is over")
        if not (type(seat) is int and 0 <= seat < NUM_SEATS):
            raise IllegalAction(IllegalReason.BAD_SEAT, f"bad seat ({seat!r})")
        # "an unfinished deal does not count"
        if self._deal is not None and not self._deal.finished and self._phase != Phase.AWAITING_DEAL:
            self._records.append(self._deal_record(self._deal, None))
        self._left = seat
        self._phase = Phase.GAME_OVER
        totals = self._totals
        ranking: list[int]
        if self._is_partnership():
            # "the leaver is ranked last (in partnership together with his partner)"
            ranking = [2 if s % 2 == seat % 2 else 1 for s in range(4)]
        else:
            # "the others are ranked among themselves by the totals of the finished
            # deals (singles 1..3 with shared places; the leaver is 4)"
            others = [s for s in range(4) if s != seat]
            ranking = list(_places(totals, others))
            ranking[seat] = 4
        self._ranking = (ranking[0], ranking[1], ranking[2], ranking[3])
        return [
            (EventKind.SEAT_LEFT, seat),
            (EventKind.GAME_ENDED, tuple(totals), self._ranking),
        ]

    # -- reading the state ---------------------------------------------------

    def hand(self, seat: int) -> tuple[int, ...]:
        if self._deal is None or self._phase in (Phase.AWAITING_DEAL, Phase.GAME_OVER):
            return ()
        return tuple(sorted(self._deal.hands[seat]))

    def scores(self) -> tuple[int, int, int, int]:
        """The current deal's points so far."""
        if (
            self._deal is None
            or self._deal.finished
            or self._phase
            in (
                Phase.AWAITING_DEAL,
                Phase.GAME_OVER,
            )
        ):
            return (0, 0, 0, 0)
        p = self._deal.points
        return (p[0], p[1], p[2], p[3])

    def totals(self) -> tuple[int, int, int, int]:
        t = self._totals
        return (t[0], t[1], t[2], t[3])

    def ranking(self) -> tuple[int, int, int, int] | None:
        return self._ranking

    def record(self) -> dict[str, Any]:
        """§12 without players/fairness."""
        deals = [copy.deepcopy(r) for r in self._records]
        deal = self._deal
        if deal is not None and not deal.finished and self._phase not in (Phase.AWAITING_DEAL, Phase.GAME_OVER):
            deals.append(self._deal_record(deal, None))  # a running deal: scores null
        result: dict[str, Any] = {
            "variant": self._variant.name,
            "options": {
                "doubling": self._options.doubling,
                "doubling_reveal": self._options.doubling_reveal.name,
                "doubling_self_take": self._options.doubling_self_take.name,
                "team_tiebreak": self._options.team_tiebreak.name,
                "partnership_trix_early_end": self._options.partnership_trix_early_end,
            },
            "deals": deals,
            "totals": list(self._totals),
            "ranking": list(self._ranking) if self._ranking is not None else None,
        }
        if self._left is not None:
            result["left"] = self._left
        return result

    def view(self, seat: int | None) -> dict[str, Any]:
        """What `seat` (or spectators, None) may see, by docs/rules.md §14."""
        deal = self._deal
        active = deal is not None and self._phase not in (
            Phase.AWAITING_DEAL,
            Phase.GAME_OVER,
        )
        simultaneous = self._options.doubling_reveal == Reveal.SIMULTANEOUS
        to_act = list(self.to_act())
        answered: list[int] = []
        doubled: list[tuple[int, int]] = []
        my_double: list[int] | None = None
        if active and deal is not None:
            if self._phase == Phase.DOUBLING and simultaneous:
                # §14: "not who has answered so far"
                to_act = [seat] if seat is not None and seat not in deal.answers else []
            public = deal.answer_order if (deal.revealed or not simultaneous) else []
            answered = list(public)
            doubled = sorted(((s, c) for s in public for c in deal.answers[s]), key=lambda x: x[1])
            if seat is not None and seat in deal.answers:
                my_double = list(deal.answers[seat])
        result: dict[str, Any] = {
            "variant": self._variant,
            "phase": self._phase,
            "deal_index": self._deal_index,
            "kingdom": self.kingdom,
            "owner": self._kingdom_owner,
            "contract": self.contract,
            "to_act": to_act,
            "hand_counts": [len(deal.hands[s]) if active and deal else 0 for s in range(4)],
            "trick": list(deal.trick) if active and deal else [],
            "trick_leader": deal.leader if active and deal else None,
            "tricks_taken": list(deal.tricks_taken) if active and deal else [0, 0, 0, 0],
            "layout": list(deal.layout) if active and deal else [None] * 4,
            "doubled": doubled,
            "my_double": my_double,
            "answered": answered,
            "out": list(deal.out) if active and deal else [],
            "scores": list(self.scores()),
            "totals": list(self._totals),
            "ranking": list(self._ranking) if self._ranking else None,
            "played_contracts": list(self._played) if active else [],
        }
        if seat is not None:
            result["hand"] = list(self.hand(seat))
        return result

    def visible_events(self, events: Sequence[Event], seat: int | None) -> list[Event]:
        """§14: in SIMULTANEOUS mode a DOUBLE_ANSWERED is shown only to the answering seat."""
        if self._options.doubling_reveal != Reveal.SIMULTANEOUS:
            return list(events)
        return [e for e in events if e[0] != EventKind.DOUBLE_ANSWERED or e[1] == seat]

    def clone(self) -> Game:
        return copy.deepcopy(self)

    def snapshot(self) -> bytes:
        return json.dumps(_to_jsonable(self.__dict__), sort_keys=True).encode()


def _to_jsonable(value: Any) -> Any:
    if isinstance(value, dict):
        return {str(k): _to_jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, set)):
        items = sorted(value) if isinstance(value, set) else value
        return [_to_jsonable(v) for v in items]
    if isinstance(value, (_DealState, Options)):
        return _to_jsonable(value.__dict__)
    return value


def _wrong_phase_message(phase: Phase) -> str:
    return {
        Phase.CHOOSE_CONTRACT: "a contract must be chosen first",
        Phase.DOUBLING: "doubling answers come first",
        Phase.PLAY: "cards are being played",
        Phase.AWAITING_DEAL: "no deal is being played",
    }.get(phase, "game is over")


def _places(totals: Sequence[int], seats: Sequence[int] | range) -> tuple[int, ...]:
    """Place of each seat among `seats` by total: 1 + how many have more (1, 1, 3, 4)."""
    places = [0, 0, 0, 0]
    for s in seats:
        places[s] = 1 + sum(1 for o in seats if totals[o] > totals[s])
    return tuple(places)
