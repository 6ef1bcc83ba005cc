"""The score sheet in the browser (issue 39: "a score sheet like the one players keep on paper"):
whole games played by clicking against bots on the platform as `trix up` runs it. During the
game the sheet groups its rows per kingdom under the owner (♛, the seat the table marks), one
row per deal with its contract and the cards doubled in it, a running total after each finished
kingdom, the grand total (and the teams' in partnership), every number in its own left-to-right
isolate; it is a panel that closes and stays closed across a reload, fits a phone's width (it
scrolls inside its own box), and a reload shows the same sheet. At the end: the ranking with the
places the rules give (docs/rules.md §8: ties share a place, teams in partnership), "play again"
that starts a new table, and the final sheet. In Arabic at phone size and in English at desktop
size. Screenshots are kept under the test's tmp dir."""

from __future__ import annotations

import itertools
import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import test_browser
from playwright.sync_api import Page
from playwright.sync_api import TimeoutError as PlaywrightTimeout
from test_browser import CLICK_MS, DESKTOP, GAME_DEADLINE_S, PHONE, Pages, _clicked, _play_until, _sign_in, _until

from conftest import WebPlatform

browser = test_browser.browser
"""The module's chromium (test_browser's fixture)."""
pages = test_browser.pages
"""The test's browser pages (test_browser's fixture): errors fail the test, failures leave screenshots."""

pytestmark = pytest.mark.timeout(600)

DEALS = "tr[data-deal]"

_SHEET = """() => {
  const table = document.querySelector('.scores.sheet');
  const nums = (el) => [...el.querySelectorAll('td')].map((td) => td.textContent);
  const head = [...table.querySelectorAll('thead th[data-col]')].map((th) => Number(th.dataset.col));
  return {
    columns: head,
    me: table.querySelector('thead th.me')?.dataset.col ?? null,
    teams: [...table.querySelectorAll('thead th[data-team]')].map((th) => th.textContent),
    kingdoms: [...table.querySelectorAll('tbody[data-kingdom]')].map((tb) => ({
      kingdom: Number(tb.dataset.kingdom),
      owner: Number(tb.dataset.owner),
      head: tb.querySelector('.kingdom-head').textContent,
      deals: [...tb.querySelectorAll('tr[data-deal]')].map((tr) => ({
        deal: Number(tr.dataset.deal),
        contract: tr.dataset.contract,
        label: tr.querySelector('th').innerText,
        doubled: [...tr.querySelectorAll('.dbl')].map((d) => [Number(d.dataset.by), d.dataset.doubled]),
        points: nums(tr),
      })),
      running: [...tb.querySelectorAll('tr[data-running]')].map(nums),
      teamRunning: [...tb.querySelectorAll('tr[data-team-running]')].map(nums),
    })),
    total: nums(table.querySelector('tfoot tr.grand')),
    teamTotal: [...table.querySelectorAll('tfoot td[data-team-total]')].map((td) => td.textContent),
    cells: [...table.querySelectorAll('tbody td, tfoot td')].map((td) => ({
      text: td.textContent,
      nums: td.querySelectorAll('bdi.num[dir=ltr]').length,
      isolate: td.querySelector('bdi.num') ? getComputedStyle(td.querySelector('bdi.num')).unicodeBidi : null,
    })),
  };
}"""

_FITS = """() => {
  const scroller = document.querySelector('.sheet-scroll');
  const box = scroller.getBoundingClientRect();
  const td = document.querySelector('.scores.sheet td, .scores.sheet th');
  return {
    pageWidth: document.documentElement.scrollWidth,
    viewport: window.innerWidth,
    boxLeft: box.left,
    boxRight: box.right,
    fontPx: parseFloat(getComputedStyle(td).fontSize),
    gridWidth: scroller.scrollWidth,
    boxWidth: scroller.clientWidth,
  };
}"""


def _sheet(page: Page) -> dict[str, Any]:
    sheet: dict[str, Any] = page.evaluate(_SHEET)
    return sheet


def _ints(cells: list[str]) -> list[int]:
    return [int(c) for c in cells]


def _check_sheet(sheet: dict[str, Any], *, per_kingdom: int, partnership: bool) -> None:
    """What a paper sheet holds, true of the sheet at any point of the game."""
    columns: list[int] = sheet["columns"]
    assert sorted(columns) == [0, 1, 2, 3]
    if partnership:  # partners side by side under their team (docs/rules.md §2)
        assert columns == [0, 2, 1, 3] and len(sheet["teams"]) == 2
    else:
        assert columns == [0, 1, 2, 3] and sheet["teams"] == []
    # Every number is one left-to-right isolate of Latin digits with a leading minus (issue 39).
    for cell in sheet["cells"]:
        assert cell["nums"] == 1 and cell["isolate"] == "isolate" and re.fullmatch(r"-?\d+", cell["text"]), cell
    kingdoms = sheet["kingdoms"]
    assert [k["kingdom"] for k in kingdoms] == list(range(len(kingdoms)))
    # §3: each seat owns one kingdom, the next kingdom the next seat's.
    owners = [k["owner"] for k in kingdoms]
    assert len(set(owners)) == len(owners) and all(b == (a + 1) % 4 for a, b in itertools.pairwise(owners))
    running = [0, 0, 0, 0]
    deal = 0
    for k in kingdoms:
        assert "♛" in k["head"]
        assert len(k["deals"]) <= per_kingdom
        assert len({d["contract"] for d in k["deals"]}) == len(k["deals"])  # each contract once a kingdom
        for d in k["deals"]:
            assert d["deal"] == deal
            deal += 1
            points = dict(zip(columns, _ints(d["points"]), strict=True))
            running = [running[s] + points[s] for s in range(4)]
        done = len(k["deals"]) == per_kingdom
        assert len(k["running"]) == (1 if done else 0)
        if done:
            assert _ints(k["running"][0]) == [running[s] for s in columns]
            if partnership:
                assert _ints(k["teamRunning"][0]) == [running[0] + running[2], running[1] + running[3]]
    assert _ints(sheet["total"]) == [running[s] for s in columns]  # the rows add up to the total
    if partnership:
        assert _ints(sheet["teamTotal"]) == [running[0] + running[2], running[1] + running[3]]


def _deals(sheet: dict[str, Any]) -> list[dict[str, Any]]:
    return [d for k in sheet["kingdoms"] for d in k["deals"]]


def _double_if_asked(page: Page, doubled: list[tuple[int, str]]) -> bool:
    """At a doubling question, double the first doublable card (remembered with its deal);
    whether it did."""
    double = page.locator("[data-action=double]")
    if not (double.count() and page.locator(".prompt .cardbtn").count()):
        return False
    deal = page.locator(f".scores {DEALS}").count()  # the deals scored before this one
    first = page.locator(".prompt .cardbtn").first
    try:
        card = first.locator("[data-card]").get_attribute("data-card", timeout=CLICK_MS)
    except PlaywrightTimeout:  # the question went away meanwhile (the timer answered it)
        return False
    if _clicked(first) and _clicked(double):
        doubled.append((deal, str(card)))
        return True
    return False


@dataclass
class Player:
    """A guest at a table against bots, who doubles whenever he can (the cards remembered)."""

    pages: Pages
    page: Page
    until: float = field(default_factory=lambda: time.monotonic() + GAME_DEADLINE_S)
    doubled: list[tuple[int, str]] = field(default_factory=list)
    """(deal index, card) of every card this player doubled."""

    def play(self, done: Callable[[], bool]) -> None:
        """Click through the game until `done()`: the first contract, the first legal card, and
        at every doubling question the first doublable card doubled."""

        # The doubling question answered in the step that sees it: a look of its own before the
        # step raced the question, which the step then answered "no double".
        _play_until(
            self.pages,
            self.page,
            done,
            self.until,
            "the game did not get there in time",
            double=lambda: _double_if_asked(self.page, self.doubled),
        )

    def sheet_after(self, deals: int, *, partnership: bool) -> dict[str, Any]:
        """The sheet once `deals` deals are scored, checked as a paper sheet (COMPLEX: 2 a kingdom)."""
        self.play(lambda: self.page.locator(f".scores {DEALS}").count() >= deals)
        sheet = _sheet(self.page)
        _check_sheet(sheet, per_kingdom=2, partnership=partnership)
        return sheet

    def final_sheet(self, *, partnership: bool) -> dict[str, Any]:
        """The final sheet at the end of the game: four kingdoms of two deals."""
        self.play(lambda: self.page.locator("[data-finished]").count() > 0)
        self.page.wait_for_selector("[data-finished] .scores.sheet")
        final = _sheet(self.page)
        _check_sheet(final, per_kingdom=2, partnership=partnership)
        assert [len(k["deals"]) for k in final["kingdoms"]] == [2, 2, 2, 2]
        assert sorted(k["owner"] for k in final["kingdoms"]) == [0, 1, 2, 3]
        assert [len(k["running"]) for k in final["kingdoms"]] == [1, 1, 1, 1]
        return final


def _start(pages: Pages, url: str, *, locale: str, viewport: dict[str, int], name: str, variant: str) -> Player:
    """A guest at a new table of `variant` (bots in the other seats)."""
    page = pages.open("player", locale=locale, viewport=viewport)
    _sign_in(page, url, name)
    page.click(f"[data-variant={variant}]")
    page.wait_for_selector(".table")
    return Player(pages, page)


def _ranking(page: Page) -> list[dict[str, Any]]:
    return [
        {
            "place": int(row.get_attribute("data-place") or "0"),
            "shown": row.locator("td.place").inner_text(),
            "points": int(row.locator("td").last.inner_text()),
            "seat": row.get_attribute("data-seat"),
            "team": row.get_attribute("data-team"),
        }
        for row in page.locator(".ranking tr").all()
    ]


def _places_by_rules(points: list[int]) -> list[int]:
    """docs/rules.md §8 for singles: 1 + the seats with a strictly greater total."""
    return [1 + sum(q > p for q in points) for p in points]


def test_the_score_sheet_in_arabic_on_a_phone_kingdoms_owners_running_totals_reload_and_the_final_sheet(
    web_platform: WebPlatform, pages: Pages, tmp_path: Path
) -> None:
    player = _start(pages, web_platform.url, locale="ar", viewport=PHONE, name="ليلى", variant="COMPLEX")
    page = player.page
    # One kingdom finished (COMPLEX and TRIX, docs/rules.md §2) and the next begun.
    sheet = player.sheet_after(3, partnership=False)
    first = sheet["kingdoms"][0]
    assert len(first["deals"]) == 2 and len(first["running"]) == 1
    assert {d["contract"] for d in first["deals"]} == {"COMPLEX", "TRIX"}
    for d in first["deals"]:  # the contract as players say it
        assert d["label"].startswith({"COMPLEX": "كمبلكس", "TRIX": "تركس"}[d["contract"]]), d
    assert first["head"].startswith("♛") and "المملكة" in first["head"]
    # The kingdom being played is the one the table marks: its owner wears the ♛ on the felt.
    current = sheet["kingdoms"][-1]
    crowned = [s.get_attribute("data-seat") for s in page.locator(".seat").all() if "♛" in s.inner_text()]
    assert crowned == [str(current["owner"])]
    me = int(sheet["me"])
    for deal, card in player.doubled:  # every card we doubled is marked on its deal's row, by our seat
        if deal < len(_deals(sheet)):
            assert [me, card] in _deals(sheet)[deal]["doubled"], (deal, card, _deals(sheet)[deal])
    # It fits the phone: the page does not widen; the grid scrolls inside its own box, readable.
    fits: dict[str, Any] = page.evaluate(_FITS)
    assert fits["pageWidth"] <= fits["viewport"], fits
    assert fits["boxLeft"] >= 0 and fits["boxRight"] <= fits["viewport"] + 0.5 and fits["fontPx"] >= 12, fits
    assert fits["gridWidth"] <= fits["boxWidth"] + 1, fits  # four seats' columns fit a phone, unscrolled
    page.locator(".sheet-panel").screenshot(path=str(tmp_path / "sheet-ar-phone.png"))

    # The panel closes, and stays closed across a reload; the same sheet when opened again.
    seq = page.get_attribute(".table", "data-seq")
    before = _sheet(page)
    page.click(".sheet-panel > summary")
    _until(lambda: not page.locator(".scores.sheet").is_visible(), 10.0)
    page.reload()
    page.wait_for_selector(".table")
    _until(lambda: page.locator(f".scores {DEALS}").count() >= len(_deals(before)), 30.0)
    assert page.get_attribute(".sheet-panel", "open") is None and not page.locator(".scores.sheet").is_visible()
    page.click(".sheet-panel > summary")
    _until(lambda: page.locator(".scores.sheet").is_visible(), 10.0)
    if page.get_attribute(".table", "data-seq") == seq:  # nothing moved meanwhile: the very same sheet
        assert _sheet(page) == before
    else:
        assert _deals(_sheet(page))[: len(_deals(before))] == _deals(before)

    # To the end: the final sheet (4 kingdoms of 2 deals), the ranking by the rules' places.
    final = player.final_sheet(partnership=False)
    for deal, card in player.doubled:
        assert [me, card] in _deals(final)[deal]["doubled"], (deal, card, _deals(final)[deal])
    ranking = _ranking(page)
    assert len(ranking) == 4
    totals = dict(zip(final["columns"], _ints(final["total"]), strict=True))
    by_rules = dict(zip(range(4), _places_by_rules([totals[s] for s in range(4)]), strict=True))
    assert [r["place"] for r in ranking] == sorted(r["place"] for r in ranking)  # best first
    for r in ranking:  # the place shown is the place, not a list number (issue 39)
        assert r["shown"] == str(r["place"]) == str(by_rules[int(r["seat"])]) and r["points"] == totals[int(r["seat"])]
    mine = next(r for r in ranking if r["seat"] == str(me))
    assert page.locator(".result").inner_text() == ("فزت!" if mine["place"] == 1 else f"مركزك: {mine['place']}")
    fits = page.evaluate(_FITS)  # the final sheet too, with every deal's doubled cards
    assert fits["pageWidth"] <= fits["viewport"] and fits["gridWidth"] <= fits["boxWidth"] + 1, fits
    page.screenshot(path=str(tmp_path / "final-sheet-ar-phone.png"), full_page=True)

    # Play again: a new table of the same variant, its sheet empty.
    old = page.get_attribute(".gameover a[href^='#/replay/']", "href")
    page.click("[data-action=play-again]")
    page.wait_for_selector(".table [data-table]")
    assert f"#/replay/{page.get_attribute('[data-table]', 'data-table')}" != old
    assert page.locator(f".scores {DEALS}").count() == 0


def test_the_score_sheet_in_english_at_desktop_size_partnership_team_totals_and_the_teams_ranking(
    web_platform: WebPlatform, pages: Pages, tmp_path: Path
) -> None:
    url = web_platform.url
    player = _start(pages, url, locale="en-US", viewport=DESKTOP, name="Omar", variant="COMPLEX_PARTNERSHIP")
    page = player.page
    sheet = player.sheet_after(2, partnership=True)
    me = int(sheet["me"])
    assert sheet["kingdoms"][0]["head"].startswith("♛ Kingdom 1: ")
    assert any(t.startswith("Team You + ") or t.endswith(" + You") for t in sheet["teams"]), sheet["teams"]
    assert page.locator(".scores tfoot tr").count() == 2  # the seats' totals, the teams' totals

    final = player.final_sheet(partnership=True)
    assert [len(k["teamRunning"]) for k in final["kingdoms"]] == [1, 1, 1, 1]
    # We doubled whenever we could (a doublable card in 3 of 4 COMPLEX hands on average): each
    # of those cards is on its deal's row, marked as ours.
    assert player.doubled, "we never held a card to double in four COMPLEX deals"
    for deal, card in player.doubled:
        assert [me, card] in _deals(final)[deal]["doubled"], (deal, card, _deals(final)[deal])
    label = next(d["label"] for d in _deals(final) if d["doubled"])
    assert "×2" in label
    # §8: the two teams are placed by their totals; the place shown is the place.
    ranking = _ranking(page)
    team_totals = _ints(final["teamTotal"])
    assert sorted(r["team"] for r in ranking) == ["0", "1"]
    assert [r["place"] for r in ranking] == sorted(r["place"] for r in ranking)
    for r in ranking:
        assert r["shown"] == str(r["place"]) and r["points"] == team_totals[int(r["team"])]
    if team_totals[0] != team_totals[1]:
        winner = 0 if team_totals[0] > team_totals[1] else 1
        assert {r["team"]: r["place"] for r in ranking} == {str(winner): 1, str(1 - winner): 2}
    mine = next(r for r in ranking if r["team"] == str(me % 2))
    assert page.locator(".result").inner_text() == (
        "You won!" if mine["place"] == 1 else f"Your place: {mine['place']}"
    )
    page.screenshot(path=str(tmp_path / "final-sheet-en-desktop.png"), full_page=True)
    page.click("[data-action=play-again]")
    page.wait_for_selector(".table [data-table]")
    assert page.locator(f".scores {DEALS}").count() == 0
