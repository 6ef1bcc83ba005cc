"""`trix play` started again after it was killed (issue 39), on a pseudo-terminal (pexpect)
against the whole platform (`trix up`):

- killed on its own turn after a deal was scored, the next start resumes the seat with the
  game's scores (not `score 0` for every seat) and its turn on the status line, and a key
  plays its card (the timers do not play for it);
- killed while still queued, the next start queues it again (no `ALREADY_EXISTS ... already
  queued` and an idle terminal) and it is matched;
- killed while queued and matched while it was gone, the next start resumes that game (no
  `FAILED_PRECONDITION ... already seated`).

The queue tests run on a `trix up` of their own whose matchmaking waits BOT_FILL_S before
filling a table with bots, so that a player stays queued long enough to be killed there.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import queue
import re
import signal
import struct
import subprocess
import sys
import termios
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from gateway_support import Platform
from pexpect import fdpexpect

TRIX = sys.executable
CARD = re.compile(r"\b([2-9TJQKA][CDHS])\*")
CONTRACT = re.compile(r"(\d)=")
TABLE = re.compile(r"matched: table (\S+),")
SCORED = re.compile(r"deal scored \([^)]*\): \[[-\d, ]*\] totals \[([-\d, ]*)\]")
SEAT_SCORE = re.compile(r"seat (\d) [^\r\n]*: \d+ cards, score (-?\d+)")
ANSI = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]")
PROMPTS = ["your card.*:", "choose a contract.*:", "double\\?.*:"]
LONG_TIMERS = ["--card-timeout", "40", "--contract-timeout", "40", "--double-timeout", "40"]
"""Turns long enough that on a loaded machine the timers never act while the test answers."""
BOT_FILL_S = 8
GATEWAY = re.compile(r"trix up: gateway\s+grpc=127\.0\.0\.1:(\d+)")


class Play(fdpexpect.fdspawn):
    """`trix play` on a new pseudo-terminal, read with pexpect. Started by subprocess (vfork):
    no Python runs between fork and exec, so no gRPC fork handler of this test's process (which
    may be running gRPC) can kill the child there, as pexpect's own fork could."""

    def __init__(self, target: str, tmp_path: Path, name: str, *, plain: bool = True) -> None:
        argv = [TRIX, "-m", "trix.cli", "play", "--server", target, "--lang", "en", *LONG_TIMERS]
        argv += ["--device-file", str(tmp_path / "device"), "--name", name] + (["--plain"] if plain else [])
        master, slave = os.openpty()
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 50, 200, 0, 0))
        env = {**os.environ, "TERM": "xterm-256color", "PYTHONIOENCODING": "utf-8"}
        self.proc = subprocess.Popen(argv, stdin=slave, stdout=slave, stderr=slave, env=env, start_new_session=True)
        os.close(slave)
        super().__init__(master, encoding="utf-8", timeout=60)

    def stop(self) -> None:
        """SIGKILL: no goodbye to the gateway, nothing cleaned up."""
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait(10)
        with contextlib.suppress(OSError):
            self.close()


def _answer(p: Play, which: int) -> None:
    """Answer the plain mode's prompt `PROMPTS[which]`: a legal card, the first contract, no double."""
    if which == 0:
        cards = CARD.findall(p.before or "")
        p.sendline(cards[-1] if cards else "")
    elif which == 1:
        p.sendline(CONTRACT.findall(p.after or "")[0])
    else:
        p.sendline("-")


@pytest.mark.timeout(300)
def test_a_restart_on_its_turn_resumes_with_the_games_scores_and_its_turn(platform: Platform, tmp_path: Path) -> None:
    first = Play(platform.target, tmp_path, "scores")
    try:
        first.expect(TABLE)
        table_id = first.match.group(1)
        totals: list[int] = []
        while True:  # play until a deal is scored (some score not 0), then stop on our next card turn
            i = first.expect([*PROMPTS, SCORED])
            if i == 3:
                totals = [int(t) for t in first.match.group(1).split(",")]
            elif i == 0 and any(totals):
                break
            else:
                _answer(first, i)
    finally:
        first.stop()

    again = Play(platform.target, tmp_path, "scores", plain=False)
    try:
        again.expect(f"resuming your game at table {re.escape(table_id)} \\(seat (\\d)\\)")
        seat = int(again.match.group(1))
        again.expect("your hand:")  # the table as the seat's view shows it
        shown = ANSI.sub("", again.before or "")
        assert "FAILED_PRECONDITION" not in shown and "ALREADY_EXISTS" not in shown, shown
        scores = {int(s): int(v) for s, v in SEAT_SCORE.findall(shown)}
        assert scores == dict(enumerate(totals)), shown  # the game's totals, not 0 for every seat
        again.expect("your turn, \\d+s left")  # the status line: its turn, counting down
        again.expect("play: ")  # its legal cards under the cursor: Enter plays the highlighted one
        again.send("\r")
        again.expect(f"seat {seat} played [2-9TJQKA][CDHS]")
        assert "timer" not in ANSI.sub("", again.before or "")
    finally:
        again.stop()


@pytest.fixture(scope="module")
def slow_fill(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """`trix up` as a process of its own whose matchmaking fills a table with bots only after
    BOT_FILL_S; its gateway's address. (Its children are not forked by this test's process, which
    may be running gRPC: gRPC's fork handlers can kill a child forked between fork and exec.)"""
    state = tmp_path_factory.mktemp("slow-fill")
    env = {k: v for k, v in os.environ.items() if not k.startswith("TRIX_")}
    env["TRIX_MATCHMAKING_BOT_FILL_S"] = str(BOT_FILL_S)
    argv = [TRIX, "-m", "trix.cli", "up", "--state-dir", str(state), "--fresh", "--grace", "8"]
    up = subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    lines: queue.Queue[str] = queue.Queue()

    def read() -> None:  # drained to the end: a full pipe would stall `trix up`
        assert up.stdout is not None
        for line in up.stdout:
            lines.put(line)

    threading.Thread(target=read, daemon=True).start()
    try:
        seen: list[str] = []
        deadline = time.monotonic() + 180
        while not any(re.search(r"\bready\b", line) for line in seen):
            assert time.monotonic() < deadline and up.poll() is None, "trix up not ready:\n" + "".join(seen)
            with contextlib.suppress(queue.Empty):
                seen.append(lines.get(timeout=0.5))
        gateway = next(m for m in map(GATEWAY.search, seen) if m)
        yield f"127.0.0.1:{gateway.group(1)}"
    finally:
        up.send_signal(signal.SIGTERM)
        try:
            up.wait(90)
        finally:
            if up.poll() is None:
                up.kill()
                up.wait(10)


def _until_seated(target: str, device: Path) -> str:
    """Matchmaking's refusal once the player's ticket was matched (`until_seated.py`)."""
    argv = [TRIX, str(Path(__file__).with_name("until_seated.py")), target, str(device), str(BOT_FILL_S + 60)]
    return subprocess.run(argv, capture_output=True, text=True, timeout=BOT_FILL_S + 90, check=True).stdout


def _plays_on(p: Play) -> None:
    """The game is live for this player: a prompt of his, or a card played at his table."""
    p.expect([*PROMPTS, r"seat \d played"])


@pytest.mark.timeout(200)
def test_a_restart_while_queued_queues_again_and_is_matched(slow_fill: str, tmp_path: Path) -> None:
    first = Play(slow_fill, tmp_path, "queued")
    try:
        first.expect(r"queued \(ticket (\S+)\)")
        old_ticket = first.match.group(1)
    finally:
        first.stop()

    again = Play(slow_fill, tmp_path, "queued")
    try:
        again.expect(r"queued \(ticket (\S+)\)")
        assert again.match.group(1) != old_ticket  # the ticket nobody followed was given up
        assert "ALREADY_EXISTS" not in (again.before or "")
        again.expect(TABLE, timeout=BOT_FILL_S + 60)
        _plays_on(again)
        assert "! " not in (again.before or "")
    finally:
        again.stop()


@pytest.mark.timeout(200)
def test_a_restart_after_the_queued_ticket_was_matched_resumes_that_game(slow_fill: str, tmp_path: Path) -> None:
    first = Play(slow_fill, tmp_path, "matched")
    try:
        first.expect(r"queued \(ticket (\S+)\)")
    finally:
        first.stop()
    # Nobody follows the ticket now; the bots fill its table after BOT_FILL_S and the game
    # starts without him (the table waits for his turns until their timers act).
    seated = _until_seated(slow_fill, tmp_path / "device")
    assert seated.startswith("FAILED_PRECONDITION") and "already seated at table" in seated, seated

    again = Play(slow_fill, tmp_path, "matched")
    try:
        i = again.expect([r"resuming your game at table \S+", "FAILED_PRECONDITION", "ALREADY_EXISTS"])
        assert i == 0, again.before
        _plays_on(again)
    finally:
        again.stop()
