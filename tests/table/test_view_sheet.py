"""A SeatView carries the score sheet (issue 39, "A reload loses the score sheet"): every scored
deal's row (kingdom, owner, contract, points, doubled cards), the kingdom's owner, the last trick with its
leader and taker, and in TRIX the seats that passed and the seats out: at every point of whole
games in all four variants, exactly what a client folding the table's events since the start
knows (the events are the truth a seat that never reloaded saw). Pure: the real `Table` and the
C engine, no I/O."""

from __future__ import annotations

import base64
from datetime import UTC, datetime
from typing import Any

import pytest

from support.table import create_request
from trix.table.table import ALL, PUBLIC_ONLY, Routed, Table
from trix.table.views import build_view
from trix.v1 import common_pb2, table_pb2

PLAYERS = ("ann", "ben", "cat", "dan")
NOW = datetime(2026, 1, 1, tzinfo=UTC)


class Folded:
    """What the web client's reducer keeps of the sheet, folded from the public events."""

    def __init__(self) -> None:
        self.owner = -1
        self.kingdom = 0
        self.deals: list[tuple[int, int, int, int, list[int], list[tuple[int, list[int]]]]] = []
        self.doubles: dict[int, list[int]] = {}
        self.last_trick: tuple[int, int, int, list[int]] | None = None
        self.passes: list[int] = []
        self.out: list[tuple[int, int, int]] = []

    def apply(self, routed: list[Routed]) -> None:
        for r in routed:
            if r.audience not in (ALL, PUBLIC_ONLY):
                continue
            body = r.event.WhichOneof("body")
            ev: Any = getattr(r.event, body) if body else None
            if body == "deal_started":
                self.owner, self.kingdom = ev.owner, ev.kingdom
                self.last_trick, self.passes, self.out = None, [], []
                self.doubles = {}
            elif body == "double_answered":
                self.doubles[ev.answer.seat] = [c.id for c in ev.answer.cards]
            elif body == "doubles_revealed":
                self.doubles = {a.seat: [c.id for c in a.cards] for a in ev.answers}
            elif body == "trick_taken":
                self.last_trick = (ev.trick_index, ev.leader, ev.taker, [c.id for c in ev.cards])
            elif body == "seat_passed":
                self.passes = [p for p in self.passes if p != ev.seat] + [ev.seat]
            elif body == "card_played":
                self.passes = [p for p in self.passes if p != ev.seat]
            elif body == "seat_out":
                self.out.append((ev.seat, ev.place, ev.points))
            elif body == "deal_scored":
                doubled = [(s, cards) for s, cards in sorted(self.doubles.items()) if cards]
                self.deals.append(
                    (ev.deal_index, self.kingdom, self.owner, ev.contract, list(ev.points.values), doubled)
                )
                self.last_trick, self.passes, self.out = None, [], []


def sheet_of(view: table_pb2.SeatView) -> tuple[Any, ...]:
    last = view.last_trick if view.HasField("last_trick") else None
    return (
        view.owner,
        [
            (
                d.deal_index,
                d.kingdom,
                d.owner,
                d.contract,
                list(d.points.values),
                [(a.seat, [c.id for c in a.cards]) for a in d.doubles],
            )
            for d in view.deals
        ],
        None if last is None else (last.trick_index, last.leader, last.taker, [c.id for c in last.cards]),
        list(view.passes),
        [(o.seat, o.place, o.points) for o in view.out],
    )


def folded_sheet(f: Folded) -> tuple[Any, ...]:
    return (f.owner, f.deals, f.last_trick, f.passes, f.out)


@pytest.mark.parametrize(
    "variant",
    [
        common_pb2.VARIANT_TRIX,
        common_pb2.VARIANT_TRIX_PARTNERSHIP,
        common_pb2.VARIANT_COMPLEX,
        common_pb2.VARIANT_COMPLEX_PARTNERSHIP,
    ],
)
def test_a_view_carries_the_score_sheet_the_events_built_at_every_point_of_a_game(variant: int) -> None:
    request = create_request(f"sheet-{variant}", variant, PLAYERS, seeds=("a", "b", "c", "d"))
    entry = {"request": base64.b64encode(request.SerializeToString()).decode(), "commitment": "c"}
    table = Table.from_create(entry, bytes(range(32)))
    folded = Folded()
    folded.apply(table.apply_entry({"op": "create", "id": "create"}, NOW, live=True))
    assert table.game is not None
    seen_tricks = seen_passes = seen_out = actions = 0
    while not table.finished:
        seat = table.to_act()[0]
        action = table.game.bot_action(seat)
        actions += 1
        act: dict[str, Any] = {"op": "act", "id": f"a{actions}", "acts": [[seat, action, 0]]}
        folded.apply(table.apply_entry(act, NOW, live=True))
        for viewer in (None, seat):
            view = build_view(table, viewer)
            assert sheet_of(view) == folded_sheet(folded), (actions, viewer)
        seen_tricks += view.HasField("last_trick")
        seen_passes += bool(view.passes)
        seen_out += bool(view.out)
    # The whole sheet at the end: every deal of the variant (docs/rules.md §2), adding up.
    view = build_view(table, None)
    assert len(view.deals) == (
        8 if variant in (common_pb2.VARIANT_COMPLEX, common_pb2.VARIANT_COMPLEX_PARTNERSHIP) else 20
    )
    assert [sum(d.points.values[s] for d in view.deals) for s in range(4)] == list(view.totals.values)
    assert sorted({d.owner for d in view.deals}) == [0, 1, 2, 3]  # §3: each seat owns one kingdom
    assert seen_tricks > 0 and seen_passes > 0 and seen_out > 0
    # The doubled cards of each scored deal (docs/rules.md §7), as the events showed them.
    assert any(d.doubles for d in view.deals)


def test_a_view_before_the_first_deal_has_no_owner_and_an_empty_sheet() -> None:
    request = create_request("sheet-seeds", common_pb2.VARIANT_TRIX, PLAYERS, await_seeds=True)
    entry = {"request": base64.b64encode(request.SerializeToString()).decode(), "commitment": "c"}
    table = Table.from_create(entry, bytes(range(32)))
    table.apply_entry({"op": "create", "id": "create"}, NOW, live=True)
    assert table.game is None
    view = build_view(table, 0)
    assert view.owner == -1 and not view.deals and not view.HasField("last_trick") and not view.passes
