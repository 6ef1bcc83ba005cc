"""Vectors of the fair shuffle (docs/rules.md §11) for the browser's Verify page (issue 20).

`python tests/web/fairness_vectors.py` writes web/test/fairness-vectors.json from
`trix.fairness`; tests/web/test_fairness_vectors.py regenerates them and fails when the
committed file differs, and web/test/fairness.test.ts checks the TypeScript code against
the same file: the two sides cannot drift apart.
"""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path
from typing import Any

from trix.fairness import commitment, deal_from_seeds, join_client_seeds, shuffled_deck
from trix.rules import card_text

VECTORS = Path(__file__).resolve().parents[2] / "web" / "test" / "fairness-vectors.json"


def _seed(label: str) -> bytes:
    """A fixed 32-byte server seed (no randomness: the file must be reproducible)."""
    return hashlib.sha256(label.encode()).digest()


CASES: list[tuple[str, list[str | None], int]] = [
    ("zero", [None, None, None, None], 0),
    ("ascii", ["alice", "bob", "", "d"], 3),
    ("arabic", ["", "سهرات", "ok", "Ω"], 19),
    ("long", ["x" * 64, "y" * 64, "z" * 64, "é" * 32], 7),
]


def build() -> dict[str, Any]:
    shuffles = []
    for label, seats, n in CASES:
        server_seed = _seed(label)
        client_seed = join_client_seeds(seats)
        shuffles.append(
            {
                "server_seed": server_seed.hex(),
                "client_seed": client_seed,
                "n": n,
                "commitment": commitment(server_seed),
                "deck": shuffled_deck(server_seed, client_seed, n),
                "hands": [list(h) for h in deal_from_seeds(server_seed, client_seed, n)],
            }
        )
    # A §12 record of two deals: the first lists its hands, the second omits them (recomputed
    # from §11); each play is a card of its seat's hand. Enough for the Verify page's check.
    server_seed = _seed("record")
    client_seed = join_client_seeds(["a", "", "سهرات", "d"])
    deals = []
    for n in range(2):
        hands = deal_from_seeds(server_seed, client_seed, n)
        deal: dict[str, Any] = {
            "owner": 0,
            "contract": "KING",
            "doubles": [],
            "plays": [{"seat": s, "card": card_text(hands[s][0])} for s in range(4)],
            "scores": None,
        }
        if n == 0:
            deal["hands"] = [[card_text(c) for c in reversed(h)] for h in hands]
        deals.append(deal)
    record = {
        "format": "trix-game/1",
        "variant": "TRIX",
        "players": ["p1", "p2", "p3", "p4"],
        "fairness": {
            "commitment": commitment(server_seed),
            "server_seed": server_seed.hex(),
            "client_seed": client_seed,
        },
        "deals": deals,
        "totals": None,
        "ranking": None,
    }
    return {"generated_by": "tests/web/fairness_vectors.py", "shuffles": shuffles, "record": record}


def render() -> str:
    return json.dumps(build(), ensure_ascii=False, indent=1) + "\n"


if __name__ == "__main__":
    VECTORS.write_text(render(), encoding="utf-8")
    sys.stdout.write(f"wrote {VECTORS}\n")
