"""The word filter of table talk and display names (issue 44): Arabic, Arabizi and English.

Owns reading the word list (`words.txt` beside this module: data, with its source at its
top, extended by adding a line there, as its header says) and the verdict on a line:
`WordFilter.check` -> `Verdict`, clean or filtered naming the rule (the entry) that matched.

How a line is read: `trix.social.normalise.normalise` first (look-alikes, Arabic variants,
invisible characters); then the line is cut into words at spaces, and inside a word every
separator (a dot, a dash, an asterisk) is ignored (`f.u.c.k`, `ش-ر-م-و-ط-ه`); a run of
single letters between spaces is one word (`f u c k`). Each word is then read three ways,
each against the entries of its language: its Arabic letters (`ar` entries, an Arabic word
also without a leading ال, وال or يا), its Latin letters with digits read as letters (`en`
entries: `sh1t`) and its Arabizi consonant skeleton (`az` entries, `arabizi_skeleton`). An
entry's repeated letter matches that letter repeated more (`fuuuck`, `شررموطه`), never less.

Pure and deterministic: no I/O but reading the list once, no clock. What is shown to the
readers of a line that passes is the line as written.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import Final, Literal

from trix.social.normalise import collapse_repeats, normalise

Kind = Literal["ar", "az", "en"]
Mode = Literal["word", "part"]
KINDS: Final = ("ar", "az", "en")
MODES: Final = ("word", "part")

LEET: Final = str.maketrans({"0": "o", "1": "i", "3": "e", "4": "a", "5": "s", "7": "t", "@": "a", "$": "s", "!": "i"})
"""Digits and symbols written for Latin letters (English view only; Arabizi reads digits as letters of its own)."""
ARABIZI_DIGRAPHS: Final = (("kh", "5"), ("sh", "$"), ("ch", "$"), ("gh", "8"), ("th", "t"), ("dh", "d"))
"""Two Latin letters for one Arabic letter, as one symbol (5 is also how Arabizi writes خ)."""
ARABIZI_LETTERS: Final = str.maketrans({"q": "2", "c": "k", "h": "7"})
"""ق written as q or as 2 (the hamza most dialects say it as), c as k, h as 7 (ح and ه alike)."""
VOWELS: Final = frozenset("aeiou")
ARABIC_PREFIXES: Final = ("وال", "ال", "يا")
"""Written joined to the word they precede: an `ar` word entry matches after them too."""
_WORD_CHARACTERS: Final = frozenset("@$!")
"""Symbols that may stand for a letter inside a word (English view); other punctuation is a separator."""


def _is_arabic(ch: str) -> bool:
    return "\u0621" <= ch <= "\u064a" or "\u0671" <= ch <= "\u06d3"


def _is_latin(ch: str) -> bool:
    return ch.isascii() and (ch.isalnum() or ch in _WORD_CHARACTERS)


def arabizi_skeleton(word: str) -> str:
    """The consonants of a Latin word read as Arabizi: repeats collapsed, the digraphs of
    ARABIZI_DIGRAPHS as one symbol, ARABIZI_LETTERS folded, vowels dropped, digits kept."""
    text = collapse_repeats(word)
    for pair, symbol in ARABIZI_DIGRAPHS:
        text = text.replace(pair, symbol)
    text = text.translate(ARABIZI_LETTERS)
    return collapse_repeats("".join(ch for ch in text if ch not in VOWELS))


def leet_letters(word: str) -> str:
    """A Latin word with its digits and symbols read as the letters they stand for."""
    return "".join(ch for ch in word.translate(LEET) if ch.isalpha())


def runs_pattern(text: str) -> str:
    """A regular expression matching `text` with any letter repeated at least as often as in it."""
    out: list[str] = []
    i = 0
    while i < len(text):
        j = i
        while j < len(text) and text[j] == text[i]:
            j += 1
        out.append(re.escape(text[i]) + ("+" if j - i == 1 else f"{{{j - i},}}"))
        i = j
    return "".join(out)


@dataclass(frozen=True)
class Entry:
    """One line of the word list."""

    kind: Kind
    mode: Mode
    words: str
    """As written in the list (normalised when loaded)."""
    line: int

    @property
    def rule(self) -> str:
        """How a verdict names it: `words.txt:<line> <kind> <words>`."""
        return f"words.txt:{self.line} {self.kind} {self.words}"


@dataclass(frozen=True)
class Verdict:
    """The filter's answer about one line: clean, or filtered by `rule`, on `matched` (the
    normalised words that matched, for an operator; never shown to other players)."""

    filtered: bool
    rule: str = ""
    matched: str = ""

    @property
    def clean(self) -> bool:
        return not self.filtered


CLEAN: Final = Verdict(False)


class WordListError(ValueError):
    """A line of the word list that is not `KIND MODE WORDS`."""


def parse_word_list(text: str) -> tuple[Entry, ...]:
    """The entries of a word list (`words.txt`'s format); WordListError naming a bad line."""
    entries: list[Entry] = []
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        parts = line.split(None, 2)
        if len(parts) != 3 or parts[0] not in KINDS or parts[1] not in MODES:
            raise WordListError(
                f"words.txt:{number}: expected 'KIND MODE WORDS' (KIND one of {KINDS}, MODE one of {MODES})"
            )
        kind, mode, words = parts
        words = " ".join(normalise(words).split())
        if mode == "part" and " " in words:
            raise WordListError(f"words.txt:{number}: a 'part' entry is one word")
        entries.append(Entry(kind, mode, words, number))  # type: ignore[arg-type]
    return tuple(entries)


@dataclass(frozen=True)
class _Compiled:
    entry: Entry
    size: int
    """Words in a row it spans."""
    pattern: re.Pattern[str] | None
    skeleton: str
    pattern_text: str = ""
    """What `pattern` was made from (its repeats as written)."""


def _compile(entry: Entry) -> _Compiled:
    size = entry.words.count(" ") + 1
    if entry.kind == "az":
        return _Compiled(entry, size, None, " ".join(arabizi_skeleton(w) for w in entry.words.split()))
    text = entry.words if entry.kind == "ar" else " ".join(leet_letters(w) for w in entry.words.split())
    return _Compiled(entry, size, re.compile(runs_pattern(text)), "", text)


def _pieces(text: str) -> list[str]:
    """The words of a normalised line: cut at spaces, separators inside a word dropped, a run
    of single letters (`f u c k`) as one word."""
    words = ["".join(ch for ch in chunk if ch.isalnum() or ch in _WORD_CHARACTERS) for chunk in text.split()]
    words = [w for w in words if w]
    out: list[str] = []
    run: list[str] = []
    for word in [*words, ""]:
        if len(word) == 1 and word.isalpha():
            run.append(word)
            continue
        if len(run) > 1:
            out.append("".join(run))
        elif run:
            out.extend(run)
        run = []
        if word:
            out.append(word)
    return out


def _views(words: Sequence[str]) -> dict[Kind, list[str]]:
    """Each word read as Arabic, as English and as Arabizi (an empty reading where the word has none)."""
    arabic = ["".join(ch for ch in w if _is_arabic(ch)) for w in words]
    latin = ["".join(ch for ch in w if _is_latin(ch)) for w in words]
    return {
        "ar": arabic,
        "en": [leet_letters(w) for w in latin],
        "az": [arabizi_skeleton(w) if any(c.isalpha() for c in w) else "" for w in latin],
    }


def _arabic_forms(word: str) -> Iterator[str]:
    yield word
    for prefix in ARABIC_PREFIXES:
        if word.startswith(prefix) and len(word) > len(prefix) + 1:
            yield word[len(prefix) :]


class WordFilter:
    """The filter over one word list (`default_filter()`: the repository's `words.txt`).

    Whole-word entries are looked up by their repeats-collapsed form (then checked against
    their pattern), `az` entries by their skeleton, so a line costs a few dictionary
    lookups per word whatever the list's length; `part` entries are tried on every word."""

    def __init__(self, entries: Sequence[Entry]) -> None:
        self.entries = tuple(entries)
        compiled = [_compile(e) for e in self.entries]
        self._sizes = sorted({c.size for c in compiled}, reverse=True)
        self._first: dict[tuple[Kind, int], set[str]] = {}
        """The first word's key of the whole-word entries of each kind and size: a window
        starting with another word is not looked at."""
        self._parts = [c for c in compiled if c.entry.mode == "part"]
        self._words: dict[tuple[Kind, str], list[_Compiled]] = {}
        for c in compiled:
            if c.entry.mode == "word":
                key = c.skeleton if c.pattern is None else collapse_repeats(c.pattern_text)
                self._words.setdefault((c.entry.kind, key), []).append(c)
                self._first.setdefault((c.entry.kind, c.size), set()).add(key.split(" ")[0])

    def check(self, line: str) -> Verdict:
        """Whether `line` (a chat line or a display name) passes. Of the entries that match,
        the one of most words names the rule (`كس امك` rather than `كس`), then the first in
        the list."""
        views = _views(_pieces(normalise(line)))
        found: list[tuple[_Compiled, str]] = []
        for kind in KINDS:
            view = [w for w in views[kind] if w]
            keys = view if kind == "az" else [collapse_repeats(w) for w in view]
            # A word may also be looked up without a joined article or vocative (`ar` only).
            also = [{collapse_repeats(f) for f in list(_arabic_forms(w))[1:]} for w in view] if kind == "ar" else []
            for size in self._sizes:
                first = self._first.get((kind, size), set())
                for i in range(len(view) - size + 1):
                    if keys[i] not in first and not (size == 1 and also and not first.isdisjoint(also[i])):
                        continue
                    text = " ".join(view[i : i + size])
                    found.extend((c, text) for c in self._word_matches(kind, text, " ".join(keys[i : i + size])))
            for c in self._parts:
                if c.entry.kind == kind and c.pattern is not None:
                    found.extend((c, w) for w in view if c.pattern.search(w))
        if not found:
            return CLEAN
        best, text = min(found, key=lambda m: (-m[0].size, m[0].entry.line))
        return Verdict(True, best.entry.rule, text)

    def _word_matches(self, kind: Kind, text: str, key: str) -> list[_Compiled]:
        """The whole-word entries of `kind` matching `text` (`key`: its collapsed form)."""
        if kind == "az":
            return self._words.get((kind, text), [])
        found = [c for c in self._words.get((kind, key), []) if c.pattern is not None and c.pattern.fullmatch(text)]
        if kind == "ar" and " " not in text:  # the word after a joined article or vocative
            for form in list(_arabic_forms(text))[1:]:
                found.extend(
                    c
                    for c in self._words.get((kind, collapse_repeats(form)), [])
                    if c.pattern is not None and c.pattern.fullmatch(form)
                )
        return found


def read_word_list() -> str:
    """The text of the repository's word list, `words.txt` of this package."""
    return resources.files("trix.social").joinpath("words.txt").read_text("utf-8")


@cache
def default_filter() -> WordFilter:
    """The filter over the repository's word list, built once."""
    return WordFilter(parse_word_list(read_word_list()))
