"""`trix play` resumes a game in progress (issue 20): a player who stops after one deal and
runs `trix play` again is put back at his seat (the seat's view, then the events after it)
instead of being refused with FAILED_PRECONDITION "already seated" and locked out."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pexpect
import pytest
from gateway_support import Platform

TRIX = [sys.executable, "-m", "trix.cli"]
CARD = re.compile(r"\b([2-9TJQKA][CDHS])\*")
CONTRACT = re.compile(r"(\d)=")
TABLE = re.compile(r"matched: table (\S+),")


@pytest.mark.timeout(200)
def test_trix_play_again_resumes_the_seat_of_the_game_in_progress(platform: Platform, tmp_path: Path) -> None:
    argv = [*TRIX[1:], "play", "--server", platform.target, "--lang", "en", "--deals", "1", "--plain"]
    argv += ["--device-file", str(tmp_path / "device"), "--name", "again"]
    first = pexpect.spawn(TRIX[0], argv, encoding="utf-8", timeout=60, dimensions=(50, 160))
    try:
        first.expect(TABLE)
        table_id = first.match.group(1)
        while True:
            i = first.expect(["your card.*:", "choose a contract.*:", "double\\?.*:", "stopping after", pexpect.EOF])
            if i == 0:
                first.sendline(CARD.findall(first.before)[-1] if CARD.findall(first.before) else "")
            elif i == 1:
                first.sendline(CONTRACT.findall(first.after)[0])
            elif i == 2:
                first.sendline("-")
            else:
                break
        first.expect(pexpect.EOF)
    finally:
        first.close(force=True)
    assert (tmp_path / "current_table").read_text().strip() == table_id

    again = pexpect.spawn(TRIX[0], argv, encoding="utf-8", timeout=60, dimensions=(50, 160))
    try:
        again.expect([f"resuming your game at table {re.escape(table_id)}", "FAILED_PRECONDITION"])
        assert "FAILED_PRECONDITION" not in (again.after or ""), again.before
        # The seat is live again: the table goes on with this player's decisions.
        again.expect(["your card.*:", "choose a contract.*:", "double\\?.*:", "deal scored"])
    finally:
        again.close(force=True)
