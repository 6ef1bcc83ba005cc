"""What the gateway accepts from a client: ids, device secrets, client seeds
(docs/rules.md §11), and display names cleaned of what must not reach other players'
screens (`trix.rules.clean_display_name`, one copy for every service). Raises
`trix.errors.InvalidArgument` with a message a client can show."""

from __future__ import annotations

from trix.errors import InvalidArgument
from trix.fairness import CLIENT_SEED_MAX_BYTES
from trix.rules import MAX_DISPLAY_NAME, MAX_DISPLAY_NAME_BYTES, PLAYER_ID, clean_display_name

ID = PLAYER_ID  # trix.rules: 1-128 of A-Z a-z 0-9 _ -
MIN_DEVICE_SECRET = 16
MAX_DEVICE_SECRET = 256
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


__all__ = ["MAX_DISPLAY_NAME", "MAX_DISPLAY_NAME_BYTES", "check_client_seed", "check_id", "clean_display_name"]
