"""Issue 39: the wait for a quick match says what is happening. A queued player's session
carries the queue's status (players found so far, when bots fill in) from matchmaking
through the gateway; the page shows the players found and a countdown to the bots, and
Cancel. The platform as `trix up` runs it (conftest), but with bots filling a free table's
empty seats after BOT_FILL_S instead of at once, so that there is a wait to show."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import pytest
import test_browser
from test_browser import Pages, _axe_serious, _sign_in

from conftest import TLS, WebPlatform
from trix.client import GatewayClient
from trix.embedded import EmbeddedPlatform
from trix.v1 import common_pb2, gateway_pb2, matchmaking_pb2

pytestmark = pytest.mark.timeout(300)

BOT_FILL_S = 8.0

browser = test_browser.browser
pages = test_browser.pages
"""test_browser's fixtures: a chromium per module, fresh pages per test (failures kept)."""


@pytest.fixture(scope="module")
def slow_platform(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[WebPlatform, str]]:
    """The platform with a BOT_FILL_S wait for bots; the edge's page and the gateway's target."""
    state = tmp_path_factory.mktemp("quick-match-platform")
    env = {
        "TRIX_GATEWAY_RATE_PER_S": "400",
        "TRIX_GATEWAY_RATE_BURST": "400",
        "TRIX_MATCHMAKING_BOT_FILL_S": str(BOT_FILL_S),
    }
    embedded = EmbeddedPlatform(state, fresh=True, env=env, edge=True, tls=TLS)
    try:
        target = embedded.start()
        yield WebPlatform(embedded.edge_url + "/", state, embedded.ca_file), target
    finally:
        embedded.stop()


@pytest.fixture(scope="module")
def web_platform(slow_platform: tuple[WebPlatform, str]) -> WebPlatform:
    """This module's platform for test_browser's fixtures (conftest's has no wait for bots)."""
    return slow_platform[0]


def _seconds(ts: object) -> float:
    return ts.seconds + ts.nanos / 1e9  # type: ignore[attr-defined]


async def test_a_queued_player_is_told_the_players_found_and_when_bots_fill_in(
    slow_platform: tuple[WebPlatform, str],
) -> None:
    web, target = slow_platform
    clients = [GatewayClient(target, ca_file=web.ca_file) for _ in range(2)]
    try:
        streams = []
        for i, client in enumerate(clients):
            await client.sign_in(f"quick-match-session-device-{i}-0123456789", f"Q{i}")
            streams.append(client.open())
            wish = matchmaking_pb2.GameWish(variant=common_pb2.VARIANT_COMPLEX)
            client.send(gateway_pb2.SessionRequest(find_match=gateway_pb2.FindMatchRequest(wish=wish), request_id="q"))

        async def until_matched(stream: object) -> list[gateway_pb2.SessionResponse]:
            seen: list[gateway_pb2.SessionResponse] = []
            async for m in stream:  # type: ignore[attr-defined]
                assert not m.HasField("error"), m.error
                seen.append(m)
                if m.HasField("ticket") and m.ticket.state == matchmaking_pb2.TICKET_STATE_MATCHED:
                    return seen
            raise AssertionError("the session ended before the match")

        first, second = await asyncio.wait_for(asyncio.gather(*(until_matched(s) for s in streams)), BOT_FILL_S + 30)
        for seen in (first, second):
            statuses = [m.queue for m in seen if m.HasField("queue")]
            assert statuses, "no queue status while waiting"
            assert {m.request_id for m in seen if m.HasField("queue")} == {"q"}
            both = [q for q in statuses if q.players_waiting == 2]
            assert both, [q.players_waiting for q in statuses]
            left = _seconds(both[0].bots_fill_at) - _seconds(both[0].server_time)
            assert 0 < left < BOT_FILL_S
            # The ticket's last word is the match: no status after it.
            assert seen[-1].HasField("ticket")
        tables = {seen[-1].ticket.table_id for seen in (first, second)}
        assert len(tables) == 1  # the two found each other; bots took the other seats
    finally:
        for client in clients:
            await client.close()


def _bots_in(page: object) -> int:
    return int(page.get_attribute("[data-bots-in]", "data-bots-in") or "-1")  # type: ignore[attr-defined]


def test_the_wait_shows_the_players_found_a_countdown_to_the_bots_and_cancel(
    web_platform: WebPlatform, pages: Pages
) -> None:
    first = pages.open("first", locale="ar", bypass_csp=True)
    second = pages.open("second", locale="en-US")
    _sign_in(first, web_platform.url, "سارة")
    _sign_in(second, web_platform.url, "Sam")
    first.click("[data-variant=TRIX_PARTNERSHIP]")
    first.wait_for_selector("[data-queue] [data-players='1']")
    assert "الكمبيوتر يأخذ المقاعد الفارغة بعد" in first.inner_text("[data-queue]")
    assert 0 < _bots_in(first) <= BOT_FILL_S
    second.click("[data-variant=TRIX_PARTNERSHIP]")
    first.wait_for_selector("[data-players='2']")
    second.wait_for_selector("[data-players='2']")
    assert "Players found: 2 of 4" in second.inner_text("[data-queue]")
    # One countdown for both: bots fill in when the first to come has waited its time.
    assert abs(_bots_in(first) - _bots_in(second)) <= 1
    before = _bots_in(first)
    first.wait_for_timeout(1500)
    assert _bots_in(first) < before  # it counts down between two statuses
    assert _axe_serious(first) == []  # the wait, in Arabic
    # Cancel, by keyboard: the first player leaves the queue for the lobby; the second is alone again.
    first.focus("[data-action=cancel]")
    first.keyboard.press("Enter")
    first.wait_for_selector(".lobby")
    second.wait_for_selector("[data-players='1']")
    # The countdown ends: bots take the empty seats and the second player sits at a table.
    second.wait_for_selector(".table", timeout=int((BOT_FILL_S + 30) * 1000))
    assert second.locator("[data-queue]").count() == 0
