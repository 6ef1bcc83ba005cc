"""The §14 leak check: what a subject or stream carried, against the finished record."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from typing import Any

from trix import engine
from trix.natsio import seatstream
from trix.v1 import events_pb2


def check_stream(
    messages: Sequence[bytes], record: dict[str, Any], *, seat: int | None, simultaneous: bool, where: str
) -> int:
    """Check one subject's messages in order (seat None = public). Returns the events checked."""
    seed_hex = record["fairness"]["server_seed"]
    seed = bytes.fromhex(seed_hex)
    assert hashlib.sha256(seed).hexdigest() == record["fairness"]["commitment"]
    hands = [[{engine.parse_card(c) for c in h} for h in deal["hands"]] for deal in record["deals"]]
    public: set[int] = set()  # cards shown to everyone so far (played, doubled once public)
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
            got = {c.id for c in d.hand}
            if seat is None:
                assert not got, f"{where}: a hand on the public subject"
            else:
                assert got == hands[d.deal_index][seat], f"{where}: seat {seat} got a hand not its own"
        elif body == "card_played":
            public.add(event.card_played.card.id)
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


def check_own_copies(messages: Sequence[bytes], record: dict[str, Any], *, seat: int, where: str) -> int:
    """A seat's own subject: only that seat's copies of per-seat events (its hand in each
    DealStarted, RULES.md §14), one per deal, in order; public events are not copied there."""
    hands = [[{engine.parse_card(c) for c in h} for h in deal["hands"]] for deal in record["deals"]]
    last_seq = 0
    for data in messages:
        event = events_pb2.Event.FromString(data)
        assert event.sequence > last_seq, f"{where}: sequences increase"
        last_seq = event.sequence
        assert seatstream.has_seat_copies(event), f"{where}: a public event on a seat subject"
        d = event.deal_started
        assert {c.id for c in d.hand} == hands[d.deal_index][seat], f"{where}: seat {seat} got a hand not its own"
    assert len(messages) == len(record["deals"]), f"{where}: one copy per deal"
    return len(messages)


def merged_stream(public: Sequence[bytes], own: Sequence[bytes]) -> list[bytes]:
    """What a seat sees: the public subject with the seat's own copies in their place."""
    events = seatstream.merge(
        (events_pb2.Event.FromString(m) for m in public), (events_pb2.Event.FromString(m) for m in own)
    )
    return [e.SerializeToString() for e in events]
