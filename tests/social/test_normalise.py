"""The normaliser the chat filter reads (issue 44): idempotent, total on any Unicode, and
folding what a writer uses to disguise a word (look-alikes, Arabic variants, marks)."""

from __future__ import annotations

import itertools

from hypothesis import given, settings
from hypothesis import strategies as st

from trix.social.normalise import collapse_repeats, normalise, skeleton
from trix.social.wordfilter import default_filter

ANY_TEXT = st.text(st.characters(codec=None, exclude_categories=()), max_size=300)
"""Every code point, surrogates and unassigned ones included."""
ARABIC_AND_MARKS = st.text(st.characters(min_codepoint=0x0600, max_codepoint=0x06FF), max_size=60)


@settings(max_examples=300, deadline=None, derandomize=True, database=None)
@given(ANY_TEXT)
def test_normalise_never_crashes_and_is_idempotent_on_any_unicode(text: str) -> None:
    once = normalise(text)
    assert normalise(once) == once
    assert skeleton(skeleton(text)) == skeleton(text)


@settings(max_examples=200, deadline=None, derandomize=True, database=None)
@given(ARABIC_AND_MARKS)
def test_normalise_is_idempotent_on_the_arabic_block_with_its_marks(text: str) -> None:
    once = normalise(text)
    assert normalise(once) == once
    assert "\u0640" not in once  # tatweel
    assert not any("\u064b" <= ch <= "\u065f" for ch in once)  # harakat


@settings(max_examples=200, deadline=None, derandomize=True, database=None)
@given(ANY_TEXT)
def test_the_filter_never_crashes_on_any_unicode(text: str) -> None:
    default_filter().check(text)


@settings(max_examples=200, deadline=None, derandomize=True, database=None)
@given(st.text(max_size=50))
def test_collapse_repeats_leaves_no_two_equal_neighbours(text: str) -> None:
    out = collapse_repeats(text)
    assert all(a != b for a, b in itertools.pairwise(out))
    assert set(out) == set(text)


def test_arabic_letter_variants_fold_to_one_letter() -> None:
    assert normalise("أإآٱ") == "اااا"
    assert normalise("ى ئ ی") == "ي ي ي"
    assert normalise("ة ۃ ہ") == "ه ه ه"
    assert normalise("ؤ") == "و"
    assert normalise("ک گ پ چ ژ ڤ") == "ك ك ب ج ز ف"


def test_arabic_diacritics_and_tatweel_are_dropped() -> None:
    assert normalise("السَّلامُ عَلَيْكُم") == normalise("السلام عليكم")
    assert normalise("شـــايب") == "شايب"


def test_look_alikes_are_read_as_the_latin_letters_they_imitate() -> None:
    assert normalise("Сrаzу") == "crazy"  # Cyrillic С, а, у
    assert normalise("ΚΑΤΟ") == "kato"  # Greek capitals
    assert normalise("ｆｕｌｌ") == "full"  # fullwidth by NFKC
    assert normalise("٣ ۷") == "3 7"  # Arabic-Indic digits


def test_invisible_and_format_characters_are_dropped_and_spaces_kept() -> None:
    assert normalise("a\u200bb\u200dc\u2060d\u202ee\u3164f\u00ad") == "abcdef"
    assert normalise("two words") == "two words"


def test_skeleton_makes_a_repeated_line_look_the_same() -> None:
    assert skeleton("HELLOOOO   all") == skeleton("hello all") == "helo al"
