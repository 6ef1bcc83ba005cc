"""docs/rules.md §11 fair shuffle: commitment, derived hands, client seeds."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import model
import pytest
from engine_support import EXAMPLE_FILES

from trix.fairness import (
    FairnessError,
    commitment,
    deal_from_seeds,
    join_client_seeds,
    new_server_seed,
    shuffled_deck,
    validate_client_seed,
)
from trix.records import verify

SEEDED = [p for p in EXAMPLE_FILES if json.loads(p.read_text("utf-8"))["fairness"]["server_seed"]]


def test_some_examples_carry_seed_and_listed_hands() -> None:
    listed = 0
    for path in SEEDED:
        record = json.loads(path.read_text("utf-8"))
        listed += sum(1 for deal in record["deals"] if "hands" in deal)
    assert len(SEEDED) >= 10 and listed >= 50


@pytest.mark.parametrize("path", SEEDED, ids=lambda p: p.stem)
def test_example_commitment_and_listed_hands_match_seeds(path: Path) -> None:
    record = json.loads(path.read_text("utf-8"))
    fairness = record["fairness"]
    seed = bytes.fromhex(fairness["server_seed"])
    assert commitment(seed) == fairness["commitment"]
    for n, deal in enumerate(record["deals"]):
        hands = deal_from_seeds(seed, fairness["client_seed"], n)
        if "hands" in deal:
            listed = [sorted(model.parse_card(c) for c in h) for h in deal["hands"]]
            assert [list(h) for h in hands] == listed, f"deal {n}"
    report = verify(record)
    assert report.ok, report.lines


def test_commitment_hashes_the_raw_bytes_not_the_hex() -> None:
    seed = bytes(range(32))
    assert commitment(seed) == hashlib.sha256(seed).hexdigest()
    assert commitment(seed) != hashlib.sha256(seed.hex().encode()).hexdigest()
    with pytest.raises(TypeError):
        commitment(seed.hex())  # type: ignore[arg-type]


def test_new_server_seed_is_32_random_bytes() -> None:
    a, b = new_server_seed(), new_server_seed()
    assert len(a) == 32 and len(b) == 32 and a != b


def test_deal_is_a_partition_into_sorted_hands_and_depends_on_every_input() -> None:
    seed = b"\x01" * 32
    hands = deal_from_seeds(seed, "a|b|c|d", 0)
    assert all(list(h) == sorted(h) and len(h) == 13 for h in hands)
    assert sorted(c for h in hands for c in h) == list(range(52))
    assert deal_from_seeds(seed, "a|b|c|d", 1) != hands
    assert deal_from_seeds(seed, "a|b|c|e", 0) != hands
    assert deal_from_seeds(b"\x02" * 32, "a|b|c|d", 0) != hands
    assert deal_from_seeds(seed, "a|b|c|d", 0) == hands  # deterministic


def test_seat_s_gets_positions_13s_to_13s_plus_12() -> None:
    seed = b"\x07" * 32
    deck = shuffled_deck(seed, "|||", 3)
    hands = deal_from_seeds(seed, "|||", 3)
    for s in range(4):
        assert tuple(sorted(deck[13 * s : 13 * s + 13])) == hands[s]


def test_client_seed_rules() -> None:
    assert validate_client_seed("سهرات") == "سهرات"
    assert validate_client_seed("x" * 64) == "x" * 64
    assert validate_client_seed("ع" * 32) == "ع" * 32  # 64 bytes of UTF-8
    with pytest.raises(FairnessError):
        validate_client_seed("ع" * 33)  # 66 bytes
    with pytest.raises(FairnessError):
        validate_client_seed("x" * 65)
    with pytest.raises(FairnessError):
        validate_client_seed("a|b")
    with pytest.raises(FairnessError):
        validate_client_seed("\ud800")  # not encodable as UTF-8
    assert join_client_seeds(["a", None, "", "Ω"]) == "a|||Ω"
