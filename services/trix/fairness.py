"""The verifiable fair shuffle of docs/rules.md §11.

Owns: drawing a server seed, its public commitment, validating client seeds and
dealing deal n from (server_seed, client_seed). Pure hashlib/hmac, no I/O.
Must not log or return a server seed anywhere a player could see it before the
game ends (§14): callers decide when to reveal it.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from collections.abc import Iterator, Sequence

SERVER_SEED_BYTES = 32  # §11 "server_seed (32 random bytes)"
CLIENT_SEED_MAX_BYTES = 64  # §11 "at most 64 bytes of UTF-8, no |"
CLIENT_SEED_SEPARATOR = "|"
NUM_CARDS = 52
CARDS_PER_HAND = 13
NUM_SEATS = 4

Hands = tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...], tuple[int, ...]]


class FairnessError(ValueError):
    """A seed that §11 does not allow."""


def new_server_seed() -> bytes:
    """§11 "At table creation the server draws server_seed (32 random bytes)"."""
    return secrets.token_bytes(SERVER_SEED_BYTES)


def commitment(server_seed: bytes) -> str:
    """§11 "commitment = SHA-256(server_seed) in lowercase hex", of the raw bytes."""
    if not isinstance(server_seed, bytes):
        raise TypeError("server_seed must be bytes (the raw 32 bytes, never their hex)")
    return hashlib.sha256(server_seed).hexdigest()


def validate_client_seed(seed: str) -> str:
    """§11 "at most 64 bytes of UTF-8, no |". Returns the seed unchanged."""
    if not isinstance(seed, str):
        raise FairnessError("a client seed is text")
    try:
        encoded = seed.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise FairnessError("a client seed must be valid UTF-8 text") from exc
    if len(encoded) > CLIENT_SEED_MAX_BYTES:
        raise FairnessError(f"a client seed is at most {CLIENT_SEED_MAX_BYTES} bytes of UTF-8")
    if CLIENT_SEED_SEPARATOR in seed:
        raise FairnessError("a client seed may not contain '|'")
    return seed


def join_client_seeds(seeds: Sequence[str | None]) -> str:
    """§11 "client_seed is the four seats' seeds joined with | in seat order (a seat
    that gives none contributes an empty string)"."""
    if len(seeds) != NUM_SEATS:
        raise FairnessError("one client seed per seat (4)")
    return CLIENT_SEED_SEPARATOR.join(validate_client_seed(s or "") for s in seeds)


def _random_words(server_seed: bytes, client_seed: str, n: int) -> Iterator[int]:
    """§11 "the byte stream HMAC-SHA256(key=server_seed, msg=f"{client_seed}:{n}:{k}")
    for k = 0, 1, 2, …, concatenated, read as big-endian unsigned 32-bit integers"."""
    k = 0
    while True:
        block = hmac.new(server_seed, f"{client_seed}:{n}:{k}".encode(), hashlib.sha256).digest()
        # 32 bytes per block: exactly 8 words, so no word straddles two blocks.
        for offset in range(0, len(block), 4):
            yield int.from_bytes(block[offset : offset + 4], "big")
        k += 1


def shuffled_deck(server_seed: bytes, client_seed: str, n: int) -> list[int]:
    """§11 Shuffle: Fisher-Yates from position 51 down to 1 with rejection sampling."""
    return shuffled(server_seed, client_seed, n, NUM_CARDS)  # "start from cards 0..51 in id order"


def shuffled(server_seed: bytes, client_seed: str, n: int, count: int) -> list[int]:
    """0..count-1 shuffled exactly as §11 shuffles the 52 cards (the same words, the same
    Fisher-Yates with rejection sampling): the deck when count is 52, and any other list
    drawn from a committed seed (a competition's seating) the same checkable way."""
    if not isinstance(server_seed, bytes):
        raise TypeError("server_seed must be bytes")
    if not isinstance(n, int) or isinstance(n, bool) or n < 0:
        raise ValueError("deal number n must be a non-negative int")
    deck = list(range(count))
    words = _random_words(server_seed, client_seed, n)
    for i in range(count - 1, 0, -1):
        bound = i + 1
        limit = 2**32 - (2**32 % bound)
        r = next(words)
        while r >= limit:  # "reject it while r >= 2**32 - (2**32 % (i + 1))"
            r = next(words)
        j = r % bound
        deck[i], deck[j] = deck[j], deck[i]
    return deck


def deal_from_seeds(server_seed: bytes, client_seed: str, n: int) -> Hands:
    """The 4 hands (each sorted by card id) of deal n (0 based, counting every deal
    of the game). §11 "Seat s receives positions 13*s .. 13*s + 12"."""
    deck = shuffled_deck(server_seed, client_seed, n)
    h = [tuple(sorted(deck[CARDS_PER_HAND * s : CARDS_PER_HAND * (s + 1)])) for s in range(NUM_SEATS)]
    return (h[0], h[1], h[2], h[3])
