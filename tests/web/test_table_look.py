"""The table's look in chromium (issue 39): a partnership game against bots played into a
trick by clicking and one card by the keyboard, then: every card an SVG face named as a card,
four seats each with a name and an avatar (bots badged), the partner opposite, the countdown
at the seat whose turn it is, the trick's fourth card still on the felt half a second and more
after it was played (the table takes the trick ~60 ms later), the cards in front of the seats
that played them, the last trick shown again by its button, and no animation for a player who
asks for reduced motion. Screenshots of the table at
phone (390x844) and desktop (1280x800) size, in Arabic and English, are kept in the test's
tmp dir as the other browser tests' are."""

from __future__ import annotations

import re
import time
from pathlib import Path

import pytest
from playwright.sync_api import Page
from test_browser import GAME_DEADLINE_S, Pages, _cards, _play_one_card_with_the_keyboard, _play_until, _sign_in, _until

# The browser and pages fixtures, shared with test_browser (re-exported: pytest finds them here).
from test_browser import browser as browser
from test_browser import pages as pages

from conftest import WebPlatform

pytestmark = pytest.mark.timeout(600)

PHONE = {"width": 390, "height": 844}
DESKTOP = {"width": 1280, "height": 800}
CARD_NAME = re.compile(r"^(10|[2-9]|[JQKA]) of (clubs|diamonds|hearts|spades)$")
HELD_AT_LEAST_S = 0.5


def _faces_are_named_svg_cards(page: Page, selector: str) -> int:
    """Every card under `selector` is an inline SVG image named as a card; how many."""
    faces = page.locator(f"{selector} [data-card]")
    n = faces.count()
    for i in range(n):
        face = faces.nth(i)
        assert face.evaluate("e => e.tagName.toLowerCase()") == "svg"
        assert face.get_attribute("role") == "img"
        assert CARD_NAME.match(face.get_attribute("aria-label") or ""), face.get_attribute("aria-label")
    return n


def _place(page: Page, seat: str) -> str:
    return page.get_attribute(f".seat[data-seat='{seat}']", "data-place") or ""


def _trick(page: Page, phase: str) -> dict[str, str]:
    """The trick area's cards in `phase` (hold, play, last): card -> the seat that played it."""
    cards = page.locator(f".trick[data-phase='{phase}'] .tc")
    seen = [cards.nth(i) for i in range(cards.count())]
    return {
        str(tc.locator("[data-card]").get_attribute("data-card")): str(tc.get_attribute("data-seat")) for tc in seen
    }


def _in_front_of_their_seats(page: Page, phase: str) -> None:
    """Each card of the trick sits on the side of the felt of the seat that played it."""
    cards = page.locator(f".trick[data-phase='{phase}'] .tc")
    assert cards.count() > 0
    for i in range(cards.count()):
        tc = cards.nth(i)
        place = _place(page, str(tc.get_attribute("data-seat")))
        assert f"p-{place}" in (tc.get_attribute("class") or "").split(), (place, tc.get_attribute("class"))


def _shoot(page: Page, tmp_path: Path, name: str, settle_ms: int = 400) -> None:
    """A full-page screenshot once a card's move to the trick (0.28 s) is over."""
    page.wait_for_timeout(settle_ms)
    page.screenshot(path=str(tmp_path / f"{name}.png"), full_page=True)


def test_svg_cards_four_seats_partner_opposite_the_fourth_card_held_and_the_last_trick_on_demand(
    web_platform: WebPlatform, pages: Pages, tmp_path: Path
) -> None:
    page = pages.open("player", locale="en-US", viewport=PHONE)
    _sign_in(page, web_platform.url, "Layla Haddad")
    page.click("[data-variant=COMPLEX_PARTNERSHIP]")
    page.wait_for_selector(".table .felt")
    until = time.monotonic() + GAME_DEADLINE_S

    # Four seats around the felt, each with a name and an avatar; the bots badged as bots.
    _until(lambda: page.locator(".seat .name").count() == 4, 60.0)
    names = page.locator(".seat .name").all_inner_texts()
    assert all(n.strip() for n in names), names
    assert sorted(page.get_attribute(f".seat.{p}", "data-place") or "" for p in ("top", "left", "right", "bottom")) == [
        "bottom",
        "left",
        "right",
        "top",
    ]
    assert page.locator(".seat .avatar").count() == 4
    assert page.inner_text(".seat.bottom .avatar") == "LH"  # "Layla Haddad": her initials, at the bottom
    assert all(page.locator(".seat .avatar").all_inner_texts())
    bots = page.locator(".seat .tag", has_text=re.compile("^bot$")).count()
    assert bots >= 1 and page.locator(".seat .botmark").count() == bots

    # The partner (seats 0 and 2, 1 and 3, docs/rules.md §2) sits opposite: at the top.
    me = int(page.get_attribute(".seat.bottom", "data-seat") or "-1")
    assert page.get_attribute(".seat.top", "data-seat") == str((me + 2) % 4)
    assert page.get_attribute(".seat.top", "data-partner") == "1"
    assert page.locator(".seat.top .partner-tag").count() == 1
    assert page.locator(".seat[data-partner]").count() == 1

    # Into a trick contract, on our turn with cards to spare (the deal goes on after this trick),
    # nothing held on the felt. The TRIX layout, when a deal plays it first, is four suit rows.
    layout_rows: list[int] = []

    def ready() -> bool:
        if page.locator(".layout").count():
            layout_rows.append(page.locator(".layout .row").count())
        return (
            page.locator(".trick[data-phase='play']").count() == 1
            and page.locator(".hand .cardbtn").count() >= 3
            and page.locator(".hand .cardbtn.legal").count() > 0
        )

    _play_until(pages, page, ready, until, "never on our turn in a trick contract")
    assert set(layout_rows) <= {4}, layout_rows
    assert page.locator(".seat.bottom.turn .seat-clock").count() == 1  # the countdown at our seat
    assert re.fullmatch(r"\d+", page.inner_text(".seat.bottom .seat-clock"))
    hand = _faces_are_named_svg_cards(page, ".hand")
    assert hand == page.locator(".hand .cardbtn").count() >= 3
    _faces_are_named_svg_cards(page, ".felt")
    _shoot(page, tmp_path, "look-en-phone")

    # One card by the keyboard; the trick completes (the bots play at once) and its fourth card
    # stays on the felt, in front of the seats that played, before it goes to its taker.
    _play_one_card_with_the_keyboard(page, until)
    _until(lambda: page.locator(".trick[data-count='4']").count() == 1, 30.0)
    full_at = time.monotonic()
    held: dict[str, str] = {}
    shot = False
    while page.locator(".trick[data-count='4']").count():
        if not held and page.locator(".trick[data-phase='hold']").count():
            held = _trick(page, "hold")
            _in_front_of_their_seats(page, "hold")
        if held and not shot:
            _shoot(page, tmp_path, "look-en-phone-trick", settle_ms=0)
            shot = True
        assert time.monotonic() - full_at < 30.0, "the taken trick never left the felt"
        time.sleep(0.02)
    shown_s = time.monotonic() - full_at
    print(f"\nthe trick's four cards were on the felt {shown_s:.2f} s")
    assert shown_s >= HELD_AT_LEAST_S
    assert len(held) == 4 and len(set(held.values())) == 4, held

    # The last trick: its button in the corner shows it again on the felt, each card in front of
    # the seat that played it, and hides it on a second press.
    last = page.locator("[data-action=last-trick]")
    assert _cards(page, ".last") == set(held)
    assert last.get_attribute("aria-pressed") == "false"
    last.click()
    page.wait_for_selector(".trick[data-phase='last']")
    assert _trick(page, "last") == held
    _in_front_of_their_seats(page, "last")
    assert _faces_are_named_svg_cards(page, ".trick[data-phase='last']") == 4
    assert last.get_attribute("aria-pressed") == "true"
    _shoot(page, tmp_path, "look-en-phone-last-trick")
    last.click()
    _until(lambda: page.locator(".trick[data-phase='last']").count() == 0, 10.0)

    # A player who asks for less motion gets no pulse on the seat to play and no card flight.
    pulse = "() => getComputedStyle(document.querySelector('.seat.turn .avatar')).animationName"
    _until(lambda: page.locator(".seat.turn .avatar").count() > 0, 30.0)
    assert page.evaluate(pulse) == "seat-pulse"
    page.emulate_media(reduced_motion="reduce")
    assert page.evaluate(pulse) == "none"
    page.emulate_media(reduced_motion="no-preference")

    # The same table in Arabic and at desktop size: screenshots for the record.
    page.click("header button[aria-label]")
    _until(lambda: page.evaluate("document.documentElement.dir") == "rtl", 20.0)
    assert page.locator(".seat.top .partner-tag").inner_text() == "شريكك"
    _shoot(page, tmp_path, "look-ar-phone")
    page.set_viewport_size(DESKTOP)
    _shoot(page, tmp_path, "look-ar-desktop")
    page.click("header button[aria-label]")
    _until(lambda: page.evaluate("document.documentElement.dir") == "ltr", 20.0)
    _shoot(page, tmp_path, "look-en-desktop")
    assert page.locator(".seat .avatar").count() == 4
    print(f"\ntable screenshots: {tmp_path}")
