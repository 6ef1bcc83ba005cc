"""The §14 leak check: what a subject or stream carried, against the finished record.

The one copy (ADR 0013): the table's full games (tests/table/test_games.py: every NATS subject
the gateway may read, the table's gRPC streams) and the gateway's streams of a live game seen
by its seated players and a spectator (tests/security/test_leaks_through_the_gateway.py);
tests/security/test_leak_checker.py shows it catches each kind of leak."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from typing import Any

from trix import engine, rules
from trix.natsio import seatstream
from trix.v1 import common_pb2, events_pb2, gateway_pb2, table_pb2


def check_stream(
    messages: Sequence[bytes], record: dict[str, Any], *, seat: int | None, simultaneous: bool, where: str
) -> int:
    """Check one subject's messages in order (seat None = public). Returns the events checked."""
    seed_hex = record["fairness"]["server_seed"]
    seed = bytes.fromhex(seed_hex)
    assert hashlib.sha256(seed).hexdigest() == record["fairness"]["commitment"]
    hands = [[{engine.parse_card(c) for c in h} for h in deal["hands"]] for deal in record["deals"]]
    public: set[int] = set()  # cards shown to everyone so far (played, doubled once public)
    played: set[int] = set()
    ended = False
    last_seq = 0
    for data in messages:
        assert not ended, f"{where}: a message after GameEnded"
        event = events_pb2.Event.FromString(data)
        assert event.sequence > last_seq, f"{where}: sequences increase"
        last_seq = event.sequence
        body = event.WhichOneof("body")
        if body == "game_ended":
            ended = True
            continue
        # §11/§14: no byte of the server seed before the end, raw or as hex.
        assert seed not in data and seed_hex.encode() not in data, f"{where}: server seed before the end"
        if body == "deal_started":
            d = event.deal_started
            played = set()
            got = {c.id for c in d.hand}
            if seat is None:
                assert not got, f"{where}: a hand on the public subject"
            else:
                assert got == hands[d.deal_index][seat], f"{where}: seat {seat} got a hand not its own"
        elif body == "turn_started":
            t = event.turn_started
            assert b"hand" not in data, where
            if seat is None or seat not in t.seats:
                # §14 "its hand | yes | never (only the number of cards) | never": legal cards
                # reveal a hand, so only the seat due sees its own (ADR 0003 decision 15).
                assert not t.legal_cards and not t.legal_contracts, f"{where}: legal moves not its own"
            else:
                check_legal_moves(t, hands[t.deal_index][seat] - played, where=where)
        elif body == "card_played":
            public.add(event.card_played.card.id)
            played.add(event.card_played.card.id)
        elif body == "trick_taken":
            assert {c.id for c in event.trick_taken.cards} <= public, f"{where}: unplayed card in a trick"
        elif body == "double_answered":
            assert not simultaneous, f"{where}: a SIMULTANEOUS answer before the reveal"
            public.update(c.id for c in event.double_answered.answer.cards)
        elif body == "doubles_revealed":
            for a in event.doubles_revealed.answers:
                public.update(c.id for c in a.cards)
        else:
            assert b"hand" not in data, where
    assert ended, f"{where}: no GameEnded"
    return len(messages)


def check_legal_moves(turn: events_pb2.TurnStarted, held: set[int], *, where: str) -> None:
    """A seat's own TurnStarted (merged in its stream): the legal moves of its decision, its
    legal cards among the cards it still holds (ADR 0003 decision 15); none without copies."""
    cards = {c.id for c in turn.legal_cards}
    if not turn.seat_copies:
        assert not cards and not turn.legal_contracts, f"{where}: legal moves without seat copies"
    elif turn.decision == common_pb2.DECISION_CARD:
        assert cards and cards <= held and not turn.legal_contracts, f"{where}: legal cards not from its hand"
    elif turn.decision == common_pb2.DECISION_CONTRACT:
        assert turn.legal_contracts and not cards, f"{where}: a contract turn without its contracts"
    else:
        # A doubling turn (issue 40): the doubling cards (docs/rules.md §7) it holds, no contract.
        assert cards <= held & set(rules.DOUBLE_MASK_CARDS), f"{where}: doubling cards not from its hand"
        assert not turn.legal_contracts, f"{where}: contracts on a doubling turn"


def check_own_copies(
    messages: Sequence[bytes], public: Sequence[bytes], record: dict[str, Any], *, seat: int, where: str
) -> int:
    """A seat's own subject: only that seat's copies of per-seat events (its hand in each
    DealStarted, its legal moves in each TurnStarted with `seat_copies` naming it, docs/rules.md
    §14), each once, in order, exactly those the public subject announces; public events are
    not copied there."""
    hands = [[{engine.parse_card(c) for c in h} for h in deal["hands"]] for deal in record["deals"]]
    announced = [
        e.sequence for e in (events_pb2.Event.FromString(m) for m in public) if seatstream.has_seat_copies(e, seat)
    ]
    last_seq = 0
    deals = 0
    for data in messages:
        event = events_pb2.Event.FromString(data)
        assert event.sequence > last_seq, f"{where}: sequences increase"
        last_seq = event.sequence
        assert seatstream.has_seat_copies(event, seat), f"{where}: a public event (or another seat's) in its own copies"
        if event.HasField("turn_started"):
            assert event.turn_started.legal_cards or event.turn_started.decision != common_pb2.DECISION_CARD, where
            assert {c.id for c in event.turn_started.legal_cards} <= hands[event.turn_started.deal_index][seat], (
                f"{where}: seat {seat} got legal cards not its own"
            )
            continue
        deals += 1
        d = event.deal_started
        assert {c.id for c in d.hand} == hands[d.deal_index][seat], f"{where}: seat {seat} got a hand not its own"
    assert deals == len(record["deals"]), f"{where}: one copy per deal"
    assert [events_pb2.Event.FromString(m).sequence for m in messages] == announced, (
        f"{where}: not the copies announced"
    )
    return len(messages)


def merged_stream(public: Sequence[bytes], own: Sequence[bytes]) -> list[bytes]:
    """What a seat sees: the public subject with the seat's own copies in their place."""
    events = seatstream.merge(
        (events_pb2.Event.FromString(m) for m in public), (events_pb2.Event.FromString(m) for m in own)
    )
    return [e.SerializeToString() for e in events]


def check_snapshot(view: table_pb2.SeatView, record: dict[str, Any], *, seat: int | None, where: str) -> None:
    """A SeatView sent to a seat (its own hand and legal moves only) or to a spectator (no hand,
    no legal moves), before the game's end: no byte of the server seed (docs/rules.md §14)."""
    seed_hex = record["fairness"]["server_seed"]
    data = view.SerializeToString()
    if not view.finished:
        assert bytes.fromhex(seed_hex) not in data and seed_hex.encode() not in data, f"{where}: server seed in a view"
    cards = {c.id for c in view.hand}
    if seat is None:
        assert not cards and not view.legal_cards and not view.legal_contracts, f"{where}: a hand in a public view"
        return
    hands = [[{engine.parse_card(c) for c in h} for h in deal["hands"]] for deal in record["deals"]]
    if view.deal_index < len(hands):
        assert cards <= hands[view.deal_index][seat], f"{where}: seat {seat}'s view holds a card not its own"
        assert {c.id for c in view.legal_cards} <= cards, f"{where}: legal cards outside its hand"


def check_gateway_stream(
    responses: Sequence[gateway_pb2.SessionResponse],
    record: dict[str, Any],
    *,
    seat: int | None,
    simultaneous: bool,
    where: str,
) -> int:
    """Every message the gateway streamed to one client (a seated player's Session, `seat`; a
    spectator's, None) as it came: the events (single or in EventBatch messages) checked in
    order by `check_stream`, the views by `check_snapshot`, and no other message (tickets,
    acceptances, errors, pongs) before the end carrying a byte of the server seed
    (docs/rules.md §14). Returns the messages checked."""
    seed_hex = record["fairness"]["server_seed"]
    seed = bytes.fromhex(seed_hex)
    events: list[bytes] = []
    ended = False
    for i, m in enumerate(responses):
        kind = m.WhichOneof("kind")
        carried = [m.event] if kind == "event" else list(m.event_batch.events) if kind == "event_batch" else []
        events.extend(e.SerializeToString() for e in carried)
        if kind == "snapshot":
            check_snapshot(m.snapshot, record, seat=seat, where=f"{where} message {i}")
        elif not carried and not ended:
            data = m.SerializeToString()
            assert seed not in data and seed_hex.encode() not in data, f"{where} message {i}: server seed in a {kind}"
        ended = ended or any(e.HasField("game_ended") for e in carried)
    check_stream(events, record, seat=seat, simultaneous=simultaneous, where=where)
    return len(responses)
