"""The quick phrases of the browser's chat (issue 44, docs/rules.md §15), mirrored from
`trix.social.phrases`, the one hand-written list.

`python tests/web/social_phrases.py` writes web/src/social/phrases.json (generated, never
edited); tests/web/test_social_phrases.py regenerates it and fails when the committed file
differs, so the picker the page offers cannot drift from what the server accepts. A line the
page receives carries its phrase's texts too (`ChatLine.phrase`): the file is for the picker.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from trix.social.phrases import PHRASES

PHRASES_JSON = Path(__file__).resolve().parents[2] / "web" / "src" / "social" / "phrases.json"


def render() -> str:
    phrases = [{"id": p.id, "en": p.en, "ar": p.ar} for p in PHRASES]
    body = {"generated_by": "tests/web/social_phrases.py from services/trix/social/phrases.py", "phrases": phrases}
    return json.dumps(body, ensure_ascii=False, indent=1) + "\n"


if __name__ == "__main__":
    PHRASES_JSON.write_text(render(), encoding="utf-8")
    sys.stdout.write(f"wrote {PHRASES_JSON}\n")
