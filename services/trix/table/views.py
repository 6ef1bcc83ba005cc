"""What a seat (or a spectator) may see of a table now: `build_view`, the `SeatView` from the
engine's view of that seat (docs/rules.md §14)."""

from __future__ import annotations

from typing import Any

from trix import engine
from trix.table.conversions import card_pb, contract_pb, legal_moves
from trix.table.table import Table, variant_contracts
from trix.v1 import common_pb2, events_pb2, table_pb2


def _layout_cards(view: dict[str, Any]) -> list[int]:
    cards: list[int] = []
    for row in view["layout"]:
        if row is not None:
            cards += range(row[0], row[1] + 1)
    return cards


TRIX_OUT_POINTS = (200, 150, 100)
"""docs/rules.md §6: the first, second and third seat out of cards in TRIX (a deal still being
played has at most these three out; the fourth's +50 ends it)."""


def _sheet(table: Table, game: engine.Game, view: dict[str, Any], out: table_pb2.SeatView) -> None:
    """The score sheet's rows, the last trick, TRIX passes and seats out: derived here, at view
    time, from the engine's per-deal history (hands, plays, scores), so the table keeps nothing
    more per action for them. The same as what the deal's events told a seat that saw them."""
    per_kingdom = len(variant_contracts(table.variant))  # §2, §3: a kingdom plays each contract once
    history = game._history()
    for d, (owner, contract, answers, _plays, scores, _hands) in enumerate(history):
        if scores is not None:
            out.deals.append(
                table_pb2.ScoredDeal(
                    deal_index=d,
                    kingdom=d // per_kingdom,
                    owner=owner,
                    contract=contract_pb(contract),
                    points=common_pb2.SeatScores(values=scores),
                    # §7: a doubled card is public once doubled; "no double" answers are left out.
                    doubles=[
                        common_pb2.DoubleAnswer(seat=s, cards=[card_pb(c) for c in engine.mask_cards(m)])
                        for s, m in sorted(answers)
                        if m
                    ],
                )
            )
    if view["phase"] != engine.Phase.PLAY or not history or history[-1][4] is not None:
        return
    owner, contract, _answers, plays, _scores, hands = history[-1]
    holder = {c: s for s in range(4) for c in hands[s]}
    if contract != engine.Contract.TRIX:
        done = len(plays) - len(view["trick"])  # cards of the tricks already taken
        if done >= 4:
            cards = plays[done - 4 : done]
            out.last_trick.CopyFrom(
                table_pb2.LastTrick(
                    trick_index=done // 4 - 1,
                    leader=holder[cards[0]],
                    taker=view["trick_leader"],  # §4: the taker leads the next trick
                    cards=[card_pb(c) for c in cards],
                )
            )
        return
    # §6: turns go round from the owner, (s + 1) % 4; a seat without cards is skipped, a seat
    # with cards that is passed over (by the next card played or the seat due now) passed.
    left = [13, 13, 13, 13]
    passes: list[int] = []
    seat = owner

    def pass_until(until: int) -> None:
        nonlocal seat
        while seat != until:
            if left[seat]:
                passes[:] = [p for p in passes if p != seat] + [seat]
            seat = (seat + 1) % 4

    for card in plays:
        player = holder[card]
        pass_until(player)
        if player in passes:
            passes.remove(player)
        left[player] -= 1
        seat = (player + 1) % 4
    if view["to_act"]:
        pass_until(view["to_act"][0])
    out.passes.extend(passes)
    for place, s in enumerate(view["out"], start=1):
        out.out.append(
            events_pb2.SeatOut(deal_index=view["deal_index"], seat=s, place=place, points=TRIX_OUT_POINTS[place - 1])
        )


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
        leave_ends_game=table.request.leave_ends_game,  # docs/rules.md §10, a competition's table
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
        out.owner = -1
        out.hand_sizes.extend([0, 0, 0, 0])
        out.totals.values.extend([0, 0, 0, 0])
        return out
    view = game.view(seat)
    out.hand.extend(card_pb(c) for c in view.get("hand", ()))
    out.hand_sizes.extend(view["hand_counts"])
    out.deal_index = view["deal_index"]
    out.kingdom = view["kingdom"]
    out.owner = -1 if view["owner"] is None else view["owner"]
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
    _sheet(table, game, view, out)
    if seat is not None and not table.finished:
        cards, contracts = legal_moves(game, seat)  # the same as the seat's own TurnStarted
        out.legal_cards.extend(cards)
        out.legal_contracts.extend(contracts)
    return out
