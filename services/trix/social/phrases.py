"""Quick phrases (issue 44): preset lines a player sends with one tap, in both languages.

Owns `PHRASES`: data, each phrase an id (what travels: `ChatLine.phrase`) and its text in
English and Arabic; a reader is shown the text in his own language. A quick phrase is
always allowed where its writer may write at all (`trix.social.channels`): it carries no
information about a hand, so the partnership rule of docs/rules.md §15 never stops it.
To add one: a line here (an id of lower-case letters and `_`, both texts) and the web
client's strings.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final, Literal

from trix.errors import InvalidArgument

Language = Literal["en", "ar"]
LANGUAGES: Final = ("en", "ar")


@dataclass(frozen=True)
class Phrase:
    id: str
    en: str
    ar: str

    def text(self, language: Language) -> str:
        return self.ar if language == "ar" else self.en


PHRASES: Final = (
    Phrase("greeting", "Hello!", "السلام عليكم"),
    Phrase("well_played", "Well played!", "يعطيك العافية، لعب حلو"),
    Phrase("hurry_up", "Hurry up, please", "يلا، بسرعة لو سمحت"),
    Phrase("thank_you", "Thank you!", "شكرا!"),
    Phrase("good_game", "Good game!", "لعبة حلوة!"),
    Phrase("good_luck", "Good luck!", "بالتوفيق!"),
    Phrase("oops", "Oops!", "أوه!"),
    Phrase("bye", "Bye!", "مع السلامة"),
)
"""Every quick phrase, in the order a client shows them."""
BY_ID: Final = {p.id: p for p in PHRASES}


def phrase(phrase_id: str) -> Phrase:
    """The phrase of `phrase_id`; InvalidArgument naming the known ones if none."""
    found = BY_ID.get(phrase_id)
    if found is None:
        raise InvalidArgument(f"unknown quick phrase {phrase_id!r}; one of {', '.join(BY_ID)}")
    return found


def phrase_text(phrase_id: str, language: str) -> str:
    """What a reader of `language` (`en` or `ar`; anything else reads English) is shown."""
    return phrase(phrase_id).text("ar" if language == "ar" else "en")
