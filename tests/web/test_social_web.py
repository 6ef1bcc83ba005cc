"""Chat and friends in a real browser (issue 44, docs/rules.md §15): a player at a partnership
table (English, desktop) and a spectator of it (Arabic, right to left, phone) chat with quick
phrases, each shown in the reader's language, with the unread badge; during a deal the player
is offered quick phrases only; the spectator writes free text in the spectators' channel, which
the player reads only once his setting says so; on the phone the chat sits below the cards and
never covers one. The spectator reports the player's line, asks him to be friends and mutes
him (his view only); the player accepts, and is listed to his friend as in a game. The friend
then hosts a private table and invites him: the invitation reaches the player, and its link,
opened by a player not signed in yet, seats that newcomer at the private table once he has
signed in. axe-core scans the chat and the friends list. Chromium against the platform as
`trix up` runs it (tests/web/conftest.py), the browser and page fixtures of test_browser."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from playwright.sync_api import Page
from test_browser import DESKTOP, PHONE, Pages, _axe_serious, _sign_in, _until, browser, pages

from conftest import WebPlatform

__all__ = ["browser", "pages"]  # the fixtures this module uses, shared with test_browser

pytestmark = pytest.mark.timeout(300)

SOCIAL_S = 30.0
"""A chat line, a friend request or a presence reaches the other page well within this."""


def _line(page: Page, phrase: str) -> str:
    """The text of the last line of that quick phrase in the page's players' chat ("" if none)."""
    lines = page.locator(f".chat-room[data-room=players] li[data-phrase={phrase}] .text")
    return lines.last.inner_text() if lines.count() else ""


def _below(page: Page, upper: str, lower: str) -> bool:
    """Whether every box of `lower` starts below the bottom of every box of `upper`."""
    tops = [
        b["y"] for b in (page.locator(lower).nth(i).bounding_box() for i in range(page.locator(lower).count())) if b
    ]
    bottoms = [
        b["y"] + b["height"]
        for b in (page.locator(upper).nth(i).bounding_box() for i in range(page.locator(upper).count()))
        if b
    ]
    return bool(tops) and bool(bottoms) and min(tops) >= max(bottoms)


def seated_and_watching(pages: Pages, url: str, player_name: str, friend_name: str) -> tuple[Page, Page]:
    """A player (English, desktop) seated at a partnership table of bots and a spectator of it
    (Arabic, phone), each with the table's chat shown."""
    player = pages.open("player", locale="en-US", viewport=DESKTOP, bypass_csp=True)
    _sign_in(player, url, player_name)
    player.click("[data-variant=TRIX_PARTNERSHIP]")  # bots fill the other seats at once (conftest)
    player.wait_for_selector(".table .chat [data-action=chat]")
    table_id = player.get_attribute("[data-table]", "data-table")
    assert table_id
    friend = pages.open("friend", locale="ar", viewport=PHONE, bypass_csp=True)
    _sign_in(friend, url, friend_name)
    friend.goto(f"{url}#/watch/{table_id}")
    friend.wait_for_selector(f".table [data-table='{table_id}']")
    friend.wait_for_selector(".table .chat [data-action=chat]")
    return player, friend


def test_table_chat_in_both_languages_mute_report_a_friend_accepted_and_an_invitation_link(
    web_platform: WebPlatform, pages: Pages, tmp_path: Path
) -> None:
    player, friend = seated_and_watching(pages, web_platform.url, "Host", "ريم")

    # The player's quick phrase: the spectator's badge counts it, he reads it in Arabic, the
    # player in English. During a deal partners are offered quick phrases only (the default).
    player.click("[data-action=chat]")
    player.wait_for_selector("[data-phrases-only]")
    assert player.locator("[data-chat-input]").count() == 0
    player.click(".chat-compose [data-phrase=greeting]")
    _until(lambda: _line(player, "greeting") == "Hello!", SOCIAL_S)
    _until(lambda: friend.locator(".chat .badge[data-unread='1']").count() == 1, SOCIAL_S)
    friend.click("[data-action=chat]")
    _until(lambda: _line(friend, "greeting") == "السلام عليكم", SOCIAL_S)
    assert friend.locator(".chat .badge").count() == 0  # read
    # The spectator writes in the spectators' channel, never the players'; the player reads
    # it once his setting says so.
    friend.fill("[data-chat-input]", "بالتوفيق يا شباب")
    friend.click(".chat-compose [data-action=send]")
    spectators = ".chat-room[data-room=spectators] li[data-line] .text"
    _until(lambda: "بالتوفيق يا شباب" in friend.locator(spectators).all_inner_texts(), SOCIAL_S)
    assert "بالتوفيق يا شباب" not in friend.locator(".chat-room[data-room=players]").inner_text()
    assert player.locator(".chat-room[data-room=spectators]").count() == 0
    player.check("[data-setting=show-spectators]")
    _until(lambda: "بالتوفيق يا شباب" in player.locator(spectators).all_inner_texts(), SOCIAL_S)
    assert "بالتوفيق يا شباب" not in player.locator(".chat-room[data-room=players]").inner_text()
    # The chat is below the felt and the hand: it never covers a card.
    assert _below(friend, ".felt", ".chat"), "the chat overlaps the table"
    assert _below(player, ".hand .cardbtn", ".chat"), "the chat overlaps the hand"
    friend.screenshot(path=str(tmp_path / "chat-ar-phone.png"), full_page=True)
    player.screenshot(path=str(tmp_path / "chat-en-desktop.png"), full_page=True)
    assert _axe_serious(friend) == []  # the chat open, right to left

    # The spectator reports the player's greeting, asks him to be friends, then mutes him.
    player_id = player.locator(".chat-room[data-room=players] li[data-phrase=greeting]").last.get_attribute(
        "data-author"
    )
    assert player_id
    greeting = friend.locator(f".chat-room[data-room=players] li[data-author='{player_id}']").first
    greeting.locator("[data-action=line-menu]").click()
    greeting.locator(".report input").fill("spam")
    greeting.locator("[data-action=report]").click()
    _until(lambda: "تم الإبلاغ" in greeting.inner_text(), SOCIAL_S)
    greeting.locator("[data-action=add-friend]").click()
    _until(lambda: friend.locator(f".friends [data-friend='{player_id}']").count() == 1, SOCIAL_S)
    greeting.locator("[data-action=mute]").click()
    _until(lambda: friend.locator(f".chat-room li[data-author='{player_id}']").count() == 0, SOCIAL_S)
    player.click(".chat-compose [data-phrase=thank_you]")
    _until(lambda: _line(player, "thank_you") == "Thank you!", SOCIAL_S)
    time.sleep(1.0)  # time for the line to reach the spectator, were it not muted
    assert friend.locator(f".chat-room li[data-author='{player_id}']").count() == 0  # muted: never shown

    # The player accepts; each lists the other as a friend, the player in a game.
    request = player.locator(".friends .requests li[data-friend]")
    _until(lambda: request.count() == 1, SOCIAL_S)
    friend_id = request.get_attribute("data-friend")
    request.locator("[data-action=accept]").click()
    _until(lambda: player.locator(f".friend-list [data-friend='{friend_id}']").count() == 1, SOCIAL_S)
    presence = friend.locator(f".friend-list [data-friend='{player_id}'] [data-presence]")
    _until(lambda: presence.count() == 1 and presence.get_attribute("data-presence") == "inGame", SOCIAL_S)
    assert _axe_serious(player) == []  # the friends list beside the table

    # The friend stops watching, hosts a private table and invites the player: the invitation
    # reaches him, and its link, opened by a player not signed in yet, seats that newcomer at
    # the private table once he has signed in.
    friend.click("[data-action=stop-watching]")
    friend.wait_for_selector(".lobby")
    friend.click("[data-action=host]")
    assert friend.get_attribute("[data-code]", "data-code")
    friend.locator(f".friend-list [data-friend='{player_id}'] [data-action=invite-friend]").click()
    invited = friend.locator(f".friend-list [data-friend='{player_id}'] [data-invited]")
    _until(lambda: invited.count() == 1, SOCIAL_S)
    link = invited.get_attribute("data-invited")
    assert link and "/invite/" in link
    _until(lambda: player.locator(f".invitations [data-invitation-from='{friend_id}']").count() == 1, SOCIAL_S)

    newcomer = pages.open("newcomer", locale="en-US", viewport=PHONE)
    newcomer.goto(web_platform.url.rstrip("/") + link[link.index("/invite/") :])
    newcomer.fill("#name", "Newcomer")
    newcomer.click("form.signin button[type=submit]")
    _until(lambda: friend.locator(".joined li").count() == 2, SOCIAL_S)
    assert "Newcomer" in friend.inner_text(".joined")
    assert "/invite/" not in newcomer.url  # the address is the app's again
