"""The §14 leak checker (tests/support/leakcheck.py) catches each kind of leak it is there
for: a clean stream of a small game passes, and the same stream with one deliberately leaky
message fails (another seat's hand, a hand on the public stream, the server seed before the
end, legal moves of another seat, an unplayed card, a view holding another seat's card).
Without this, a checker that never fails would make the live leak check
(test_leaks_through_the_gateway.py) pass vacuously."""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from typing import Any

import pytest

from support.leakcheck import check_snapshot, check_stream
from trix.rules import card_text
from trix.v1 import common_pb2, events_pb2, table_pb2

SEED = bytes(range(32))
HANDS = [[s * 13 + i for i in range(13)] for s in range(4)]
RECORD: dict[str, Any] = {
    "fairness": {"server_seed": SEED.hex(), "commitment": hashlib.sha256(SEED).hexdigest()},
    "deals": [{"hands": [[card_text(c) for c in hand] for hand in HANDS]}],
}


def _event(sequence: int, **body: Any) -> events_pb2.Event:
    return events_pb2.Event(table_id="t", sequence=sequence, **body)


def _game(seat: int | None) -> list[events_pb2.Event]:
    """A small game as `seat` (None: a spectator) receives it: created, dealt, seat 0's turn,
    its card, a trick, the end."""
    own = seat is not None
    deal = events_pb2.DealStarted(deal_index=0, hand=[common_pb2.Card(id=c) for c in HANDS[seat]] if own else [])
    turn = events_pb2.TurnStarted(seats=[0], decision=common_pb2.DECISION_CARD, turn_seq=1, seat_copies=True)
    if seat == 0:
        turn.legal_cards.extend(common_pb2.Card(id=c) for c in HANDS[0][:3])
    played = [HANDS[s][0] for s in range(4)]
    return [
        _event(1, table_created=events_pb2.TableCreated(commitment=RECORD["fairness"]["commitment"])),
        _event(2, deal_started=deal),
        _event(3, turn_started=turn),
        *(_event(4 + s, card_played=events_pb2.CardPlayed(card=common_pb2.Card(id=c))) for s, c in enumerate(played)),
        _event(8, trick_taken=events_pb2.TrickTaken(cards=[common_pb2.Card(id=c) for c in played])),
        _event(9, game_ended=events_pb2.GameEnded(record_json="{}")),
    ]


def _check(events: list[events_pb2.Event], seat: int | None) -> None:
    check_stream([e.SerializeToString() for e in events], RECORD, seat=seat, simultaneous=False, where="test")


@pytest.mark.parametrize("seat", [None, 0, 1, 2, 3])
def test_a_clean_stream_passes(seat: int | None) -> None:
    _check(_game(seat), seat)


def _another_seats_hand(events: list[events_pb2.Event]) -> None:
    del events[1].deal_started.hand[:]
    events[1].deal_started.hand.extend(common_pb2.Card(id=c) for c in HANDS[2])


def _one_card_of_another_seat(events: list[events_pb2.Event]) -> None:
    events[1].deal_started.hand[0].id = HANDS[3][5]


def _seed_in_a_message(events: list[events_pb2.Event]) -> None:
    events[0].table_created.match_id = SEED.hex()


def _raw_seed_in_a_message(events: list[events_pb2.Event]) -> None:
    events[0].table_created.match_id = SEED.decode("latin-1")


def _legal_moves_of_another_seat(events: list[events_pb2.Event]) -> None:
    events[2].turn_started.legal_cards.extend(common_pb2.Card(id=c) for c in HANDS[0][:2])


def _an_unplayed_card_in_a_trick(events: list[events_pb2.Event]) -> None:
    events[7].trick_taken.cards[1].id = HANDS[1][9]


LEAKS: dict[str, tuple[Callable[[list[events_pb2.Event]], None], tuple[int | None, ...], str]] = {
    "another seat's hand": (_another_seats_hand, (0, 1), "got a hand not its own"),
    "one card of another seat": (_one_card_of_another_seat, (1,), "got a hand not its own"),
    "a hand on the public stream": (_another_seats_hand, (None,), "a hand on the public subject"),
    "the server seed (hex) before the end": (_seed_in_a_message, (None, 0), "server seed before the end"),
    "the server seed (raw) before the end": (_raw_seed_in_a_message, (None, 2), "server seed before the end"),
    "legal moves of another seat": (_legal_moves_of_another_seat, (None, 1), "legal moves not its own"),
    "an unplayed card in a trick": (_an_unplayed_card_in_a_trick, (None, 3), "unplayed card in a trick"),
}


@pytest.mark.parametrize("leak", sorted(LEAKS))
def test_the_checker_catches_a_deliberately_leaky_message(leak: str) -> None:
    make_leaky, seats, caught_as = LEAKS[leak]
    for seat in seats:
        events = _game(seat)
        make_leaky(events)
        with pytest.raises(AssertionError, match=caught_as):
            _check(events, seat)


def test_the_checker_catches_a_view_holding_cards_it_may_not_see() -> None:
    own = table_pb2.SeatView(seat=1, deal_index=0, hand=[common_pb2.Card(id=c) for c in HANDS[1]])
    check_snapshot(own, RECORD, seat=1, where="own view")
    check_snapshot(table_pb2.SeatView(seat=-1, deal_index=0), RECORD, seat=None, where="public view")
    leaky = table_pb2.SeatView()
    leaky.CopyFrom(own)
    leaky.hand[0].id = HANDS[0][0]
    with pytest.raises(AssertionError, match="a card not its own"):
        check_snapshot(leaky, RECORD, seat=1, where="another seat's card")
    with pytest.raises(AssertionError, match="a hand in a public view"):
        check_snapshot(own, RECORD, seat=None, where="a hand in a spectator's view")
    seeded = table_pb2.SeatView(seat=-1, commitment=SEED.hex())
    with pytest.raises(AssertionError, match="server seed in a view"):
        check_snapshot(seeded, RECORD, seat=None, where="the seed in a view")
