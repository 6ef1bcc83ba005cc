"""What the gateway accepts from a client: ids, device secrets, client seeds
(docs/rules.md §11), and display names cleaned of what must not reach other players'
screens. Raises `trix.errors.InvalidArgument` with a message a client can show."""

from __future__ import annotations

import unicodedata

from trix.errors import InvalidArgument
from trix.fairness import CLIENT_SEED_MAX_BYTES
from trix.rules import PLAYER_ID, strip_display_name

ID = PLAYER_ID  # trix.rules: 1-128 of A-Z a-z 0-9 _ -
MIN_DEVICE_SECRET = 16
MAX_DEVICE_SECRET = 256
MAX_DISPLAY_NAME = 32
"""Characters of a display name, at most."""
MAX_DISPLAY_NAME_BYTES = 64
"""UTF-8 bytes of a display name, at most (what other players' screens and the records hold)."""
_HIDDEN_CATEGORIES = ("Cc", "Cf", "Cs", "Co", "Cn")
"""Control, format (right-to-left overrides, zero-width joiners), surrogate, private-use and
unassigned characters: removed from display names."""
MAX_CLIENT_SEED_BYTES = CLIENT_SEED_MAX_BYTES  # trix.fairness, docs/rules.md §11


def check_id(value: str, what: str) -> str:
    if not ID.fullmatch(value):
        raise InvalidArgument(f"{what} must be 1-128 of A-Z a-z 0-9 _ -")
    return value


def check_client_seed(seed: str) -> str:
    """docs/rules.md §11: at most 64 bytes of UTF-8, no `|`."""
    if len(seed.encode()) > MAX_CLIENT_SEED_BYTES or "|" in seed:
        raise InvalidArgument("client seed: at most 64 bytes of UTF-8, no '|' (docs/rules.md §11)")
    return seed


def clean_display_name(raw: str) -> str:
    """A display name others may be shown: NFC, without control or format characters (NUL,
    ANSI escapes, right-to-left overrides), invisible letters or a stack of combining marks
    (`trix.rules.strip_display_name`), whitespace runs as one space, at most
    MAX_DISPLAY_NAME characters and MAX_DISPLAY_NAME_BYTES UTF-8 bytes (never a cut character)."""
    text = strip_display_name(raw)  # no invisible letters, marks capped per character
    text = "".join(
        " " if ch.isspace() else ch for ch in text if ch.isspace() or unicodedata.category(ch) not in _HIDDEN_CATEGORIES
    )
    name = " ".join(text.split())[:MAX_DISPLAY_NAME]
    while len(name.encode()) > MAX_DISPLAY_NAME_BYTES:
        name = name[:-1]
    return name.rstrip()
