"""`trix play` on a terminal (`KeyTerminal`): the same UI with keys: the terminal in
cbreak-style raw mode (restored on every way out), ←/→ over the legal cards or contracts,
space to mark a card to double, Enter, typed codes still work, and a live countdown of the
turn on the status line.
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
from typing import Any

from trix.client import GatewayClient, new_action
from trix.play_terminal import Terminal
from trix.play_view import CONTRACT_NAMES, ar
from trix.rules import DOUBLING_CARDS_BY_CONTRACT, card_text, engine_enum
from trix.v1 import common_pb2, gateway_pb2

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
            if m.snapshot.sequence >= self.state.sequence:
                # The view's decision is the one due now (a resume: no TurnStarted comes for it).
                self.turn_live = m.snapshot.HasField("turn") and not m.snapshot.finished
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
