"""trix.records on bad input (docs/rules.md §12): every problem is one RecordError line
naming the deal and play (or doubling answer) by 0-based index; nothing crashes.

These replay through the Python model; test_records_cli.py runs the CLI itself.
"""

from __future__ import annotations

import copy
import json
import random
import re
from pathlib import Path
from typing import Any

import model
import pytest
from engine_support import EXAMPLES_DIR

from trix.records import (
    MAX_RECORD_BYTES,
    RecordError,
    load_record,
    read_record_file,
    replay,
)


def example(name: str) -> dict[str, Any]:
    record: dict[str, Any] = read_record_file(str(EXAMPLES_DIR / f"{name}.json"))
    return record


def run(record: Any) -> dict[str, Any]:
    return replay(record, model.Game, model.Options).record


def error_of(record: Any) -> str:
    with pytest.raises(RecordError) as info:
        run(record)
    message = str(info.value)
    assert "\n" not in message
    return message


# -- parsing -----------------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    ["", "{", "[1, 2", '{"format": "trix-game/1",}', "nul", '{"a": NaN}', "\ufeff{}"],
)
def test_broken_json_is_a_record_error(text: str) -> None:
    with pytest.raises(RecordError, match=r"^record: not valid JSON"):
        load_record(text.encode())


def test_deeply_nested_json_is_a_record_error() -> None:
    with pytest.raises(RecordError, match="not valid JSON"):
        load_record(b"[" * 100_000 + b"]" * 100_000)


def test_non_utf8_bytes_are_a_record_error() -> None:
    with pytest.raises(RecordError, match="not UTF-8"):
        load_record(b'{"format": "\xff"}')


def test_huge_file_is_refused_before_parsing(tmp_path: Path) -> None:
    path = tmp_path / "huge.json"
    path.write_bytes(b" " * (MAX_RECORD_BYTES + 10) + b"{}")
    with pytest.raises(RecordError, match="larger than"):
        read_record_file(str(path))


def test_missing_file_is_a_record_error(tmp_path: Path) -> None:
    with pytest.raises(RecordError, match="cannot read"):
        read_record_file(str(tmp_path / "nope.json"))


# -- structure and types -------------------------------------------------------


@pytest.mark.parametrize(
    ("mutate", "expected"),
    [
        (lambda r: r.update(format="trix-game/2"), r"^record: format must be"),
        (lambda r: r.update(variant="HEARTS"), r"^record: unknown variant"),
        (lambda r: r.update(variant=2), r"^record: unknown variant"),
        (lambda r: r.update(extra=1), r"^record: unknown field"),
        (lambda r: r.update(deals={}), r"^deals: must be a list"),
        (lambda r: r.update(options=[]), r"^options: must be a JSON object"),
        (lambda r: r["options"].update(doubling="yes"), r"^options: doubling must be true"),
        (lambda r: r["options"].update(doubling_reveal="LATER"), r"^options: doubling_reveal"),
        (lambda r: r["options"].update(timer=3), r"^options: unknown option"),
        (lambda r: r.update(players=["a"]), r"^players:"),
        (lambda r: r.update(totals="x"), r"^totals:"),
        (lambda r: r.update(ranking=[1, 2, 3]), r"^ranking:"),
        (lambda r: r.update(left=4), r"^left: seat must be 0..3"),
        (lambda r: r.update(left=True), r"^left: seat must be 0..3"),
        (lambda r: r["deals"].__setitem__(0, []), r"^deal 0: must be a JSON object"),
        (lambda r: r["deals"][0].update(foo=1), r"^deal 0: unknown field"),
        (lambda r: r["deals"][0]["hands"][1].pop(), r"^deal 0, hands: seat 1 must hold 13"),
        (lambda r: r["deals"][0]["hands"][2].__setitem__(0, "10D"), r'unknown card "10D"'),
        (lambda r: r["deals"][0]["hands"][2].__setitem__(0, "td"), r'unknown card "td"'),
        (lambda r: r["deals"][0]["hands"][2].__setitem__(0, 7), r"unknown card 7"),
        (lambda r: r["deals"][0].update(owner="3"), r"^deal 0, owner: seat must be 0..3"),
        (lambda r: r["deals"][0].update(contract="KINGS"), r"^deal 0, contract: unknown"),
        (lambda r: r["deals"][0].update(plays={}), r"^deal 0, plays: must be a list"),
        (lambda r: r["deals"][0].update(scores=[0, 0, 0]), r"^deal 0, scores:"),
        (lambda r: r["deals"][1]["plays"][0].update(seat=True), r"^deal 1, play 0: seat"),
        (lambda r: r["deals"][1]["plays"][0].update(seat=1.0), r"^deal 1, play 0: seat"),
        (lambda r: r["deals"][1]["plays"][0].update(card="10C"), r"^deal 1, play 0: unknown card"),
        (lambda r: r["deals"][1]["plays"].__setitem__(0, "JC"), r"^deal 1, play 0: must be an"),
        (lambda r: r["deals"][0]["doubles"][0].update(cards="KH"), r"^deal 0, doubling answer 0"),
        (lambda r: r["fairness"].update(server_seed="00"), r"^fairness: server_seed"),
    ],
)
def test_malformed_field_is_named(mutate: Any, expected: str) -> None:
    record = example("game_0002")
    mutate(record)
    assert re.search(expected, error_of(record))


def test_duplicated_card_in_hands() -> None:
    record = example("game_0002")
    hands = record["deals"][0]["hands"]
    hands[0][0] = hands[1][0]
    assert "is dealt twice" in error_of(record)


def test_random_mutations_never_crash() -> None:
    """Whatever the input, a RecordError or a result: never another exception."""
    rng = random.Random(7)
    base = example("game_0004")
    values: list[Any] = [None, True, 0, -1, 5, 1.5, "", "QS", "10D", [], {}, [0] * 4, {"x": 1}]

    def nodes(value: Any, path: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
        found = [path]
        if isinstance(value, dict):
            for k, v in value.items():
                found += nodes(v, (*path, k))
        elif isinstance(value, list):
            for i, v in enumerate(value):
                found += nodes(v, (*path, i))
        return found

    all_paths = nodes(base)
    for _ in range(150):
        record = copy.deepcopy(base)
        for _ in range(rng.randint(1, 3)):
            path = rng.choice(all_paths[1:])
            parent: Any = record
            try:
                for key in path[:-1]:
                    parent = parent[key]
                if rng.random() < 0.2 and isinstance(parent, dict):
                    parent.pop(path[-1], None)
                else:
                    parent[path[-1]] = rng.choice(values)
            except (KeyError, IndexError, TypeError):
                continue
        try:
            run(record)
        except RecordError as exc:
            assert "\n" not in str(exc)


# -- rules broken by the record ------------------------------------------------


def _follow_suit_violation() -> tuple[dict[str, Any], int, int, str]:
    """In game_0002 deal 2 (DIAMONDS), replace the first card of a seat that followed
    suit while holding another suit by that other card."""
    record = example("game_0002")
    d = 2
    deal = record["deals"][d]
    hands = [set(h) for h in deal["hands"]]
    trick: list[str] = []
    for p, play in enumerate(deal["plays"]):
        card = play["card"]
        if trick and card[1] == trick[0][1]:
            other = sorted(c for c in hands[play["seat"]] if c[1] != trick[0][1])
            if other:
                deal["plays"][p] = {"seat": play["seat"], "card": other[0]}
                return record, d, p, trick[0][1]
        hands[play["seat"]].discard(card)
        trick = [] if len(trick) == 3 else [*trick, card]
    raise AssertionError("no follow-suit play found")


def test_follow_suit_violation_message_format() -> None:
    record, d, p, suit = _follow_suit_violation()
    message = error_of(record)
    assert message == f"deal {d}, play {p}: must follow suit ({suit})"
    assert re.fullmatch(r"deal \d+, play \d+: must follow suit \([CDHS]\)", message)


def test_wrong_seat_for_a_play() -> None:
    record = example("game_0002")
    record["deals"][0]["plays"][1]["seat"] = 2  # seat 0 is to act after the owner's lead
    assert error_of(record) == "deal 0, play 1: not your turn (seat 0 to act)"


def test_card_not_in_hand() -> None:
    record = example("game_0002")
    seat1 = record["deals"][0]["hands"][1]
    record["deals"][0]["plays"][0]["card"] = seat1[0]  # the owner (3) leads a card of seat 1
    assert error_of(record) == f"deal 0, play 0: card not in hand ({seat1[0]})"


def test_card_after_early_end_of_king() -> None:
    record = example("game_0002")
    deal = record["deals"][0]  # KING, ends with the trick that takes KH (4 plays)
    assert len(deal["plays"]) == 4
    deal["plays"].append({"seat": 2, "card": deal["hands"][2][0]})
    assert error_of(record) == "deal 0, play 4: deal has ended"


def test_card_after_trix_deal_ended() -> None:
    record = example("game_0002")
    deal = record["deals"][1]  # TRIX: three seats out after 51 plays
    deal["plays"].append({"seat": 0, "card": "2C"})
    assert error_of(record).startswith("deal 1, play 51: deal has ended")


def test_unfinished_deal_followed_by_another() -> None:
    record = example("game_0002")
    record["deals"][2]["plays"].pop()
    assert error_of(record) == "deal 2, play 51: the deal is unfinished but deal 3 follows"


def test_wrong_owner() -> None:
    record = example("game_0002")
    record["deals"][0]["owner"] = 0
    assert error_of(record) == "deal 0, owner: seat 0 in the record, docs/rules.md §3 gives seat 3"


def test_contract_played_twice_in_a_kingdom() -> None:
    record = example("game_0002")
    del record["deals"][1:]
    record["deals"].append({"owner": 3, "contract": "KING", "doubles": [], "plays": []})
    record["deals"][1]["hands"] = example("game_0002")["deals"][1]["hands"]
    message = error_of(record)
    assert message == "deal 1, contract: contract already played in this kingdom (KING)"


def test_contract_not_in_variant() -> None:
    record = example("game_0001")  # COMPLEX
    record["deals"][0]["contract"] = "KING"
    record["deals"][0]["doubles"] = []
    assert error_of(record) == "deal 0, contract: contract not in this variant (KING)"


def test_sequential_doubles_out_of_turn() -> None:
    record = example("game_0002")  # SEQUENTIAL; deal 4 QUEENS, owner 3: answers 0 then 2
    answers = record["deals"][4]["doubles"]
    assert [a["seat"] for a in answers] == [0, 2]
    answers.reverse()
    assert error_of(record) == "deal 4, doubling answer 0: not your turn (seat 0 to act)"


def test_doubles_twice_from_one_seat() -> None:
    record = example("game_0002")
    answers = record["deals"][4]["doubles"]
    answers.insert(1, {"seat": 0, "cards": []})
    assert error_of(record) == "deal 4, doubling answer 1: seat already answered"


def test_simultaneous_doubles_twice_from_one_seat() -> None:
    record = example("game_0004")  # SIMULTANEOUS
    answers = record["deals"][1]["doubles"]
    answers.append(dict(answers[0]))
    message = error_of(record)
    assert message == f"deal 1, doubling answer {len(answers) - 1}: seat already answered"


def test_double_from_seat_without_eligible_card() -> None:
    record = example("game_0002")
    record["deals"][4]["doubles"].insert(0, {"seat": 3, "cards": []})  # owner 3: no queen
    message = error_of(record)
    assert message.startswith("deal 4, doubling answer 0: seat 3 holds no card that can be doubled")


def test_missing_double_answer() -> None:
    record = example("game_0002")
    record["deals"][4]["doubles"].pop()
    assert error_of(record) == "deal 4, doubling answer 1: missing answer of seat 2"


def test_doubling_a_card_not_held() -> None:
    record = example("game_0002")
    record["deals"][4]["doubles"][1]["cards"] = ["QD"]  # QD is seat 0's
    assert error_of(record) == "deal 4, doubling answer 1: card cannot be doubled (QD)"


def test_doubling_a_card_that_cannot_be_doubled() -> None:
    record = example("game_0002")
    record["deals"][4]["doubles"][0]["cards"] = ["QD", "KH"]  # KH is no QUEENS double
    assert error_of(record) == "deal 4, doubling answer 0: card cannot be doubled (KH)"
    record["deals"][4]["doubles"][0]["cards"] = ["9C"]
    assert error_of(record) == "deal 4, doubling answer 0: card cannot be doubled (9C)"


def test_doubles_where_doubling_does_not_apply() -> None:
    record = example("game_0002")
    record["deals"][2]["doubles"] = [{"seat": 0, "cards": []}]  # DIAMONDS
    assert error_of(record) == "deal 2, doubling answer 0: doubling does not apply to this deal"


def test_hands_mismatch_with_server_seed() -> None:
    record = example("game_0004")  # listed hands + server_seed
    hands = record["deals"][3]["hands"]
    hands[0][0], hands[1][0] = hands[1][0], hands[0][0]
    assert error_of(record) == "deal 3, hands: do not match the server seed (docs/rules.md §11)"


def test_hands_missing_without_server_seed() -> None:
    record = example("game_0002")
    del record["deals"][0]["hands"]
    assert error_of(record) == "deal 0, hands: missing, and no server_seed to derive them"


def test_left_after_the_game_is_over() -> None:
    record = example("game_0002")
    record["left"] = 1
    assert error_of(record) == "left: the game is already over"


def test_too_many_deals() -> None:
    record = example("game_0003")  # COMPLEX, 8 deals, hands derived from the seed
    record["deals"].append(copy.deepcopy(record["deals"][0]))
    assert error_of(record) == "deal 8: a COMPLEX game has only 8 deals"


# -- the completed record ------------------------------------------------------


def test_completed_record_fills_defaults_owner_and_outputs() -> None:
    record = example("game_0015")  # options absent
    for deal in record["deals"]:
        del deal["owner"]
        deal["scores"] = None
    del record["totals"]
    record["ranking"] = None
    result = replay(record, model.Game, model.Options)
    expected = example("game_0015")
    assert result.record["options"] == {
        "doubling": True,
        "doubling_reveal": "SEQUENTIAL",
        "doubling_self_take": "NOBODY",
        "team_tiebreak": "LAST_TRIX",
        "partnership_trix_early_end": True,
    }
    assert [d["owner"] for d in result.record["deals"]] == [d["owner"] for d in expected["deals"]]
    assert [d["scores"] for d in result.record["deals"]] == [d["scores"] for d in expected["deals"]]
    assert result.record["totals"] == expected["totals"]
    assert result.record["ranking"] == expected["ranking"]
    assert result.record["players"] == expected["players"]
    assert result.record["fairness"] == expected["fairness"]
    assert "hands" not in result.record["deals"][0]  # same shape as the input
    assert result.differences == ["ranking: null in the record, [4, 3, 2, 1] replayed"]


def test_replay_does_not_change_its_input() -> None:
    record = example("game_0015")
    before = json.dumps(record)
    run(record)
    assert json.dumps(record) == before


def test_running_game_has_null_ranking_and_unfinished_scores() -> None:
    record = example("game_0002")
    del record["deals"][3:]
    record["deals"][2]["plays"] = record["deals"][2]["plays"][:10]
    record["deals"][2]["scores"] = None
    result = replay(record, model.Game, model.Options)
    assert result.finished is False
    assert result.record["deals"][2]["scores"] is None
    assert result.record["ranking"] is None
    expected = example("game_0002")["deals"]
    assert result.record["totals"] == [sum(expected[d]["scores"][s] for d in range(2)) for s in range(4)]


def test_running_game_waiting_for_a_contract_or_doubles() -> None:
    record = example("game_0002")
    del record["deals"][5:]
    record["deals"][4]["contract"] = None
    record["deals"][4]["doubles"] = []
    record["deals"][4]["plays"] = []
    record["deals"][4]["scores"] = None
    assert run(record)["deals"][4]["scores"] is None
    record["deals"][4]["contract"] = "QUEENS"
    record["deals"][4]["doubles"] = [{"seat": 0, "cards": ["QD"]}]  # seat 2 still to answer
    assert run(record)["deals"][4]["scores"] is None


def test_differences_are_reported() -> None:
    record = example("game_0002")
    record["deals"][0]["scores"] = [0, 0, 0, 0]
    record["totals"][1] += 5
    result = replay(record, model.Game, model.Options)
    assert result.differences == [
        "deal 0: scores [0, 0, 0, 0] in the record, [0, 0, -150, 75] replayed",
        f"totals: {record['totals']} in the record, {example('game_0002')['totals']} replayed",
    ]
