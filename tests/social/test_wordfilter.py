"""The chat's word filter (issue 44): every row of the corpus `filter_cases.tsv` gets its
listed verdict (Arabic, Arabizi and English, with look-alikes, repeats and separators), the
game's own vocabulary is never filtered, and the word list is data the filter reads."""

from __future__ import annotations

import codecs
import re
from pathlib import Path

import pytest

from trix import rules
from trix.social.phrases import PHRASES
from trix.social.wordfilter import (
    WordFilter,
    WordListError,
    arabizi_skeleton,
    default_filter,
    parse_word_list,
    read_word_list,
)

CASES = Path(__file__).with_name("filter_cases.tsv")


def corpus() -> list[tuple[str, str, str]]:
    rows = []
    for raw in CASES.read_text("utf-8").splitlines():
        if not raw.strip() or raw.startswith("#"):
            continue
        verdict, what, line = raw.split("\t")
        rows.append((verdict, what, codecs.decode(line.encode("ascii", "backslashreplace"), "unicode_escape")))
    return rows


CORPUS = corpus()


@pytest.mark.parametrize(("verdict", "what", "line"), CORPUS, ids=[f"{v}|{w}" for v, w, _ in CORPUS])
def test_every_line_of_the_corpus_gets_its_listed_verdict(verdict: str, what: str, line: str) -> None:
    got = default_filter().check(line)
    if verdict == "clean":
        assert got.clean, f"{what}: {line!r} filtered by {got.rule} on {got.matched!r}"
    else:
        assert got.filtered, f"{what}: {line!r} passed, expected {verdict}"
        assert got.rule.split(" ", 1)[1] == verdict, f"{what}: {line!r} filtered by {got.rule}, expected {verdict}"


def test_the_corpus_covers_every_language_and_both_verdicts() -> None:
    kinds = {v.split(" ", 1)[0] for v, _, _ in CORPUS}
    assert kinds == {"ar", "az", "en", "clean"}
    assert sum(v == "clean" for v, _, _ in CORPUS) >= 50
    assert sum(v != "clean" for v, _, _ in CORPUS) >= 80


def game_vocabulary() -> list[str]:
    """The game's words: the Arabic names of docs/rules.md (contracts, suits, variants,
    the layout, doubling), the contract and variant names, every card's notation."""
    page = (Path(__file__).resolve().parents[2] / "docs" / "rules.md").read_text("utf-8")
    arabic = sorted(set(re.findall(r"[\u0621-\u064a\u0671-\u06d3]+(?:\s+[\u0621-\u064a\u0671-\u06d3]+)*", page)))
    cards = [rules.card_text(c) for c in range(rules.NUM_CARDS)]
    return [*arabic, *rules.CONTRACT_NAMES, *rules.VARIANT_NAMES, *cards, "شايب", "بنات", "ديناري", "لطوش", "تركس"]


def test_no_false_positive_on_the_games_own_vocabulary() -> None:
    words = game_vocabulary()
    assert len(words) > 80, "docs/rules.md's Arabic names and the card notation should all be here"
    flagged = {w: default_filter().check(w).rule for w in words if default_filter().check(w).filtered}
    assert not flagged
    assert default_filter().check(" ".join(words)).clean


def test_every_quick_phrase_passes_in_both_languages() -> None:
    for phrase in PHRASES:
        assert default_filter().check(phrase.en).clean, phrase.en
        assert default_filter().check(phrase.ar).clean, phrase.ar


def test_every_entry_of_the_word_list_filters_itself_and_no_entry_is_dead() -> None:
    """Each entry catches its own words; the first entry that matches names the rule, so an
    entry shadowed by an earlier one (never reported) would be dead weight."""
    wf = default_filter()
    for entry in wf.entries:
        got = wf.check(entry.words)
        assert got.filtered, entry.rule
    reported = {wf.check(e.words).rule for e in wf.entries}
    assert len(reported) > 0.8 * len(wf.entries)


def test_the_word_list_states_its_source_and_licence_at_its_top() -> None:
    head = read_word_list()[:1200]
    assert "Source and licence" in head
    assert "To extend" in read_word_list()


def test_a_word_list_is_data_an_added_line_filters_a_new_word() -> None:
    base = read_word_list()
    assert default_filter().check("flibbertigibbet").clean
    extended = WordFilter(parse_word_list(base + "\nen word flibbertigibbet\n"))
    got = extended.check("you FLIBBERTIGIBBET")
    assert got.filtered and got.rule.endswith("en flibbertigibbet")


@pytest.mark.parametrize("line", ["xx word fuck", "en maybe fuck", "en word", "en part two words"])
def test_a_bad_line_of_the_word_list_is_refused_naming_its_line(line: str) -> None:
    with pytest.raises(WordListError, match=r"words.txt:2"):
        parse_word_list("# head\n" + line)


def test_an_entry_with_a_double_letter_never_matches_the_word_with_one() -> None:
    """Repeats collapse only upward: `ass` filters `asss` but never `as`."""
    assert default_filter().check("asss").filtered
    assert default_filter().check("as").clean


def test_arabizi_spellings_of_one_word_share_a_skeleton() -> None:
    assert len({arabizi_skeleton(w) for w in ("sharmouta", "sharmoota", "charmuta", "shaaarmouuuta")}) == 1
    assert arabizi_skeleton("qahba") == arabizi_skeleton("2a7ba")
    assert arabizi_skeleton("khawal") == arabizi_skeleton("5awal")
