"""Altered records (issue 39): a finished game's record changed four ways a cheat might try,
each of which `trix verify` and the web page's Verify must refuse with its reason.

The base is the golden record `game_0008` (a whole TRIX game, server seed revealed). The
four alterations are kept as files in `tests/golden/altered/` (Vitest and the browser tests
read them there); `test_altered_records_are_the_generated_ones` checks the files are what
`altered_records()` makes, and `python -m support.altered` (from tests/) rewrites them.

- `cut`: the record cut to half its deals (its totals and ranking left as they were);
- `edited`: the totals, the ranking and one deal's scores changed;
- `swapped`: two of a seat's cards swapped between two tricks of one deal, an order the
  rules refuse (the first such swap, found by replaying with the engine passed in);
- `foreign`: a play of a card the seat never held (another seat's card).
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from support.golden import GOLDEN_DIR, golden
from trix.fairness import deal_from_seeds
from trix.records import RecordError, replay
from trix.rules import card_of_text, card_text

ALTERED_DIR = GOLDEN_DIR / "altered"
BASE = "game_0008"
KINDS = ("cut", "edited", "swapped", "foreign")
TRICK_CONTRACTS = ("KING", "QUEENS", "DIAMONDS", "TRICKS", "COMPLEX")


def base_record() -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads(golden(BASE).read_text("utf-8"))
    return loaded


def cut(record: dict[str, Any]) -> dict[str, Any]:
    out = copy.deepcopy(record)
    out["deals"] = out["deals"][: len(out["deals"]) // 2]
    return out


def edited(record: dict[str, Any]) -> dict[str, Any]:
    out = copy.deepcopy(record)
    totals = out["totals"]
    best = min(range(4), key=lambda s: out["ranking"][s])
    worst = max(range(4), key=lambda s: out["ranking"][s])
    totals[best], totals[worst] = totals[worst], totals[best]
    out["ranking"][best], out["ranking"][worst] = out["ranking"][worst], out["ranking"][best]
    scores = out["deals"][3]["scores"]
    scores[best], scores[worst] = scores[worst] + 50, scores[best] - 50
    return out


def swapped(record: dict[str, Any], game_cls: Callable[..., Any], options_cls: Callable[..., Any]) -> dict[str, Any]:
    """The first swap (deal, seat, then trick order) of two of one seat's cards between two
    tricks that the rules refuse when replayed."""
    for d, deal in enumerate(record["deals"]):
        if deal["contract"] not in TRICK_CONTRACTS:
            continue
        plays = deal["plays"]
        for seat in range(4):
            mine = [i for i, p in enumerate(plays) if p["seat"] == seat]
            for a, i in enumerate(mine):
                for j in mine[a + 1 :]:
                    if i // 4 == j // 4:
                        continue
                    out = copy.deepcopy(record)
                    out_plays = out["deals"][d]["plays"]
                    out_plays[i]["card"], out_plays[j]["card"] = plays[j]["card"], plays[i]["card"]
                    try:
                        replay(out, game_cls, options_cls)
                    except RecordError:
                        return out
    raise AssertionError("no swap of two cards of one seat makes an illegal order")


def foreign(record: dict[str, Any]) -> dict[str, Any]:
    """Deal 1's first play replaced by a card the next seat holds."""
    out = copy.deepcopy(record)
    fairness = out["fairness"]
    hands = deal_from_seeds(bytes.fromhex(fairness["server_seed"]), fairness["client_seed"], 1)
    play = out["deals"][1]["plays"][0]
    other = (play["seat"] + 1) % 4
    held = [card_text(c) for c in hands[other]]
    assert card_of_text(play["card"]) in hands[play["seat"]]
    play["card"] = held[0]
    return out


def altered_records(game_cls: Callable[..., Any], options_cls: Callable[..., Any]) -> dict[str, dict[str, Any]]:
    base = base_record()
    return {
        "cut": cut(base),
        "edited": edited(base),
        "swapped": swapped(base, game_cls, options_cls),
        "foreign": foreign(base),
    }


def dump(record: dict[str, Any]) -> str:
    return json.dumps(record, ensure_ascii=False, indent=1) + "\n"


def altered_path(kind: str) -> Path:
    return ALTERED_DIR / f"{BASE}_{kind}.json"


def main() -> None:
    from trix import engine

    ALTERED_DIR.mkdir(exist_ok=True)
    for kind, record in altered_records(engine.Game, engine.Options).items():
        altered_path(kind).write_text(dump(record), encoding="utf-8")


if __name__ == "__main__":
    main()
