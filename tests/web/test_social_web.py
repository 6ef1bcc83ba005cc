"""Chat and friends in a real browser (issue 44, docs/rules.md §15): two players at a private
partnership table chat with quick phrases, each shown in the reader's language (English on a
desktop, Arabic right to left on a phone), with the unread badge; during a deal partners are
offered quick phrases only; the chat sits below the hand and never covers a card on the phone;
one reports a line and mutes its author (his view only), asks him to be friends and is
accepted; the friend is listed as in a game; from a new private table the host invites his
friend, and the invitation's link, opened by a player not signed in yet, takes him to that
table once he has signed in. axe-core scans the chat and the friends list. Chromium against
the platform as `trix up` runs it (tests/web/conftest.py), the browser and page fixtures of
test_browser."""

from __future__ import annotations

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
    tops = [b["y"] for b in (page.locator(lower).nth(i).bounding_box() for i in range(page.locator(lower).count())) if b]
    bottoms = [b["y"] + b["height"] for b in (page.locator(upper).nth(i).bounding_box() for i in range(page.locator(upper).count())) if b]
    return bool(tops) and bool(bottoms) and min(tops) >= max(bottoms)


def test_table_chat_in_both_languages_mute_report_a_friend_accepted_and_an_invitation_link(
    web_platform: WebPlatform, pages: Pages, tmp_path: Path
) -> None:
    host = pages.open("host", locale="en-US", viewport=DESKTOP, bypass_csp=True)
    _sign_in(host, web_platform.url, "Host")
    host.select_option("#pv", label="Trix partnership")
    host.click("[data-action=host]")
    code = host.get_attribute("[data-code]", "data-code")
    assert code
    guest = pages.open("guest", locale="ar", viewport=PHONE, bypass_csp=True)
    _sign_in(guest, web_platform.url, "ريم")
    guest.fill("#code", code)
    guest.click("form.join button[type=submit]")
    _until(lambda: host.locator(".joined li").count() == 2, SOCIAL_S)
    host.click("[data-action=start-private]")
    for page in (host, guest):
        page.wait_for_selector(".table .chat [data-action=chat]")

    # A quick phrase from the host: the guest's badge counts it; he reads it in Arabic, the
    # host in English. During a deal partners are offered quick phrases only (the default).
    host.click("[data-action=chat]")
    host.wait_for_selector("[data-phrases-only]")
    assert host.locator("[data-chat-input]").count() == 0
    host.click(".chat-compose [data-phrase=greeting]")
    _until(lambda: _line(host, "greeting") == "Hello!", SOCIAL_S)
    _until(lambda: guest.locator(".chat .badge[data-unread='1']").count() == 1, SOCIAL_S)
    guest.click("[data-action=chat]")
    _until(lambda: _line(guest, "greeting") == "السلام عليكم", SOCIAL_S)
    assert guest.locator(".chat .badge").count() == 0  # read
    guest.click(".chat-compose [data-phrase=well_played]")
    _until(lambda: _line(host, "well_played") == "Well played!", SOCIAL_S)
    _until(lambda: _line(guest, "well_played") == "يعطيك العافية، لعب حلو", SOCIAL_S)
    # On the phone the chat is below the hand: it never covers a card.
    assert _below(guest, ".hand .cardbtn", ".chat"), "the chat overlaps the hand"
    guest.screenshot(path=str(tmp_path / "chat-ar-phone.png"), full_page=True)
    host.screenshot(path=str(tmp_path / "chat-en-desktop.png"), full_page=True)
    assert _axe_serious(guest) == []  # the chat open, right to left

    # The guest reports the host's greeting, asks him to be friends, then mutes him (his view only).
    host_id = host.locator(".chat-room[data-room=players] li[data-phrase=greeting]").last.get_attribute("data-author")
    assert host_id
    greeting = guest.locator(f".chat-room[data-room=players] li[data-author='{host_id}']").first
    greeting.locator("[data-action=line-menu]").click()
    greeting.locator(".report input").fill("spam")
    greeting.locator("[data-action=report]").click()
    _until(lambda: "تم الإبلاغ" in greeting.inner_text(), SOCIAL_S)
    greeting.locator("[data-action=add-friend]").click()
    _until(lambda: guest.locator(f".friends [data-friend='{host_id}']").count() == 1, SOCIAL_S)
    greeting.locator("[data-action=mute]").click()
    _until(lambda: guest.locator(f".chat-room li[data-author='{host_id}']").count() == 0, SOCIAL_S)
    host.click(".chat-compose [data-phrase=thank_you]")
    _until(lambda: _line(host, "thank_you") == "Thank you!", SOCIAL_S)
    assert guest.locator(f".chat-room li[data-author='{host_id}']").count() == 0  # muted: never shown

    # The host accepts; each lists the other as a friend, the host in a game.
    request = host.locator(".friends .requests li[data-friend]")
    _until(lambda: request.count() == 1, SOCIAL_S)
    guest_id = request.get_attribute("data-friend")
    request.locator("[data-action=accept]").click()
    _until(lambda: host.locator(f".friend-list [data-friend='{guest_id}']").count() == 1, SOCIAL_S)
    host_on_guest = guest.locator(f".friend-list [data-friend='{host_id}'] [data-presence]")

    def listed_in_game() -> bool:
        if host_on_guest.count() and host_on_guest.get_attribute("data-presence") == "inGame":
            return True
        return False

    _until(listed_in_game, SOCIAL_S)
    assert _axe_serious(host) == []  # the friends list beside the table

    # From a new private table the host invites his friend; the friend sees the invitation,
    # and its link, opened by a player not signed in yet, seats him there after he signs in.
    host.get_by_role("button", name="Leave the table").click()
    host.get_by_role("alertdialog").get_by_role("button", name="Leave", exact=True).click()
    host.wait_for_selector(".lobby")
    host.click("[data-action=host]")
    new_code = host.get_attribute("[data-code]", "data-code")
    assert new_code and new_code != code
    host.locator(f".friend-list [data-friend='{guest_id}'] [data-action=invite-friend]").click()
    invited = host.locator(f".friend-list [data-friend='{guest_id}'] [data-invited]")
    _until(lambda: invited.count() == 1, SOCIAL_S)
    link = invited.get_attribute("data-invited")
    assert link and "/invite/" in link
    _until(lambda: guest.locator(f".invitations [data-invitation-from='{host_id}']").count() == 1, SOCIAL_S)

    newcomer = pages.open("newcomer", locale="en-US", viewport=PHONE)
    newcomer.goto(web_platform.url.rstrip("/") + link[link.index("/invite/") :])
    newcomer.fill("#name", "Newcomer")
    newcomer.click("form.signin button[type=submit]")
    _until(lambda: host.locator(".joined li").count() == 2, SOCIAL_S)
    assert "Newcomer" in host.inner_text(".joined")
    assert "/invite/" not in newcomer.url  # the address is the app's again
