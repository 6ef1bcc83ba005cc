"""Registration before the start (issue 43): closed after registration closes, never over the
capacity, once per player, no id a bot's could be; approval keeps an entrant waiting; leaving
before the start gives half the fee back; refused and still-waiting entrants get it all back."""

from __future__ import annotations

import pytest
from competition_support import NOW_MS, options

from trix.competitions.model import Entrant
from trix.competitions.money import REFUND, plan
from trix.competitions.options import CompetitionError
from trix.competitions.registration import ACCEPTED, LEFT, PENDING, REFUSED, Registration


def test_automatic_admission_accepts_at_once_in_registration_order() -> None:
    reg = Registration(options())
    assert reg.register("b", 1600.0, NOW_MS) == ACCEPTED
    assert reg.register("a", 1500.0, NOW_MS) == ACCEPTED
    assert reg.at_start() == [Entrant("b", 1600.0), Entrant("a", 1500.0)]


def test_registration_is_refused_when_closed_full_twice_or_with_a_bad_id() -> None:
    reg = Registration(options(rounds=1, capacity=4))
    for i in range(4):
        reg.register(f"p{i}", 0.0, NOW_MS)
    with pytest.raises(CompetitionError, match=r"full \(4 entrants\)"):
        reg.register("p9", 0.0, NOW_MS)
    with pytest.raises(CompetitionError, match="already registered"):
        reg.register("p0", 0.0, NOW_MS)
    with pytest.raises(CompetitionError, match="registration has closed"):
        Registration(options()).register("p0", 0.0, options().registration_closes_at_ms)
    for bad in ("bot-1", "a b", ""):
        with pytest.raises(CompetitionError, match="a player id is"):
            Registration(options()).register(bad, 0.0, NOW_MS)


def test_approval_keeps_an_entrant_waiting_until_the_organiser_decides() -> None:
    reg = Registration(options(admission="approval"))
    assert reg.register("a", 0.0, NOW_MS) == PENDING
    assert reg.register("b", 0.0, NOW_MS) == PENDING
    reg.register("c", 0.0, NOW_MS)
    assert reg.approve("a", accept=True) == ACCEPTED
    assert reg.approve("b", accept=False) == REFUSED
    with pytest.raises(CompetitionError, match="waits for approval"):
        reg.approve("b", accept=True)
    assert [e.player for e in reg.at_start()] == ["a"]
    assert reg.refunded_in_full() == ["b", "c"]  # refused, and still waiting at the start


def test_leaving_before_the_start_gives_half_back_and_after_the_start_is_refused_here() -> None:
    opts = options(entry_fee=101)
    reg = Registration(opts)
    reg.register("a", 0.0, NOW_MS)
    assert reg.leave("a", NOW_MS) == 50
    assert reg.states["a"] == LEFT and reg.left_before_start() == ["a"]
    with pytest.raises(CompetitionError, match="not registered"):
        reg.leave("a", NOW_MS)
    reg.register("b", 0.0, NOW_MS)
    with pytest.raises(CompetitionError, match="leaving now is leaving your table"):
        reg.leave("b", opts.starts_at_ms)
    with pytest.raises(CompetitionError, match="already registered"):
        reg.register("a", 0.0, NOW_MS)  # a leaver's fee was held once: no second entry


def test_the_ledger_gives_refused_and_waiting_entrants_the_full_fee_back() -> None:
    reg = Registration(options(admission="approval"))
    for player in ("a", "b", "c", "d"):
        reg.register(player, 0.0, NOW_MS)
    reg.approve("a", accept=True)
    reg.approve("b", accept=False)
    reg.leave("d", NOW_MS)
    entries = plan("c", options(), reg.paid(), reg.left_before_start(), [("a",)], reg.refunded_in_full())
    assert {e.player: e.coins for e in entries if e.kind == REFUND} == {"b": 100, "c": 100, "d": 50}
