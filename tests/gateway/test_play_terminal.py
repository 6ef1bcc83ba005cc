"""`trix play` on a real pseudo-terminal (stdlib `pty`/`termios`, no pexpect): the
interactive mode against the whole platform of the `platform` fixture.

The arrow keys move the cursor over the legal cards and Enter plays the highlighted
one (the server accepts it: the seat's own `CardPlayed` comes back), a typed card code
still plays, the turn's countdown on the status line goes down while it waits, and
the terminal is left exactly as it was found, after `q` and after Ctrl-C.

Waits are expect-style (read until a pattern shows, with generous deadlines); no sleep
decides anything.
"""

from __future__ import annotations

import codecs
import fcntl
import os
import re
import select
import signal
import struct
import sys
import termios
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from gateway_support import Platform

RIGHT = b"\x1b[C"
ENTER = b"\r"
CTRL_C = b"\x03"
ANSI = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]")
FOOTER = re.compile(r"your turn, (\d+)s left  \|  (play|contract|double): ([^\r\n]*)")
"""The status line on this seat's turn once its choices are shown (ANSI stripped)."""
CARD = re.compile(r"[2-9TJQKA][CDHS]")
ITEM = re.compile(r"(\[| )([^\[\] ]+)(\]| )")
"""One choice on the status line: `[7H]` under the cursor, ` 7H ` otherwise."""
TURN_TIMEOUT_S = 40
"""Long turns (contract, doubling, card): on a loaded machine the timers never act for
the terminal while the test is answering from the keys."""


class Tty:
    """A program on a new pseudo-terminal, in its own session with the terminal as its
    controlling one (so Ctrl-C is a SIGINT, as in a shell). The test keeps the slave
    side open too, to read the terminal's mode after the program is gone."""

    def __init__(self, argv: list[str]) -> None:
        self.master, self.slave = os.openpty()
        fcntl.ioctl(self.slave, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 160, 0, 0))
        self.mode_before = termios.tcgetattr(self.slave)
        env = {**os.environ, "TERM": "xterm-256color", "PYTHONIOENCODING": "utf-8"}
        self.raw = b""
        self.text = ""
        self.pos = 0
        self.decoder = codecs.getincrementaldecoder("utf-8")("replace")
        self.status: int | None = None
        self.pid = os.fork()
        if self.pid == 0:  # the child: only syscalls, then exec
            try:
                # As a shell starts a foreground job: default Ctrl-C handling, even when this
                # test run itself was started in the background (which ignores SIGINT).
                signal.signal(signal.SIGINT, signal.SIG_DFL)
                os.setsid()
                fcntl.ioctl(self.slave, termios.TIOCSCTTY, 0)
                for fd in (0, 1, 2):
                    os.dup2(self.slave, fd)
                os.closerange(3, 256)
                os.execve(argv[0], argv, env)
            finally:
                os._exit(127)

    def _read(self, wait_s: float) -> None:
        ready, _, _ = select.select([self.master], [], [], wait_s)
        if ready:
            chunk = os.read(self.master, 65536)
            self.raw += chunk
            self.text += ANSI.sub("", self.decoder.decode(chunk))

    def expect(self, pattern: re.Pattern[str] | str, timeout_s: float) -> re.Match[str]:
        """Read until `pattern` shows after what was matched before; that match."""
        regex = re.compile(re.escape(pattern)) if isinstance(pattern, str) else pattern
        deadline = time.monotonic() + timeout_s
        while True:
            # Escape sequences are stripped per chunk; one cut between two reads is rare
            # and only delays a match to the next redraw.
            found = regex.search(self.text, self.pos)
            if found:
                self.pos = found.end()
                return found
            left = deadline - time.monotonic()
            if left <= 0 or self.exited():
                tail = self.text[self.pos :][-3000:]
                raise AssertionError(f"{regex.pattern!r} not seen in {timeout_s}s; output since: {tail!r}")
            self._read(min(left, 0.5))

    def send(self, data: bytes) -> None:
        os.write(self.master, data)

    def exited(self) -> bool:
        if self.status is None:
            pid, status = os.waitpid(self.pid, os.WNOHANG)
            if pid == self.pid:
                self.status = os.waitstatus_to_exitcode(status)
        return self.status is not None

    def wait(self, timeout_s: float) -> int:
        deadline = time.monotonic() + timeout_s
        while not self.exited():
            assert time.monotonic() < deadline, f"still running after {timeout_s}s: {self.text[-2000:]!r}"
            self._read(0.2)  # keeps the pty drained so the program never blocks writing
        assert self.status is not None
        return self.status

    def lflag(self) -> int:
        return int(termios.tcgetattr(self.slave)[3])

    def close(self) -> None:
        if not self.exited():
            os.kill(self.pid, signal.SIGKILL)
            os.waitpid(self.pid, 0)
        os.close(self.master)
        os.close(self.slave)


@pytest.fixture
def play(platform: Platform, tmp_path: Path) -> Iterator[Tty]:
    argv = [sys.executable, "-m", "trix.cli", "play", "--server", platform.target, "--lang", "ar"]
    for timer in ("--card-timeout", "--contract-timeout", "--double-timeout"):
        argv += [timer, str(TURN_TIMEOUT_S)]
    argv += ["--device-file", str(tmp_path / "device"), "--name", "pty"]
    tty = Tty(argv)
    try:
        yield tty
    finally:
        tty.close()


def seated(tty: Tty) -> int:
    seat = int(tty.expect(re.compile(r"you are seat (\d)"), 60)[1])
    # The keys mode is on from before the search for a table.
    assert not tty.lflag() & (termios.ICANON | termios.ECHO), "the terminal is not in raw mode"
    return seat


def choices(status: str) -> tuple[list[str], int]:
    """The choices on a status line and the index under the cursor."""
    items = ITEM.findall(status.split("  (")[0])
    cursor = [i for i, (opening, _, _) in enumerate(items) if opening == "["]
    assert len(cursor) == 1, status
    return [label for _, label, _ in items], cursor[0]


def card_turn(tty: Tty) -> tuple[int, list[str]]:
    """Answer contract and doubling turns from the keys until this seat must play a card;
    that turn's countdown and legal cards."""
    while True:
        found = tty.expect(FOOTER, 60)
        if found[2] == "play":
            cards, cursor = choices(found[3])
            assert cursor == 0 and cards, found[0]
            return int(found[1]), cards
        if found[2] == "contract":
            tty.send(RIGHT + ENTER)
            tty.expect(re.compile(r"\|  sent "), 30)
            continue
        doublable = CARD.findall(found[3].split("  (")[0])
        if doublable:  # space marks the card under the cursor, Enter answers
            tty.send(b" " + ENTER)
            tty.expect(f"|  sent double {doublable[0]}", 30)
        else:
            tty.send(ENTER)
            tty.expect("|  sent double none", 30)


def assert_restored(tty: Tty) -> None:
    assert termios.tcgetattr(tty.slave) == tty.mode_before
    assert tty.lflag() & termios.ICANON and tty.lflag() & termios.ECHO
    assert tty.raw.rfind(b"\x1b[?25h") > tty.raw.rfind(b"\x1b[?25l"), "the cursor was left hidden"


@pytest.mark.timeout(180)
def test_arrow_keys_play_the_highlighted_card_with_a_live_countdown(play: Tty) -> None:
    seat = seated(play)
    left, cards = card_turn(play)

    # The countdown of this turn goes down on the status line while nobody acts.
    later = play.expect(re.compile(rf"your turn, (?!{left}s)(\d+)s left  \|  play: "), 20)
    assert 0 < int(later[1]) < left <= TURN_TIMEOUT_S

    # → moves the cursor to the next legal card, Enter plays it, the server accepts it.
    target = cards[1 % len(cards)]
    play.send(RIGHT)
    if len(cards) > 1:
        play.expect(re.compile(rf"\|  play: [^\r\n]*\[{target}\]"), 20)
    play.send(ENTER)
    play.expect(f"seat {seat} played {target}", 30)

    # A typed card code (lower case) and Enter still play.
    _, cards = card_turn(play)
    play.send(cards[-1].lower().encode() + ENTER)
    play.expect(f"seat {seat} played {cards[-1]}", 30)

    # q then Enter quits: exit 0, the terminal as it was.
    play.send(b"q" + ENTER)
    assert play.wait(30) == 0, play.text[-2000:]
    assert_restored(play)


@pytest.mark.timeout(120)
def test_ctrl_c_restores_the_terminal(play: Tty) -> None:
    seated(play)
    play.expect(re.compile(r"(your turn|to act), \d+s left"), 60)  # the status line is live
    play.send(CTRL_C)
    assert play.wait(30) == 130, play.text[-2000:]
    assert_restored(play)
