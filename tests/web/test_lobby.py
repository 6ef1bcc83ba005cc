"""The lobby in a real browser (issue 39): the public tables being played are listed with their
players (bots marked) and watched with one tap; "Stop watching" returns to the lobby; the
player's own open game, seen from another device, comes first and takes him back to his seat; a finished
game of the player's is listed with its date and its opponents, and its Verify link checks its
record; the leaderboard says, in the
page's language, that games with computer players do not count. Chromium against the platform as
`trix up` runs it (tests/web/conftest.py), the browser and page fixtures of test_browser."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from playwright.sync_api import Page
from test_browser import DESKTOP, PHONE, Pages, _sign_in, _until, browser, pages

from conftest import WebPlatform

__all__ = ["browser", "pages"]  # the fixtures this module uses, shared with test_browser

pytestmark = pytest.mark.timeout(600)

LISTED_S = 60.0
"""Scoring lists a table once it has applied its TableCreated: well under a second here."""
GAME_END_S = 240.0
"""Bots play every seat once the player has left: the game ends within this."""


def _listed(page: Page, table_id: str) -> bool:
    """Whether the lobby lists the table (asked again by its refresh button)."""
    if page.locator(f"[data-live-table='{table_id}']").count():
        return True
    page.click("[data-action=refresh-live]")
    time.sleep(0.5)
    return page.locator(f"[data-live-table='{table_id}']").count() > 0


def test_the_lobby_lists_a_running_public_table_opens_it_to_watch_and_leaving_returns_to_it(
    web_platform: WebPlatform, pages: Pages, tmp_path: Path
) -> None:
    player = pages.open("player", locale="en-US", viewport=DESKTOP)
    _sign_in(player, web_platform.url, "Reem")
    player.click("[data-variant=TRIX]")  # bots fill the other seats at once (conftest)
    player.wait_for_selector(".table")
    table_id = player.get_attribute("[data-table]", "data-table")
    assert table_id

    watcher = pages.open("watcher", locale="ar-SA", viewport=PHONE)
    _sign_in(watcher, web_platform.url, "Watcher")
    _until(lambda: _listed(watcher, table_id), LISTED_S)
    row = watcher.locator(f"[data-live-table='{table_id}']")
    assert "Reem" in row.inner_text()
    assert row.locator(".tag").count() == 3  # the three bots, marked as such
    assert table_id not in row.inner_text()  # names, never the id
    watcher.screenshot(path=str(tmp_path / "lobby-ar-phone.png"), full_page=True)
    # The leaderboard says why games with bots are not on it, in the page's language.
    assert "الكمبيوتر لا تُحتسب" in watcher.inner_text("[data-leaderboard-note]")

    # One tap opens it as a spectator; leaving returns to the lobby, with the list again.
    row.locator(f"[data-watch='{table_id}']").click()
    watcher.wait_for_selector(f".table [data-table='{table_id}']")
    watcher.wait_for_selector("[data-action=stop-watching]")
    assert watcher.locator(".hand button").count() == 0  # a spectator holds no cards
    watcher.click("[data-action=stop-watching]")
    watcher.wait_for_selector(".lobby")
    watcher.wait_for_selector(f"[data-live-table='{table_id}']")
    assert watcher.locator(".table").count() == 0

    # The same player on another device: his open game comes first in the lobby, and one tap
    # takes him back to his seat (not to watch it).
    other_device = pages.open("player-device-2", locale="en-US", viewport=PHONE)
    other_device.goto(web_platform.url)
    other_device.evaluate(
        "([device, name]) => { localStorage.setItem('trix.device', device); localStorage.setItem('trix.name', name); }",
        [player.evaluate("() => localStorage.getItem('trix.device')"), "Reem"],
    )
    other_device.reload()
    other_device.wait_for_selector(".lobby")
    _until(lambda: _listed(other_device, table_id), LISTED_S)
    assert other_device.locator(".live-tables li").first.get_attribute("data-live-table") == table_id
    other_device.click(f"[data-resume='{table_id}']")
    other_device.wait_for_selector(f".table [data-table='{table_id}']")
    assert other_device.locator("[data-action=stop-watching]").count() == 0  # his seat, not a spectator's view
    other_device.context.close()

    # The player leaves (a bot takes his seat); once the game has ended his lobby lists it
    # among his games with its date and his opponents, and it is no longer being played.
    player.get_by_role("button", name="Leave the table").click()
    player.get_by_role("alertdialog").get_by_role("button", name="Leave", exact=True).click()
    player.wait_for_selector(".lobby")
    line = player.locator(f".recent li[data-table='{table_id}']")

    def in_history() -> bool:
        if line.count():
            return True
        player.reload()
        player.wait_for_selector(".lobby-board .recent")
        time.sleep(1.0)
        return line.count() > 0

    _until(in_history, GAME_END_S)
    assert line.locator("time[data-ended]").count() == 1
    assert line.locator("time[data-ended]").inner_text().strip()
    opponents = line.locator("[data-opponents]").inner_text()
    assert "against" in opponents and opponents.count("bot") == 3, opponents
    assert line.locator(f"a[href='#/verify/{table_id}']").count() == 1
    assert "games with computer players do not count" in player.inner_text("[data-leaderboard-note]")
    player.screenshot(path=str(tmp_path / "lobby-en-desktop.png"), full_page=True)
    # Its "Verify" opens the Verify page on that game's record, checked at once.
    line.locator(f"a[href='#/verify/{table_id}']").click()
    player.wait_for_selector("[data-verdict]")
    assert player.get_attribute("[data-verdict]", "data-verdict") == "match"
    _until(lambda: not _listed(watcher, table_id), LISTED_S)
