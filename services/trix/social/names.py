"""Display names as the social service shows them (issue 44): cleaned, then judged.

Owns `judge_display_name`: the one cleaning every service uses (`trix.rules.clean_display_name`:
bidi and other control or format characters, zero-width characters, invisible fillers such
as U+3164 and U+115F, stacks of combining marks, the length limits) followed by the word
filter (`trix.social.wordfilter`). The cleaning is not copied here: the gateway cleans
sign-in names with the same function, so a name means the same thing everywhere.
"""

from __future__ import annotations

from dataclasses import dataclass

from trix.errors import InvalidArgument
from trix.rules import clean_display_name
from trix.social.wordfilter import Verdict, WordFilter, default_filter


@dataclass(frozen=True)
class NameJudgement:
    """A display name cleaned (`name`) and the filter's verdict on it."""

    name: str
    verdict: Verdict

    @property
    def acceptable(self) -> bool:
        """Shown to others as `name`: something is left after cleaning and the filter passes it."""
        return bool(self.name) and self.verdict.clean


def judge_display_name(raw: str, word_filter: WordFilter | None = None) -> NameJudgement:
    """`raw` cleaned (`trix.rules.clean_display_name`) and the cleaned name's verdict."""
    name = clean_display_name(raw)
    return NameJudgement(name, (word_filter or default_filter()).check(name))


def check_display_name(raw: str, word_filter: WordFilter | None = None) -> str:
    """The cleaned name, or InvalidArgument with a message a client can show (never the
    rule nor the word that matched: the player knows what he wrote)."""
    judged = judge_display_name(raw, word_filter)
    if not judged.name:
        raise InvalidArgument("display name must have at least one visible character")
    if judged.verdict.filtered:
        raise InvalidArgument("display name is not allowed: choose another")
    return judged.name
