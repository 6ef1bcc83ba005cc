"""What `trix play` shows of a seat, as text: the hand sorted by suit, the trick or the
TRIX layout, doubled cards, the last trick, scores, whose turn with a countdown, contract
and suit names in Arabic or English, card codes as a player types them, and after the game
the verify view (تحقق: commitment, revealed seed, every deal).
"""

from __future__ import annotations

import unicodedata
from collections.abc import Sequence

from trix.client import SeatState
from trix.rules import SUITS, card_of_text, card_text
from trix.v1 import common_pb2

SUIT_NAMES = {
    "en": {"C": "Clubs", "D": "Diamonds", "H": "Hearts", "S": "Spades"},
    "ar": {"C": "سباتي", "D": "ديناري", "H": "كبة", "S": "بستوني"},
}
CONTRACT_NAMES = {
    "en": {1: "King", 2: "Queens", 3: "Diamonds", 4: "Tricks", 5: "Trix", 6: "Complex"},
    "ar": {1: "ملك", 2: "بنات", 3: "ديناري", 4: "لطوش", 5: "تركس", 6: "كمبلكس"},
}
RLM = "\u200f"
"""Right-to-left mark: Arabic words keep their order inside mixed lines."""


def parse_card(text: str) -> int | None:
    """A card code as a player types it: any case, `10` for `T` (docs/rules.md §1)."""
    return card_of_text(text.strip().upper().replace("10", "T"))


def ar(text: str, lang: str) -> str:
    return f"{RLM}{text}{RLM}" if lang == "ar" else text


def seat_names(seats: Sequence[common_pb2.Seat]) -> list[str]:
    """What the terminal shows for each seat: the player's display name without any
    control or format character a terminal would act on (an escape, a bidi override), else
    his id; "bot" for a bot."""
    out = ["", "", "", ""]
    for s in seats:
        if 0 <= s.index < 4:
            name = "".join(ch for ch in s.display_name if unicodedata.category(ch)[0] != "C").strip()
            out[s.index] = name or s.player_id or ("bot" if s.bot else "")
    return out


def render(state: SeatState, names: list[str], lang: str, now: float, countdown: bool = True) -> str:
    """The table as plain text (`countdown=False`: without the turn line, which the
    interactive mode keeps live on its status line instead)."""
    v = state.view
    if v is None:
        return "waiting for the table..."
    cn = CONTRACT_NAMES[lang]
    lines = []
    contract = ar(cn.get(v.contract, "-"), lang) if v.contract else "-"
    lines.append(f"deal {v.deal_index + 1}  kingdom {v.kingdom + 1}  contract: {contract}")
    for s in range(4):
        mark = ">" if state.turn is not None and s in state.turn.seats else " "
        me = " (you)" if s == state.seat else ""
        size = v.hand_sizes[s] if len(v.hand_sizes) > s else 0
        total = state.totals[s] if len(state.totals) > s else 0
        lines.append(f" {mark} seat {s} {names[s] if s < len(names) else ''}{me}: {size} cards, score {total}")
    if v.contract == common_pb2.CONTRACT_TRIX:
        lines.append("layout: " + (" ".join(card_text(c.id) for c in v.layout) or "-"))
    else:
        lines.append("trick: " + (" ".join(card_text(c.id) for c in v.trick) or "-"))
    if state.last_trick:
        lines.append("last trick: " + " ".join(state.last_trick))
    doubled = [f"seat {d.seat}: {' '.join(card_text(c.id) for c in d.cards)}" for d in v.doubles if d.cards]
    if doubled:
        lines.append("doubled: " + "; ".join(doubled))
    by_suit: dict[str, list[int]] = {}
    for c in sorted(v.hand, key=lambda c: c.id):
        by_suit.setdefault(SUITS[c.id // 13], []).append(c.id)
    lines.append("your hand:")
    legal = {c.id for c in v.legal_cards}
    for suit in SUITS:
        cards = by_suit.get(suit, [])
        if cards:
            shown = " ".join(card_text(c) + ("*" if c in legal else "") for c in cards)
            label = f"{SUIT_NAMES['en'][suit]} {ar(SUIT_NAMES['ar'][suit], 'ar')}"
            lines.append(f"  {label:<22} {shown}")
    if countdown and state.turn is not None and state.turn.HasField("deadline"):
        left = max(0.0, state.turn.deadline.seconds + state.turn.deadline.nanos / 1e9 - now)
        who = "your turn" if state.my_turn() else f"seat {', '.join(map(str, state.turn.seats))} to act"
        lines.append(f"{who}: {left:.0f}s left")
    return "\n".join(lines)


def verify_view(record_json: str, lang: str) -> str:
    """تحقق: the commitment, the revealed seed and the check of every deal (docs/rules.md §11)."""
    from trix import engine
    from trix.records import load_record
    from trix.verification import verify_record

    record = load_record(record_json)
    report = verify_record(record, engine.Game, engine.Options)  # the whole record, as `trix verify`
    title = ar("تحقق", "ar") + " / verify"
    fairness = record.get("fairness") or {}
    lines = [title, f"commitment:  {fairness.get('commitment')}", f"server seed: {fairness.get('server_seed')}"]
    lines.append(f"client seed: {fairness.get('client_seed')!r}")
    lines += report.lines
    lines.append("verified: yes" if report.ok else "verified: NO")
    return "\n".join(lines)
