"""trix.rules, the one copy of the rules' constants, agrees with the engine (C), the protos
and the independent test model: the names and values every service resolves through it."""

from __future__ import annotations

import pytest

from trix import engine, rules
from trix.v1 import common_pb2


def test_card_notation_is_rank_then_suit_and_round_trips_every_card() -> None:
    """docs/rules.md §1: `suit_index * 13 + (rank - 2)`, written rank then suit."""
    assert [rules.card_text(c) for c in (0, 8, 36, 37, 51)] == ["2C", "TC", "QH", "KH", "AS"]
    for card in range(rules.NUM_CARDS):
        assert rules.card_of_text(rules.card_text(card)) == card
        assert engine.card_str(card) == rules.card_text(card)
        assert engine.parse_card(rules.card_text(card)) == card


@pytest.mark.parametrize("text", ["10D", "td", "Td", "1C", "", "KHX", None, 37, "QX"])
def test_card_text_other_than_rank_then_suit_is_no_card(text: object) -> None:
    """docs/rules.md §12: cards are written exactly as in §1 (`TD`, never `10D` or `td`)."""
    assert rules.card_of_text(text) is None


def test_variant_and_contract_names_are_the_engines_and_the_protos_plus_one() -> None:
    """The engine's enums count from 0, the protos' from 1 (0 is UNSPECIFIED)."""
    assert tuple(v.name for v in engine.Variant) == rules.VARIANT_NAMES
    assert tuple(c.name for c in engine.Contract) == rules.CONTRACT_NAMES
    for value, name in enumerate(rules.VARIANT_NAMES):
        assert common_pb2.Variant.Value(f"VARIANT_{name}") == rules.proto_enum(value)
        assert rules.engine_enum(common_pb2.Variant.Value(f"VARIANT_{name}")) == value
    for value, name in enumerate(rules.CONTRACT_NAMES):
        assert common_pb2.Contract.Value(f"CONTRACT_{name}") == rules.proto_enum(value)
    for enum, proto in (
        (engine.Reveal, "DOUBLING_REVEAL_"),
        (engine.SelfTake, "DOUBLING_SELF_TAKE_"),
        (engine.TeamTiebreak, "TEAM_TIEBREAK_"),
    ):
        for member in enum:
            assert rules.engine_enum(_proto_value(proto, member.name)) == member


def _proto_value(prefix: str, name: str) -> int:
    for enum in common_pb2.DESCRIPTOR.enum_types_by_name.values():
        for value in enum.values:
            if value.name == prefix + name:
                return int(value.number)
    raise AssertionError(f"no proto enum value {prefix}{name}")


def test_doubling_cards_are_kh_in_king_queens_in_queens_and_both_in_complex() -> None:
    """docs/rules.md §7 "Doubling contracts: KING (KH), QUEENS (the queens), COMPLEX (KH and the queens)"."""
    kh = rules.card_of_text("KH")
    queens = {rules.card_of_text(f"Q{s}") for s in rules.SUITS}
    assert set(rules.DOUBLING_CARDS["KING"]) == {kh}
    assert set(rules.DOUBLING_CARDS["QUEENS"]) == queens
    assert set(rules.DOUBLING_CARDS["COMPLEX"]) == queens | {kh}
    assert set(rules.DOUBLING_CARDS) == {"KING", "QUEENS", "COMPLEX"}
    for contract, cards in rules.DOUBLING_CARDS_BY_CONTRACT.items():
        assert cards == frozenset(rules.DOUBLING_CARDS[rules.CONTRACT_NAMES[contract]])
    # the engine's doubling mask: bit i is DOUBLE_MASK_CARDS[i] (docs/engine-api.md)
    for bit, card in enumerate(rules.DOUBLE_MASK_CARDS):
        assert engine.double([card]) == engine.ACTION_NO_DOUBLE + (1 << bit)


def test_every_table_option_is_a_field_of_table_options_with_its_default_in_bounds() -> None:
    fields = set(common_pb2.TableOptions.DESCRIPTOR.fields_by_name)
    assert set(rules.TABLE_OPTIONS) <= fields
    for name, spec in rules.TABLE_OPTIONS.items():
        assert spec.minimum <= spec.default <= spec.maximum, name
    timers = (rules.DEFAULT_CONTRACT_TIMEOUT_S, rules.DEFAULT_DOUBLE_TIMEOUT_S, rules.DEFAULT_CARD_TIMEOUT_S)
    assert timers == (15, 8, 12)  # docs/rules.md §9
    assert (rules.DEFAULT_LEAVE_GRACE_S, rules.DEFAULT_MAX_TIMEOUTS_IN_A_ROW) == (60, 3)  # §10


@pytest.mark.parametrize(
    ("text", "ok"),
    [
        ("p1", True),
        ("A-z_9", True),
        ("x" * 128, True),
        ("x" * 129, False),
        ("", False),
        ("a b", False),
        ("a.b", False),
        ("p1\n", False),
        ("é", False),
        ("a*", False),
        (None, False),
    ],
)
def test_player_id_is_1_to_128_of_letters_digits_underscore_dash(text: object, ok: bool) -> None:
    assert rules.is_player_id(text) is ok


def test_a_turn_timer_is_its_milliseconds_else_its_seconds_else_the_default() -> None:
    """docs/rules.md §9: each timed decision has a default; a table's options override it, in
    milliseconds (fast tables) before seconds. Every decision of the proto has a timer."""
    plain = common_pb2.TableOptions()
    assert [rules.decision_timeout_s(plain, d) for d in (1, 2, 3)] == [15, 8, 12]
    assert {common_pb2.Decision.Name(d).removeprefix("DECISION_").lower() for d in (1, 2, 3)} == set(
        rules.TIMED_DECISIONS
    )
    assert [common_pb2.Decision.Value(f"DECISION_{n.upper()}") for n in rules.TIMED_DECISIONS] == [1, 2, 3]
    seconds = common_pb2.TableOptions(double_timeout_s=30, card_timeout_s=0)
    assert [rules.decision_timeout_s(seconds, d) for d in (1, 2, 3)] == [15, 30, 0]
    both = common_pb2.TableOptions(card_timeout_s=30, card_timeout_ms=50, contract_timeout_ms=1500)
    assert [rules.decision_timeout_s(both, d) for d in (1, 2, 3)] == [1.5, 8, 0.05]
