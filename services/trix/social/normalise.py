"""The text normaliser of table talk (issue 44): one form of a line that the word filter
matches against, whatever script, look-alike characters or decoration the writer used.

Owns `normalise` (NFKC, case folded, invisible and format characters removed, Arabic
diacritics and tatweel removed, Arabic letter variants and their Persian/Urdu forms folded,
Arabic-Indic digits as ASCII digits, Cyrillic and Greek look-alikes as the Latin letters
they imitate), `collapse_repeats` (a run of one letter as one letter) and `skeleton` (both).
Pure functions of a string: never raise, idempotent (`normalise(normalise(s)) ==
normalise(s)`), so a stored or compared line is normalised once. Knows no word list: that
is `trix.social.wordfilter`. What is shown to players is always the line as written.
"""

from __future__ import annotations

import re
import unicodedata
from functools import cache
from typing import Final

ARABIC_MARKS: Final = frozenset(
    [chr(c) for c in range(0x0610, 0x061B)]  # Quranic honorifics and small signs
    + [chr(c) for c in range(0x064B, 0x0660)]  # harakat: fathatan .. wavy hamza below
    + ["\u0670"]  # superscript alef
    + [chr(c) for c in range(0x06D6, 0x06DD)]  # Quranic annotation signs
    + [chr(c) for c in range(0x06DF, 0x06E5)]
    + [chr(c) for c in range(0x06E7, 0x06E9)]
    + [chr(c) for c in range(0x06EA, 0x06EE)]
    + ["\u0640"]  # tatweel (kashida): stretches a word, means nothing
)
"""Arabic diacritics (harakat, shadda, sukun), Quranic marks and the tatweel: dropped."""

ARABIC_FOLDS: Final = {
    # alef variants: hamza above and below, madda, wasla
    "\u0623": "\u0627",
    "\u0625": "\u0627",
    "\u0622": "\u0627",
    "\u0671": "\u0627",
    "\u0672": "\u0627",
    "\u0673": "\u0627",
    # yaa: alef maqsura, hamza on yaa, Persian yeh, Urdu yeh barree
    "\u0649": "\u064a",
    "\u0626": "\u064a",
    "\u06cc": "\u064a",
    "\u06d0": "\u064a",
    "\u06d2": "\u064a",
    "\u06d3": "\u064a",
    # taa marbuta and heh forms (Persian/Urdu heh goal, heh doachashmee, ae)
    "\u0629": "\u0647",
    "\u06c3": "\u0647",
    "\u06c1": "\u0647",
    "\u06be": "\u0647",
    "\u06d5": "\u0647",
    "\u06c0": "\u0647",
    # waw with hamza
    "\u0624": "\u0648",
    # Persian/Urdu letters for the Arabic ones they stand in for
    "\u06a9": "\u0643",  # keheh
    "\u06aa": "\u0643",  # swash kaf
    "\u06af": "\u0643",  # gaf
    "\u067e": "\u0628",  # peh
    "\u0686": "\u062c",  # tcheh
    "\u0698": "\u0632",  # jeh
    "\u06a4": "\u0641",  # veh
    "\u0679": "\u062a",  # tteh
    "\u0688": "\u062f",  # ddal
    "\u0691": "\u0631",  # rreh
}
"""Arabic letter variants folded to one letter each (spelling varies, the word does not)."""

DIGITS: Final = {chr(0x0660 + i): str(i) for i in range(10)} | {chr(0x06F0 + i): str(i) for i in range(10)}
"""Arabic-Indic and Eastern Arabic-Indic digits as ASCII digits (Arabizi writes ٣ as 3)."""

HOMOGLYPHS: Final = {
    # Cyrillic letters drawn like Latin ones
    "а": "a",
    "в": "b",
    "е": "e",
    "ё": "e",
    "з": "3",
    "и": "u",
    "і": "i",
    "ї": "i",
    "ј": "j",
    "к": "k",
    "м": "m",
    "н": "h",
    "о": "o",
    "п": "n",
    "р": "p",
    "с": "c",
    "т": "t",
    "у": "y",
    "х": "x",
    "ѕ": "s",
    "ԁ": "d",
    "ԛ": "q",
    "ԝ": "w",
    "ɡ": "g",
    "ь": "b",
    # Greek letters drawn like Latin ones
    "α": "a",
    "β": "b",
    "γ": "y",
    "ε": "e",
    "η": "n",
    "ι": "i",
    "κ": "k",
    "ν": "v",
    "ο": "o",
    "ρ": "p",
    "σ": "o",
    "ς": "c",
    "τ": "t",
    "υ": "u",
    "χ": "x",
    "ω": "w",
    "μ": "u",
    # Latin letters from other blocks
    "ı": "i",
    "ł": "l",
    "ø": "o",
    "ß": "ss",
}
"""Look-alikes (after case folding) as the Latin letter or digit they imitate."""

_DROPPED_CATEGORIES: Final = frozenset(("Cc", "Cf", "Cs", "Co", "Cn", "Mn", "Me"))
"""Control, format (zero-width joiners, bidi controls), surrogate, private-use, unassigned
characters and combining marks: nothing a word is spelled with. Marks are dropped after
NFKC, so an accented Latin letter decomposed by the fold below matches its base letter."""

INVISIBLE_LETTERS: Final = frozenset("\u3164\u115f\u1160\uffa0\u2800")
"""Letters that draw nothing (Hangul fillers, the blank Braille pattern): dropped."""

_REPEATS: Final = re.compile(r"(.)\1+", re.DOTALL)
_TABLE: Final = str.maketrans({**ARABIC_FOLDS, **DIGITS, **HOMOGLYPHS})


@cache
def _kept(ch: str) -> bool:
    return (
        ch not in ARABIC_MARKS and ch not in INVISIBLE_LETTERS and unicodedata.category(ch) not in _DROPPED_CATEGORIES
    )


def normalise(text: str) -> str:
    """`text` as the filter reads it: NFKC, case folded, accents and every dropped character
    removed, Arabic variants, digits and look-alikes folded. Letters, digits, spaces and
    punctuation are kept in place, so word boundaries survive. Idempotent."""
    folded = unicodedata.normalize("NFKC", text).casefold()
    # NFD so a Latin accent becomes a mark that is dropped (é -> e); Arabic letters whose
    # decomposition is letter + hamza mark were folded to their base above or below.
    out = unicodedata.normalize("NFD", folded.translate(_TABLE))
    kept = "".join(ch for ch in out if _kept(ch)).translate(_TABLE)
    # NFKC and case folding again: stable under a second pass (a folded letter may compose).
    again = unicodedata.normalize("NFKC", kept).casefold().translate(_TABLE)
    return "".join(ch for ch in unicodedata.normalize("NFD", again) if _kept(ch))


def collapse_repeats(text: str) -> str:
    """Each run of one character as that character once: `fuuuck` -> `fuck`, `حلووو` -> `حلو`."""
    return _REPEATS.sub(r"\1", text)


def skeleton(text: str) -> str:
    """`normalise` then `collapse_repeats`, whitespace runs as one space, trimmed: the form two
    lines are compared in (a repeated line is the same skeleton). Idempotent."""
    return " ".join(collapse_repeats(normalise(text)).split())
