"""Display names (issue 44): cleaned of bidi and other control or format characters,
invisible fillers and stacks of combining marks, limited in length (one cleaning for every
service, `trix.rules.clean_display_name`), then judged by the word filter; quick phrases
in both languages."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from trix.errors import InvalidArgument
from trix.rules import MAX_DISPLAY_NAME, MAX_DISPLAY_NAME_BYTES, MAX_MARKS_PER_CHARACTER, clean_display_name
from trix.social.names import check_display_name, judge_display_name
from trix.social.phrases import PHRASES, phrase_text


@pytest.mark.parametrize(
    ("raw", "shown"),
    [
        ("\u202eevil\u202c", "evil"),  # right-to-left override, pop
        ("\u2066amal\u2069", "amal"),  # isolates
        ("a\u200bm\u200ca\u200dl\u2060", "amal"),  # zero-width space, joiners, word joiner
        ("\u3164\u115fbadr\u1160\uffa0\u2800", "badr"),  # Hangul fillers, blank Braille
        ("نور\u061c", "نور"),  # Arabic letter mark
        ("x\x00\x1b[31my", "x[31my"),  # NUL, escape
        ("  two   words ", "two words"),
    ],
)
def test_a_display_name_loses_bidi_control_format_and_invisible_characters(raw: str, shown: str) -> None:
    assert judge_display_name(raw).name == shown


def test_the_gateway_and_the_social_core_clean_names_with_the_one_copy_in_trix_rules() -> None:
    from trix.gateway import validation

    assert validation.clean_display_name is clean_display_name


def test_stacked_combining_marks_are_limited() -> None:
    name = judge_display_name("q" + "\u0301" * 20 + "a").name  # no precomposed q with acute
    assert name == "q" + "\u0301" * MAX_MARKS_PER_CHARACTER + "a"


def test_a_display_name_is_limited_in_characters_and_bytes() -> None:
    assert len(judge_display_name("a" * 100).name) == MAX_DISPLAY_NAME
    assert len(judge_display_name("ش" * 100).name.encode()) <= MAX_DISPLAY_NAME_BYTES


def test_a_display_name_passes_the_word_filter() -> None:
    assert judge_display_name("sh1tlord").verdict.clean  # a part the list does not name
    assert judge_display_name("Fuuuck\u200bYou").verdict.filtered
    assert not judge_display_name("شرموطة").acceptable
    assert judge_display_name("شايب البنات").acceptable
    with pytest.raises(InvalidArgument, match="not allowed"):
        check_display_name("f.u.c.k")
    with pytest.raises(InvalidArgument, match="visible"):
        check_display_name("\u3164\u200b")
    assert check_display_name(" Amal\u202e ") == "Amal"


@settings(max_examples=300, deadline=None, derandomize=True, database=None)
@given(st.text(st.characters(codec=None, exclude_categories=()), max_size=200))
def test_cleaning_a_name_is_idempotent_and_within_its_limits_on_any_unicode(raw: str) -> None:
    name = clean_display_name(raw)
    assert clean_display_name(name) == name
    assert len(name) <= MAX_DISPLAY_NAME and len(name.encode("utf-8", "surrogatepass")) <= MAX_DISPLAY_NAME_BYTES
    judge_display_name(raw)


def test_quick_phrases_have_both_languages_and_the_five_the_issue_names() -> None:
    ids = {p.id for p in PHRASES}
    assert {"greeting", "well_played", "hurry_up", "thank_you", "good_game"} <= ids
    for p in PHRASES:
        assert p.en and p.ar and any("\u0621" <= ch <= "\u064a" for ch in p.ar)
    assert phrase_text("thank_you", "ar") == "شكرا!"
    assert phrase_text("thank_you", "fr") == "Thank you!"
    with pytest.raises(InvalidArgument, match="greeting"):
        phrase_text("insult", "en")
