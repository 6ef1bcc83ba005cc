"""Direct messages and a player's spectators' setting in a real browser (issue 44,
docs/rules.md §15): a player at a partnership table (English, desktop) turns on his setting
to read the spectators' channel, and a spectator's line written after that reaches him live.
The spectator (Arabic, right to left, phone) asks him to be friends from the chat; once
friends, the player opens a conversation from the friends panel and writes; the friend's
badge counts it, he opens it and answers with a quick phrase, each shown in the reader's
language. After a reload the conversation's history comes back. axe-core scans the open
conversation. Chromium against the platform as `trix up` runs it (tests/web/conftest.py),
the browser and page fixtures of test_browser."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from playwright.sync_api import Page
from test_browser import Pages, _axe_serious, _until, browser, pages
from test_social_web import seated_and_watching

from conftest import WebPlatform

__all__ = ["browser", "pages"]  # the fixtures this module uses, shared with test_browser

pytestmark = pytest.mark.timeout(240)

SOCIAL_S = 30.0
"""A chat line or a friend request reaches the other page well within this."""
SETTING_S = 2.0
"""Time for the page's setting to reach the gateway before the line that proves it is live."""


def _texts(page: Page, selector: str) -> list[str]:
    return page.locator(selector).all_inner_texts()


def test_a_conversation_between_friends_live_and_after_a_reload_and_the_spectators_lines_live(
    web_platform: WebPlatform, pages: Pages, tmp_path: Path
) -> None:
    player, friend = seated_and_watching(pages, web_platform.url, "Sami", "ليلى")

    # The player's setting on: a spectator's line written after it reaches him live.
    player.click("[data-action=chat]")
    player.check("[data-setting=show-spectators]")
    time.sleep(SETTING_S)
    friend.click("[data-action=chat]")
    friend.fill("[data-chat-input]", "يلا يا شباب")
    friend.click(".chat-compose [data-action=send]")
    spectators = ".chat-room[data-room=spectators] li[data-line] .text"
    _until(lambda: "يلا يا شباب" in _texts(player, spectators), SOCIAL_S)

    # The player greets the table; the spectator asks him to be friends; he accepts.
    player.click(".chat-compose [data-phrase=greeting]")
    greeting = friend.locator(".chat-room[data-room=players] li[data-phrase=greeting]")
    _until(lambda: greeting.count() == 1, SOCIAL_S)
    player_id = greeting.first.get_attribute("data-author")
    assert player_id
    greeting.first.locator("[data-action=line-menu]").click()
    greeting.first.locator("[data-action=add-friend]").click()
    request = player.locator(".friends .requests li[data-friend]")
    _until(lambda: request.count() == 1, SOCIAL_S)
    friend_id = request.get_attribute("data-friend")
    request.locator("[data-action=accept]").click()
    _until(lambda: friend.locator(f".friend-list [data-friend='{player_id}']").count() == 1, SOCIAL_S)

    # The player writes to his friend; the friend's badge counts it, he opens the
    # conversation and answers with a quick phrase, shown to each in his language.
    player.locator(f".friend-list [data-friend='{friend_id}'] [data-action=message-friend]").click()
    player.wait_for_selector(f".direct[data-direct='{friend_id}']")
    player.fill("[data-direct-input]", "Good luck, Layla")
    player.click("[data-action=send-direct]")
    _until(lambda: "Good luck, Layla" in _texts(player, ".direct li[data-line] .text"), SOCIAL_S)
    message = friend.locator(f".friend-list [data-friend='{player_id}'] [data-action=message-friend]")
    _until(lambda: message.locator(".badge[data-unread='1']").count() == 1, SOCIAL_S)
    message.click()
    _until(lambda: "Good luck, Layla" in _texts(friend, ".direct li[data-line] .text"), SOCIAL_S)
    assert message.locator(".badge").count() == 0  # read
    friend.click(".direct [data-phrase=thank_you]")
    _until(lambda: "شكرا!" in _texts(friend, ".direct li[data-line] .text"), SOCIAL_S)
    _until(lambda: "Thank you!" in _texts(player, ".direct li[data-line] .text"), SOCIAL_S)
    friend.screenshot(path=str(tmp_path / "direct-ar-phone.png"), full_page=True)
    player.screenshot(path=str(tmp_path / "direct-en-desktop.png"), full_page=True)
    assert _axe_serious(friend) == []  # the conversation open, right to left

    # After a reload the conversation's history comes back, oldest first.
    friend.reload()
    message = friend.locator(f".friend-list [data-friend='{player_id}'] [data-action=message-friend]")
    message.wait_for()
    message.click()
    _until(lambda: _texts(friend, ".direct li[data-line] .text") == ["Good luck, Layla", "شكرا!"], SOCIAL_S)
