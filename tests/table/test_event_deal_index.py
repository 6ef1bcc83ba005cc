"""Every event of a deal carries that deal's index (issue 40, found by the conformance client):
the last card of a deal, its trick and its seats out included, although the engine has already
moved on to the next deal when the table maps them. Whole games of the four variants, played by
the seats' own acts and by the table's bots, on the real `Table` and the C engine, no I/O."""

from __future__ import annotations

import base64
from datetime import UTC, datetime
from typing import Any

import pytest

from support.table import create_request
from trix.table.table import ALL, PUBLIC_ONLY, Routed, Table
from trix.v1 import common_pb2, events_pb2

PLAYERS = ("ann", "ben", "cat", "dan")
NOW = datetime(2026, 1, 1, tzinfo=UTC)
SIM = common_pb2.DOUBLING_REVEAL_SIMULTANEOUS
SEQ = common_pb2.DOUBLING_REVEAL_SEQUENTIAL


class DealAudit:
    """Folds the public events: the deal open since its DealStarted, and every event with a
    `deal_index` checked against it (DealScored closes it)."""

    def __init__(self) -> None:
        self.deal: int | None = None
        self.scored = -1
        self.checked: dict[str, int] = {}
        self.last_card_deals: list[int] = []
        self.wrong: list[tuple[int, str, int, int | None]] = []

    def apply(self, routed: list[Routed]) -> None:
        for r in routed:
            if r.audience not in (ALL, PUBLIC_ONLY):
                continue
            body = r.event.WhichOneof("body")
            if body is None:
                continue
            ev: Any = getattr(r.event, body)
            if body == "deal_started":
                assert self.deal is None and ev.deal_index == self.scored + 1, (r.event.sequence, ev.deal_index)
                self.deal = ev.deal_index
                self.last_card = -1
                continue
            if "deal_index" not in ev.DESCRIPTOR.fields_by_name:
                continue
            self.checked[body] = self.checked.get(body, 0) + 1
            if ev.deal_index != self.deal:
                self.wrong.append((r.event.sequence, body, ev.deal_index, self.deal))
            if body == "card_played":
                self.last_card = ev.deal_index
            elif body == "deal_scored":
                self.last_card_deals.append(self.last_card)
                self.scored, self.deal = ev.deal_index, None


@pytest.mark.parametrize(
    ("variant", "reveal", "bots", "deals"),
    [
        (common_pb2.VARIANT_TRIX, SEQ, (), 20),
        (common_pb2.VARIANT_TRIX_PARTNERSHIP, SIM, (1,), 20),
        (common_pb2.VARIANT_COMPLEX, SIM, (0, 2), 8),
        (common_pb2.VARIANT_COMPLEX_PARTNERSHIP, SEQ, (3,), 8),
    ],
    ids=["trix", "trix-partnership", "complex", "complex-partnership"],
)
def test_every_event_of_a_deal_carries_that_deals_index_the_last_card_included(
    variant: int, reveal: int, bots: tuple[int, ...], deals: int
) -> None:
    options = common_pb2.TableOptions(doubling_reveal=common_pb2.DoublingReveal.ValueType(reveal))
    request = create_request(
        f"deals-{variant}", variant, PLAYERS, options=options, bots=bots, seeds=("a", "b", "c", "d")
    )
    entry = {"request": base64.b64encode(request.SerializeToString()).decode(), "commitment": "c"}
    table = Table.from_create(entry, bytes(range(32)))
    audit = DealAudit()
    audit.apply(table.apply_entry({"op": "create", "id": "create"}, NOW, live=True))
    assert table.game is not None
    actions = 0
    while not table.finished:
        seat = table.to_act()[0]
        actions += 1
        act: dict[str, Any] = {"op": "act", "id": f"a{actions}", "acts": [[seat, table.game.bot_action(seat), 0]]}
        audit.apply(table.apply_entry(act, NOW, live=True))  # live: the bots' moves follow in it
    assert audit.wrong == []
    # docs/rules.md §2: every deal of the variant was played, scored, and its last card was its own.
    assert audit.scored == deals - 1 and audit.deal is None
    assert audit.last_card_deals == list(range(deals))
    assert {"card_played", "trick_taken", "contract_chosen", "deal_scored", "turn_started"} <= set(audit.checked)
    if variant in (common_pb2.VARIANT_TRIX, common_pb2.VARIANT_TRIX_PARTNERSHIP):
        assert audit.checked["seat_out"] > 0


def test_events_of_a_step_that_ends_a_deal_and_deals_the_next_carry_each_their_own_deal() -> None:
    """The step of a deal's last card publishes that card, its trick and the deal's score, then
    the next deal: the card and trick carry the deal they ended, the next DealStarted its own."""
    request = create_request("deals-step", common_pb2.VARIANT_COMPLEX, PLAYERS, seeds=("a", "b", "c", "d"))
    entry = {"request": base64.b64encode(request.SerializeToString()).decode(), "commitment": "c"}
    table = Table.from_create(entry, bytes(range(32)))
    table.apply_entry({"op": "create", "id": "create"}, NOW, live=True)
    assert table.game is not None
    actions = 0
    while table.game.deal_index == 0:
        seat = table.to_act()[0]
        actions += 1
        act: dict[str, Any] = {"op": "act", "id": f"a{actions}", "acts": [[seat, table.game.bot_action(seat), 0]]}
        routed = table.apply_entry(act, NOW, live=True)
    events: list[events_pb2.Event] = [r.event for r in routed if r.audience in (ALL, PUBLIC_ONLY)]
    bodies = [e.WhichOneof("body") for e in events]
    assert bodies[:4] == ["card_played", "trick_taken", "deal_scored", "deal_started"], bodies
    assert [getattr(e, str(b)).deal_index for e, b in zip(events[:4], bodies, strict=False)] == [0, 0, 0, 1]
