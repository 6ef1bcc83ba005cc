"""Competitions in a real browser (issue 43): a player finds a listed knockout in the
Competitions tab (fee, prize, entrants of the capacity, the refund rule), registers, and at the
start his table opens by itself, which takes his seat from auto-play (docs/rules.md §10): the
table's "let the bot play" switch hands his seat to the bot and takes it back (in Arabic, while
the first deal waits for the seeds); he plays his first cards himself, card by card, then lets
the bot play the rest, and a few cards of his final if his team went on (luck: the bracket is
asserted for either outcome; the other entrants are the test's, who never come: their seats are
auto-played, the empty ones bots); the bracket updates by itself as the tables end, any table
can be watched; after the final the competition file is checked in the browser (every table's
record by the Verify page's checks, the digest) and, once the review period is over, the
payouts and his final place are shown. In English on a desktop for the player, in Arabic on a
phone for a spectator following the same bracket; axe-core on the tab and the page in both.
Chromium against the platform as `trix up` runs it (tests/web/conftest.py)."""

from __future__ import annotations

import secrets
import time
from pathlib import Path
from typing import Any

import grpc
import pytest
from playwright.sync_api import Page
from playwright.sync_api import TimeoutError as PlaywrightTimeout
from test_browser import DESKTOP, PHONE, Pages, _axe_serious, _play, _sign_in, _until, browser, pages

from conftest import COMPETITION_REVIEW_S, WebPlatform
from trix.v1 import common_pb2, competitions_pb2, gateway_pb2, gateway_pb2_grpc

__all__ = ["browser", "pages"]  # the fixtures this module uses, shared with test_browser

pytestmark = pytest.mark.timeout(600)

START_S = 7.0
"""The competition starts this long after it is created: the browser player registers and the
spectator sees its empty bracket before (a few seconds on a quiet box)."""
ENTRANTS = 5
"""The test's own entrants besides the browser player: 6 of 8 seats, the 75 % a start needs."""
ROUND_S = 120.0
"""A round: its seed turn (the players' seats wait for them, §11), his clicks, the bots' moves:
well within this, generous for CI."""


class Guest:
    """A player of the test's that is not a browser: a guest account at the gateway's gRPC port."""

    def __init__(self, platform: WebPlatform, name: str) -> None:
        if platform.ca_file:
            creds = grpc.ssl_channel_credentials(Path(platform.ca_file).read_bytes())
            self.channel = grpc.secure_channel(platform.gateway, creds)
        else:
            self.channel = grpc.insecure_channel(platform.gateway)
        self.stub = gateway_pb2_grpc.GatewayServiceStub(self.channel)
        signed = self.stub.SignIn(
            gateway_pb2.SignInRequest(device_secret=secrets.token_hex(24), display_name=name), timeout=30
        )
        self.metadata = (("authorization", f"Bearer {signed.token}"),)

    def call(self, method: str, request: Any) -> Any:
        return getattr(self.stub, method)(request, metadata=self.metadata, timeout=30)


def _organise(organiser: Guest) -> str:
    """A listed, free knockout of COMPLEX partnership (8 deals a game), 2 rounds for 8 players
    (two tables of two teams, then the final), fast timers, bots filling the empty seats."""
    starts = int((time.time() + START_S) * 1000)
    options = competitions_pb2.CompetitionOptions(
        variant=common_pb2.VARIANT_COMPLEX_PARTNERSHIP,
        format=competitions_pb2.COMPETITION_FORMAT_KNOCKOUT,
        rounds=2,
        capacity=8,
        starts_at_ms=starts,
        registration_closes_at_ms=starts,
        entry_fee=0,
        speed=competitions_pb2.COMPETITION_SPEED_FAST,
        admission=competitions_pb2.ADMISSION_AUTO,
        seating=competitions_pb2.SEATING_ORDER_RANDOM,
        bot_fill=True,
        visibility=competitions_pb2.VISIBILITY_LISTED,
    )
    made = organiser.call(
        "OrganiseCompetition", gateway_pb2.OrganiseCompetitionRequest(options=options, request_id=secrets.token_hex(8))
    )
    return str(made.competition.competition_id)


def _opened_a_table(page: Page, pages: Pages) -> bool:
    """Whether the app asked for a seat's view: a table opened as the player's own, by itself
    (nothing in the test opens one). Waiting in the page lets playwright count its calls."""
    page.wait_for_timeout(100)
    return pages.calls["player"]["GetView"] >= 1


def _table(page: Page) -> str:
    """The table the page shows ("" for none, or when it is going away)."""
    try:
        return page.get_attribute("[data-table]", "data-table", timeout=250) or ""
    except PlaywrightTimeout:
        return ""


LET_THE_BOT_PLAY = {"en": "Let the bot play", "ar": "دع الكمبيوتر يلعب"}
"""The table's switch (docs/rules.md §10: his competition seat to the bot, and back), by its
accessible name in each language."""


def _let_the_bot_play(page: Page, lang: str, *, on: bool) -> None:
    """Flip the switch; its state is the table's (his seat's `bot`), shown once the table says so."""
    switch = page.get_by_role("switch", name=LET_THE_BOT_PLAY[lang])
    switch.click()
    page.wait_for_selector(f"[data-action=auto-play][aria-checked={str(on).lower()}]")


def _play_then_let_the_bot_play(page: Page, cards: int) -> None:
    """His own `cards` cards (the table waits for him at each decision), then "let the bot play":
    every other seat of his table is played by the bot or auto-play, so the game ends at once."""
    table = page.get_attribute("[data-table]", "data-table") or ""  # his table is on: waited for
    played = _play(page, until=time.monotonic() + ROUND_S, stop_after_cards=cards)
    assert played["card"] == cards, played
    page.get_by_role("switch", name=LET_THE_BOT_PLAY["en"]).click()  # the game over at once, the switch with it
    _until(lambda: page.locator("[data-finished]").count() == 1 or _table(page) not in ("", table), 60)


def _stage(page: Page) -> str:
    return page.get_attribute("[data-competition-page]", "data-stage") or ""


def test_a_player_registers_plays_follows_the_bracket_and_checks_the_result_in_both_languages(
    web_platform: WebPlatform, pages: Pages, tmp_path: Path
) -> None:
    # The player (English, desktop) and a spectator (Arabic, phone) sign in.
    player = pages.open("player", locale="en-US", viewport=DESKTOP, bypass_csp=True)
    _sign_in(player, web_platform.url, "Reem")
    watcher = pages.open("watcher", locale="ar-SA", viewport=PHONE, bypass_csp=True)
    _sign_in(watcher, web_platform.url, "مشاهد")
    # The competition is organised (its start is START_S away) and the test's entrants enter it.
    cid = _organise(Guest(web_platform, "Organiser"))
    for i in range(ENTRANTS):
        Guest(web_platform, f"Entrant {i + 1}").call(
            "EnterCompetition", gateway_pb2.EnterCompetitionRequest(competition_id=cid)
        )

    # The tab lists it, open, with its entrants of the capacity and the refund rule; he registers.
    player.click("nav a[href='#/competitions']")
    row = player.locator(f"[data-competition='{cid}']")
    row.wait_for()
    assert row.get_attribute("data-stage") == "registration"
    assert "5 of 8" in row.locator("[data-entrants]").inner_text()
    assert "Free" in row.inner_text() and "Knockout · 2 rounds" in row.inner_text()
    assert "half the entry fee back" in player.inner_text("[data-refund-rule]")
    player.screenshot(path=str(tmp_path / "competitions-en-desktop.png"), full_page=True)
    row.locator("[data-action=register]").click()
    player.wait_for_selector(f"[data-competition-page='{cid}'] [data-status=registered]")
    assert "6 of 8" in player.inner_text("[data-entrants]")

    # The spectator follows the same competition.
    watcher.click("nav a[href='#/competitions']")
    watcher.locator(f"[data-competition='{cid}'] [data-open]").click()
    watcher.wait_for_selector(f"[data-competition-page='{cid}'] [data-bracket]")
    assert "لست في هذه المسابقة" in watcher.inner_text("[data-status]")
    assert "كمبلكس شراكة · خروج المغلوب · جولتان" in watcher.inner_text(".facts")  # two rounds, in Arabic's dual
    assert watcher.locator("[data-round]").count() == 2 and watcher.locator("[data-empty]").count() == 3
    assert _axe_serious(watcher) == []  # the competition's page, right to left

    # The start: his table opens by itself and takes his seat from auto-play (§10). While its
    # first deal waits for the seats' seeds (§11, the others' are auto-played), he lets the bot
    # play his seat and takes it back with the table's switch, in Arabic; then the game waits
    # for him at his every decision: he plays his first cards himself and lets the bot play
    # the rest. If his team went on, his final opens by itself: a few cards of his there too.
    _until(lambda: _opened_a_table(player, pages), START_S + ROUND_S)
    first = player.get_attribute("[data-table]", "data-table") or ""
    player.wait_for_selector("[data-action=auto-play][aria-checked=false]")
    assert player.locator(".hand .cardbtn").count() == 0  # the seed turn: nothing dealt yet
    player.click("button[aria-label='Language']")
    _let_the_bot_play(player, "ar", on=True)
    assert "الكمبيوتر يلعب مقعدك" in player.inner_text(".auto-play")
    player.screenshot(path=str(tmp_path / "table-auto-play-ar-desktop.png"))
    _let_the_bot_play(player, "ar", on=False)
    player.click("button[aria-label='اللغة']")
    _play_then_let_the_bot_play(player, cards=6)
    final = "[data-round='2'] [data-comp-table][data-ended='1']"
    went_on: list[str] = []  # his final, once seen open (a loaded page may not answer a read in time)

    def final_opened_or_ended() -> bool:
        if (table := _table(player)) not in ("", first):
            went_on.append(table)
        return bool(went_on) or watcher.locator(final).count() == 1

    _until(final_opened_or_ended, ROUND_S)
    if went_on:  # his team went on: the final is his to play as well
        _play_then_let_the_bot_play(player, cards=4)

    # The spectator's bracket updated by itself: both first-round tables ended, a team of two
    # went on from each, the final drawn and played; any table can be watched.
    _until(lambda: watcher.locator(final).count() == 1, ROUND_S)
    assert watcher.locator("[data-empty]").count() == 0
    assert watcher.locator("[data-round='1'] [data-comp-table][data-ended='1']").count() == 2
    assert watcher.locator("[data-round='1'] [data-on='1']").count() == 4
    # Whether his team went on is the deals' luck: the bracket says which, as his page did.
    assert watcher.locator("[data-round='2'] [data-comp-table]:has-text('Reem')").count() == len(went_on[:1])
    assert "تأهل" in watcher.inner_text("[data-round='1']")
    watcher.screenshot(path=str(tmp_path / "bracket-ar-phone.png"), full_page=True)
    watcher.locator("[data-round='2'] [data-watch]").click()
    watcher.wait_for_selector("[data-finished]")
    watcher.get_by_role("button", name="لعبة جديدة").click()
    watcher.wait_for_selector(f"[data-competition-page='{cid}'] [data-bracket]")

    # Back on the competition's page: his final place, the review period, and the result checked
    # in the browser table by table (the Verify page's checks on each record) with the digest.
    if player.locator("[data-finished]").count():  # his last table's result, if it was still on
        player.get_by_role("button", name="New game").click()
    player.wait_for_selector(f"[data-competition-page='{cid}'] [data-status=placed]")
    place = int(player.inner_text("[data-status] bdi").strip())
    ranking = player.locator("[data-ranking] li").all_inner_texts()
    assert len(ranking) == 4 and "Reem" in ranking[place - 1], (place, ranking)
    assert _stage(player) in ("review", "finished")
    if _stage(player) == "review":
        assert player.locator("#complaint-text").count() == 1  # complaints during the review only
        assert player.get_attribute("[data-payouts]", "data-payouts") == "later"
    player.click("[data-action=check-competition]")
    player.wait_for_selector("[data-comp-verdict]", timeout=120_000)
    assert player.get_attribute("[data-comp-verdict]", "data-comp-verdict") == "match"
    assert player.locator("[data-comp-check=table][data-status=ok]").count() == 3
    assert player.locator("[data-comp-check][data-status=bad]").count() == 0
    assert _axe_serious(player) == []  # the result and its check

    # While the review period runs, he organises one of his own for tomorrow on the Competitions
    # tab (its page opens), enters it and leaves it again; then back to the one he played.
    player.click("nav a[href='#/competitions']")
    player.click("details.create-competition summary")
    player.select_option("select[name=start]", "1440")
    player.click("[data-action=create-competition]")
    player.wait_for_selector("[data-competition-page][data-stage=registration]")
    own = player.get_attribute("[data-competition-page]", "data-competition-page")
    assert own
    player.click("a[href='#/competitions']")
    mine = player.locator(f"[data-competition='{own}']")
    mine.locator("[data-action=register]").click()
    player.wait_for_selector(f"[data-competition-page='{own}'] [data-status=registered]")
    player.click("a[href='#/competitions']")
    mine.locator("[data-action=leave]").click()
    player.wait_for_selector("[role=status]:has-text('You left')")
    mine.locator("[data-action=register]").wait_for()  # the tab read again: he may register again
    assert _axe_serious(player) == []  # the Competitions tab
    player.locator(f"[data-competition='{cid}'] [data-open]").click()
    player.wait_for_selector(f"[data-competition-page='{cid}'] [data-status=placed]")

    # After the review period: the payouts settled (a free competition without a prize settles
    # nothing, and says so), no complaint any more; in Arabic too.
    _until(lambda: _stage(player) == "finished", COMPETITION_REVIEW_S + 60)
    player.wait_for_selector("[data-payouts=none]")
    assert "Nothing to pay" in player.inner_text("[data-payouts]")
    assert player.locator("#complaint-text").count() == 0
    assert player.get_attribute("[data-status]", "data-status") == "placed"
    player.screenshot(path=str(tmp_path / "result-en-desktop.png"), full_page=True)
    _until(lambda: _stage(watcher) == "finished", 30)
    watcher.wait_for_selector("[data-payouts=none]")
    assert "لا شيء يُدفع" in watcher.inner_text("[data-payouts]")
    assert _axe_serious(watcher) == []
    watcher.screenshot(path=str(tmp_path / "result-ar-phone.png"), full_page=True)
