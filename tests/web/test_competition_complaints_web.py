"""The review period's complaints in the browser's competition check (issue 43): the competition
file the service's core publishes (web/test/competition-file.json, tests/web/competition_vectors.py:
two complaints, one in Arabic and answered, one waiting) opened on the Verify page, without
signing in, is checked as a competition's page checks its download: every check passes, each
complaint is shown with its table, its entrant, its text and the operator's answer or "no
answer", and a line says the complaints and their answers are covered by the digest; in English
and in Arabic, each text in its own direction. A file whose answer was altered fails that line."""

from __future__ import annotations

import json

import pytest
import test_browser
from competition_vectors import FILE
from test_browser import DESKTOP, PHONE, Pages

from conftest import WebPlatform

browser = test_browser.browser
"""The module's chromium (test_browser's fixture)."""
pages = test_browser.pages
"""The test's browser pages (test_browser's fixture): errors fail the test, failures leave screenshots."""

pytestmark = pytest.mark.timeout(300)

SHOWN = {
    "en": {
        "covered": "✔ The review period's complaints (2) and their answers are covered by the digest",
        "not covered": "✘ The complaints (2) and their answers are not covered: the digest does not match",
        "heads": ["Table webc1-r1-t1, by p03", "Table webc1-r2-t0, by p07"],
        "answers": ["Answer by admin: checked: every card legal", "No answer"],
    },
    "ar": {
        "covered": "✔ اعتراضات فترة المراجعة (2) وردودها تشملها البصمة",
        "not covered": "✘ الاعتراضات (2) وردودها لا تشملها البصمة: البصمة لا تطابق",
        "heads": ["الطاولة webc1-r1-t1، من p03", "الطاولة webc1-r2-t0، من p07"],
        "answers": ["رد admin: checked: every card legal", "لا رد"],
    },
}


@pytest.mark.parametrize("lang", ["en", "ar"])
def test_the_competition_check_shows_each_complaint_and_its_answer_covered_by_the_digest(
    web_platform: WebPlatform, pages: Pages, lang: str
) -> None:
    shown = SHOWN[lang]
    page = pages.open(f"complaints-{lang}", locale=lang, viewport=PHONE if lang == "ar" else DESKTOP)
    page.goto(web_platform.url + "#/verify")
    page.set_input_files("#competition-file-open", str(FILE))  # a file kept, opened: checked at once
    page.wait_for_selector("[data-comp-verdict=match]")
    assert page.evaluate("document.documentElement.lang") == lang
    checks = page.locator(".comp-check .checks li")
    assert {li.get_attribute("data-status") for li in checks.all()} == {"ok"}
    assert page.locator("[data-comp-check=complaints]").inner_text() == shown["covered"]

    complaints = json.loads(FILE.read_text(encoding="utf-8"))["complaints"]
    items = page.locator("li[data-complaint]")
    assert [li.get_attribute("data-complaint") for li in items.all()] == [c["id"] for c in complaints]
    assert [li.get_attribute("data-answered") for li in items.all()] == ["yes", "no"]
    assert [li.locator(".complaint-head").inner_text() for li in items.all()] == shown["heads"]
    assert [li.locator("[data-complaint-text]").inner_text() for li in items.all()] == [c["text"] for c in complaints]
    assert [li.locator("[data-complaint-answer]").inner_text() for li in items.all()] == shown["answers"]
    text = items.first.locator("[data-complaint-text] bdi")
    assert text.get_attribute("dir") == "auto" and text.evaluate("e => getComputedStyle(e).direction") == "rtl"
    page.screenshot(path=str(pages.tmp_path / f"complaints-{lang}.png"), full_page=True)

    altered = json.loads(FILE.read_text(encoding="utf-8"))
    altered["complaints"][0]["answer"] = "refunded"
    page.fill("#competition-file", json.dumps(altered, ensure_ascii=False))
    page.click("[data-action=check-competition-file]")
    page.wait_for_selector("[data-comp-verdict=mismatch]")
    assert page.locator("[data-comp-check=complaints]").inner_text() == shown["not covered"]
    assert page.locator("[data-comp-check=digest]").get_attribute("data-status") == "bad"
    assert page.locator("li[data-complaint]").first.locator("[data-complaint-answer]").inner_text().endswith("refunded")
