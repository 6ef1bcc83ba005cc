"""Views and event visibility of the C engine (docs/rules.md §14).

A seat's view differs from the spectators' only by its own hand, its own
doubling answer and (SIMULTANEOUS doubling) its own to_act; the spectators'
view never holds a hand; in SIMULTANEOUS doubling nobody sees who has answered.
"""

from __future__ import annotations

import random

import trix.engine as E
from trix.engine import ACTION_NO_DOUBLE, Contract, Game, Options, Phase, Reveal, Variant, choose, parse_card

PRIVATE = {"hand", "my_double", "to_act"}


def check_views(g: Game) -> None:
    public = g.view(None)
    assert "hand" not in public and public["my_double"] is None
    for s in range(4):
        v = g.view(s)
        assert v["hand"] == g.hand(s)
        assert {k: x for k, x in v.items() if k not in PRIVATE} == {k: x for k, x in public.items() if k not in PRIVATE}
        assert sum(public["hand_counts"]) == sum(len(g.hand(t)) for t in range(4))


def test_views_never_leak_another_seats_hand() -> None:
    for seed in range(12):
        rng = random.Random(seed)
        opts = Options(doubling_reveal=Reveal(seed % 2))
        decks = []
        for _ in range(8):
            d = list(range(52))
            rng.shuffle(d)
            decks.append([d[13 * s : 13 * s + 13] for s in range(4)])
        g = Game(Variant(2 + seed % 2), opts, decks)
        while g.phase != Phase.GAME_OVER:
            check_views(g)
            s = rng.choice(g.to_act())
            g.apply(s, rng.choice(g.legal_actions(s)))
        check_views(g)


def test_simultaneous_doubling_hides_who_has_answered() -> None:
    hands = [[] for _ in range(4)]  # type: list[list[int]]
    spec = {0: "7H QS", 1: "KH"}
    used = {parse_card(c) for s in spec.values() for c in s.split()}
    rest = [c for c in range(52) if c not in used]
    for s in range(4):
        hands[s] = [parse_card(c) for c in spec.get(s, "").split()]
        while len(hands[s]) < 13:
            hands[s].append(rest.pop(0))
    g = Game(Variant.COMPLEX, Options(doubling_reveal=Reveal.SIMULTANEOUS), [hands])
    g.apply(0, choose(Contract.COMPLEX))
    assert set(g.to_act()) == {0, 1, 2, 3}
    before = {s: g.view(s) for s in (None, 0, 2, 3)}
    assert before[None]["to_act"] == [] and before[2]["to_act"] == [2]
    ev = g.apply(1, E.double([parse_card("KH")]))
    # nobody else can tell that seat 1 answered, nor what
    assert E.visible_events(ev, 0) == [] and E.visible_events(ev, None) == []
    assert g.visible_events(ev, 1) == ev
    for s in (None, 0, 2, 3):
        assert g.view(s) == before[s]
    assert g.view(1)["to_act"] == [] and g.view(1)["my_double"] == (parse_card("KH"),)
    assert g.view(1)["answered"] == [] and g.view(1)["doubled"] == []
    g.apply(0, E.double([parse_card("QS")]))
    g.apply(3, ACTION_NO_DOUBLE)
    ev = g.apply(2, ACTION_NO_DOUBLE)
    assert ev[1] == (
        E.DOUBLES_REVEALED,
        ((0, (parse_card("QS"),)), (1, (parse_card("KH"),)), (2, ()), (3, ())),
    )
    assert E.visible_events(ev, 0) == ev[1:]
    v = g.view(None)
    assert sorted(v["answered"]) == [0, 1, 2, 3]
    assert v["doubled"] == [(0, parse_card("QS")), (1, parse_card("KH"))]


def test_sequential_answers_are_public_at_once() -> None:
    g = Game(Variant.TRIX, Options(), [[list(range(s * 13, s * 13 + 13)) for s in range(4)]])
    assert g.owner == 2  # 7H is a heart: seat 2 holds all hearts
    g.apply(2, choose(Contract.KING))
    ev = g.apply(2, E.double([parse_card("KH")]))
    assert g.visible_events(ev, 0) == ev
    assert g.view(0)["doubled"] == [(2, parse_card("KH"))] and g.view(None)["answered"] == [2]
