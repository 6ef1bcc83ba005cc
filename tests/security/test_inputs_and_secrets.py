"""Issue 18, finding 7 (part): display names are normalised before other players see them,
and the scoring admin token (it grants coins) has a minimum strength."""

from __future__ import annotations

import pytest
from security_support import IN_PROCESS, REFUSED, report

from support.keys import SuiteKeys
from trix.errors import InvalidArgument
from trix.gateway.validation import MAX_DISPLAY_NAME, MAX_DISPLAY_NAME_BYTES, clean_display_name
from trix.matchmaking.wishes import check_display_name
from trix.runtime.config import ConfigError
from trix.scoring.config import ScoringConfig


@pytest.mark.parametrize(
    ("raw", "shown"),
    [
        ("ann\x00", "ann"),  # NUL
        ("\x1b[31mred\x1b[0m", "[31mred[0m"),  # no escape reaches a terminal
        ("evil\u202egnp.exe", "evilgnp.exe"),  # right-to-left override
        ("zero\u200bwidth\u2066x\u2069", "zerowidthx"),  # zero-width space, isolates
        ("Cafe\u0301", "Caf\u00e9"),  # NFC
        ("  two \t\n words  ", "two words"),
        ("\u3164", ""),  # issue 42: Hangul fillers draw nothing
        ("ann\u115f\u1160\uffa0", "ann"),
        ("x" + "\u0301" * 31 + "alg\u0308o", "x\u0301\u0301\u0301alg\u0308o"),  # a stack of 31 marks: 3 kept
    ],
)
def test_display_names_are_nfc_without_control_or_format_characters(raw: str, shown: str) -> None:
    got = clean_display_name(raw)
    report(IN_PROCESS, f"the display name {raw!r}", "player", CLEANED if got == shown else f"shown as {got!r}", CLEANED)
    assert got == shown


def test_display_names_are_capped_in_characters_and_bytes_never_cutting_a_character() -> None:
    long = clean_display_name("a" * 500)
    report(
        IN_PROCESS,
        "a 500-character display name",
        "player",
        CAPPED if len(long) == MAX_DISPLAY_NAME else "kept",
        CAPPED,
    )
    assert len(long) == MAX_DISPLAY_NAME
    wide = clean_display_name("\U0001f600" * 40)  # 4 bytes each
    capped = len(wide.encode()) <= MAX_DISPLAY_NAME_BYTES
    report(IN_PROCESS, "a 160-byte display name (40 emoji)", "player", CAPPED if capped else "kept", CAPPED)
    assert capped and wide == "\U0001f600" * (MAX_DISPLAY_NAME_BYTES // 4)


@pytest.mark.parametrize(
    ("name", "reason"),
    [
        ("\u3164", "invisible letters"),
        ("ann\uffa0", "invisible letters"),
        ("Z" + "\u0301" * 31, "combining marks"),
    ],
)
def test_matchmaking_refuses_a_seat_name_with_invisible_letters_or_stacked_marks(name: str, reason: str) -> None:
    """Issue 42, finding 6: a seat's name matchmaking is given (the gateway's cleaned one)
    is refused, with a message a client can show, when it has what cleaning removes."""
    with pytest.raises(InvalidArgument, match=reason) as refused:
        check_display_name(name)
    report(IN_PROCESS, f"the seat name {name[:8]!r}...", "player", REFUSED if refused else "kept")
    assert check_display_name("Nguy\u1ec5n \u0e01\u0e34\u0e4a") == "Nguy\u1ec5n \u0e01\u0e34\u0e4a"  # accents, Thai


def test_a_weak_scoring_admin_token_stops_the_service() -> None:
    with pytest.raises(ConfigError, match="TRIX_SCORING_ADMIN_TOKEN") as refused:
        ScoringConfig.from_env({"TRIX_NATS_URL": "none", "TRIX_SCORING_ADMIN_TOKEN": "admin", **_keys()})
    report(IN_PROCESS, "start scoring with the admin token 'admin'", "operator", REFUSED if refused else "started")
    assert (
        ScoringConfig.from_env({"TRIX_NATS_URL": "none", "TRIX_SCORING_ADMIN_TOKEN": "", **_keys()}).admin_token == ""
    )


CLEANED = "cleaned"
CAPPED = "capped"


def _keys() -> dict[str, str]:
    return SuiteKeys("inputs-tests").env("scoring")
