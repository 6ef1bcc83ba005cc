"""The browser's quick-phrase picker is `trix.social.phrases` (docs/rules.md §15): the
committed web/src/social/phrases.json is regenerated and compared, so the page never offers
a phrase the server refuses nor misses one it accepts."""

from __future__ import annotations

import social_phrases


def test_the_web_quick_phrases_are_the_servers() -> None:
    committed = social_phrases.PHRASES_JSON.read_text(encoding="utf-8")
    assert committed == social_phrases.render(), "run: .venv/bin/python tests/web/social_phrases.py"
