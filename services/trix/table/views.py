"""What a seat (or a spectator) may see of a table now: `build_view`, the `SeatView` from the
engine's view of that seat (docs/rules.md §14)."""

from __future__ import annotations

from typing import Any

from trix.table.conversions import card_pb, contract_pb, legal_moves
from trix.table.table import Table
from trix.v1 import common_pb2, events_pb2, table_pb2


def _layout_cards(view: dict[str, Any]) -> list[int]:
    cards: list[int] = []
    for row in view["layout"]:
        if row is not None:
            cards += range(row[0], row[1] + 1)
    return cards


def build_view(table: Table, seat: int | None) -> table_pb2.SeatView:
    """SeatView from the engine's view(seat) (docs/rules.md §14)."""
    out = table_pb2.SeatView(
        table_id=table.table_id,
        sequence=table.sequence,
        seat=-1 if seat is None else seat,
        variant=table.request.variant,
        options=table.request.options,
        seats=table.seats,
        commitment=table.commitment,
        finished=table.finished,
    )
    for s, bot in enumerate(table.bots):
        out.seats[s].bot = bot
    if table.turn is not None:
        out.turn.CopyFrom(
            events_pb2.TurnStarted(
                seats=table.turn.seats,
                decision=common_pb2.Decision.ValueType(table.turn.decision),
                turn_seq=table.turn.seq,
                deal_index=0 if table.game is None else table.game.deal_index,
                client_seeds=table.turn.client_seeds,
            )
        )
        if table.turn.deadline_ms:
            # The TurnStarted's deadline, which the timers act on (docs/rules.md §9: contract 15 s,
            # doubling 8 s, card 12 s by default, or the table's options); public (§14
            # "deadlines: yes, yes, yes"), so spectators get it too.
            out.turn.deadline.FromMilliseconds(table.turn.deadline_ms)
    game = table.game
    if game is None:
        out.hand_sizes.extend([0, 0, 0, 0])
        out.totals.values.extend([0, 0, 0, 0])
        return out
    view = game.view(seat)
    out.hand.extend(card_pb(c) for c in view.get("hand", ()))
    out.hand_sizes.extend(view["hand_counts"])
    out.deal_index = view["deal_index"]
    out.kingdom = view["kingdom"]
    out.contract = contract_pb(view["contract"])
    out.trick.extend(card_pb(c) for _, c in view["trick"])
    out.layout.extend(card_pb(c) for c in _layout_cards(view))
    doubles: dict[int, list[int]] = {s: [] for s in view["answered"]}
    for s, c in view["doubled"]:
        doubles.setdefault(s, []).append(c)
    if seat is not None and view["my_double"] is not None:
        doubles[seat] = list(view["my_double"])
    for s in sorted(doubles):
        out.doubles.append(common_pb2.DoubleAnswer(seat=s, cards=[card_pb(c) for c in doubles[s]]))
    out.totals.values.extend(view["totals"])
    if seat is not None and not table.finished:
        cards, contracts = legal_moves(game, seat)  # the same as the seat's own TurnStarted
        out.legal_cards.extend(cards)
        out.legal_contracts.extend(contracts)
    return out
