"""The load test's chat (`--chat-every SECONDS`, issue 44): each table's bot at seat 0 sends
one line to its table's players' channel every SECONDS through the gateway (its Session
stream, `SessionRequest.social`), and every bot counts the lines it receives
(`SessionResponse.social_event`), from the start of the measured window (the settle before
it is the silent baseline).

Owns `TableChat` (one per bot: its timer and its counts into the worker's `Stats`) and
`chat_summary` (the run's figures: lines sent, delivered and refused, and the chat's own
CPU cost per line, `chat_ms_per_line`: the social service's CPU milliseconds per second in
the measured window less in the silent settle, per line sent, as `window_cpu` gives platform
ms per action; and every process's, `ms_per_line_by_process`, the settle's CPU per action
scaled to the window's actions taken off first; `budget_ms_per_line_within_5pct`, what a
line may cost for the issue's 5 %). The issue's criterion itself is still the difference in
platform ms per action between a run with chat and one without, back to back.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Callable
from typing import Any

from trix.loadtest.report import BOT_PROCESS_PREFIX
from trix.loadtest.worker import Stats
from trix.v1 import gateway_pb2, social_pb2

CHAT_REQUEST_PREFIX = "chat-"
"""The request id of a chat line: its answer and its refusal are the chat's, not an action's."""
LINES = (
    "salam, ready?",
    "nice hand",
    "yalla, your turn",
    "well played everyone",
    "that was close",
    "good luck all",
    "ha, unlucky",
    "one more game after this?",
)
"""Free text, ordinary table talk; each line differs from the one before (a repeat is dropped)."""
PHRASES = ("greeting", "well_played", "hurry_up", "thank_you", "good_game", "good_luck", "oops", "bye")
"""Quick phrases, for a partnership variant (free text is refused there during a deal)."""
SOCIAL_PROCESS = "social"
WITHIN = 0.05
"""Issue 44's load criterion: with chat, platform ms per action within 5 % of the run without."""


class TableChat:
    """One bot's chat: the sender's timer (seat 0 only) and the counts of every bot."""

    def __init__(
        self, every_s: float, stats: Callable[[], Stats], rng: random.Random, *, phrases: bool, chatting: Any = None
    ) -> None:
        self.every_s = every_s
        self.chatting = chatting
        """Lines go out once this Event is set (the measured window; None: from the start)."""
        self.stats = stats
        """The worker's current Stats (replaced by `Stats.take` each tick: read it each time)."""
        self.rng = rng
        self.phrases = phrases
        self.timer: asyncio.TimerHandle | None = None
        self.sent = 0

    def start(self, seat: int, table_id: str, send: Callable[[gateway_pb2.SessionRequest], None]) -> None:
        """The bot is seated: seat 0 sends a line every `every_s` (the first at a random point
        of the first period, so the tables do not all talk at once)."""
        if self.every_s <= 0 or seat != 0 or self.timer is not None:
            return
        loop = asyncio.get_running_loop()
        self.timer = loop.call_later(self.rng.uniform(0.0, self.every_s), self._send, loop, table_id, send)

    def _send(
        self, loop: asyncio.AbstractEventLoop, table_id: str, send: Callable[[gateway_pb2.SessionRequest], None]
    ) -> None:
        self.timer = loop.call_later(self.every_s, self._send, loop, table_id, send)
        if self.chatting is not None and not self.chatting.is_set():
            return  # not yet: the settle before the window is the chat's baseline
        self.sent += 1
        line = social_pb2.SendChatRequest(
            channel=social_pb2.ChatChannel(kind=social_pb2.CHAT_CHANNEL_KIND_TABLE_PLAYERS, id=table_id)
        )
        if self.phrases:
            line.phrase_id = PHRASES[self.sent % len(PHRASES)]
        else:
            line.text = LINES[self.sent % len(LINES)]
        request = gateway_pb2.SessionRequest(request_id=f"{CHAT_REQUEST_PREFIX}{self.sent}")
        request.social.send_chat.CopyFrom(line)
        send(request)

    def stop(self) -> None:
        if self.timer is not None:
            self.timer.cancel()
            self.timer = None

    def on_message(self, kind: str, message: gateway_pb2.SessionResponse) -> bool:
        """Counts a chat message of the session; True when `message` was one (answer, line
        received, refusal of a line)."""
        stats = self.stats()
        if kind == "social_event":
            if message.social_event.HasField("chat_line"):
                stats.chat_delivered += 1
            return True
        if kind == "social":
            if message.social.send_chat.delivered:
                stats.chat_sent += 1
            else:
                stats.chat_refused["NOT_DELIVERED"] += 1
            return True
        if kind == "error" and message.request_id.startswith(CHAT_REQUEST_PREFIX):
            stats.chat_refused[message.error.code or "UNKNOWN"] += 1
            return True
        return False


def chat_summary(
    totals: dict[str, Any],
    window_sent: int,
    window_s: float,
    cpu: dict[str, Any],
    settle: dict[str, Any],
    window_actions_per_s: float = 0.0,
) -> dict[str, Any]:
    """The run's chat figures: lines sent (accepted and delivered by the social service),
    received by the bots (each line reaches the table's four bots), refused by code, and the
    chat's own CPU per line: the social service's CPU ms per second in the measured window
    (the tables talk) less in the settle before it (the same tables play, silent), per line
    sent in the window; `social_ms_per_line` is its whole CPU per line, its reading of every
    table's public events included. `ms_per_line_by_process`: each process kind's CPU ms per
    second in the window less its settle's per action times the window's actions per second,
    per line (the gateway's and nats-server's share too; CPU is sampled in whole percents a
    second, so a process's figure is good to ~0.1 ms at ~100 lines/s), and their sum over
    the platform's processes, `platform_ms_per_line`. `budget_ms_per_line_within_5pct`: what
    a line may cost the platform for the run's platform ms per action to stay within 5 % of
    the silent settle's (issue 44's load criterion): 5 % of the settle's platform ms per
    action times the window's actions per line. Both rest on the settle as the silent
    baseline, which on a quiet box can run several % above a whole silent run (the ramp's
    tail: matchmaking, the tables' first deals): the issue's figure is the back-to-back pair."""
    per_s = window_sent / window_s if window_s > 0 else 0.0
    talking, silent = cpu.get("ms_per_s", {}), settle.get("ms_per_s", {})
    social_ms_per_s = float(talking.get(SOCIAL_PROCESS, 0.0))
    silent_ms_per_s = float(silent.get(SOCIAL_PROCESS, 0.0))
    settle_actions = float(settle.get("actions_per_s", 0.0))
    scale = window_actions_per_s / settle_actions if settle_actions > 0 else 1.0
    by_process = {
        kind: round((float(ms) - float(silent.get(kind, 0.0)) * scale) / per_s, 3)
        for kind, ms in talking.items()
        if per_s > 0
    }
    silent_platform = sum(float(ms) for kind, ms in silent.items() if kind != BOT_PROCESS_PREFIX)
    silent_ms_per_action = silent_platform / settle_actions if settle_actions > 0 else 0.0
    budget = WITHIN * silent_ms_per_action * window_actions_per_s / per_s if per_s > 0 else 0.0
    return {
        "ms_per_line_by_process": by_process,
        "platform_ms_per_action_silent": round(silent_ms_per_action, 3),
        "budget_ms_per_line_within_5pct": round(budget, 3),
        "platform_ms_per_line": round(sum(v for k, v in by_process.items() if k != BOT_PROCESS_PREFIX), 3),
        "chat_ms_per_line": round(max(0.0, social_ms_per_s - silent_ms_per_s) / per_s, 3) if per_s > 0 else 0.0,
        "social_ms_per_s_silent": silent_ms_per_s,
        "lines_sent": totals.get("sent", 0),
        "lines_delivered": totals.get("delivered", 0),
        "lines_refused": dict(totals.get("refused", {})),
        "window_lines_per_s": round(per_s, 2),
        "social_ms_per_line": round(social_ms_per_s / per_s, 3) if per_s > 0 else 0.0,
        "social_ms_per_s": social_ms_per_s,
    }
