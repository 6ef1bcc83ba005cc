""" "Play again" after a finished game (issue 39): the web client finds a new match, then follows
the player's stream without a table id (the ticket leads to the table). The gateway still
remembered the finished table as the player's current one, so that stream resumed the old game
and the page showed its game-over screen again, never the new table. A new ticket makes the
ticket's table (none until matched) the current one. Over the Envoy edge, as the web client
talks to it (HTTP/JSON here, the same gateway calls)."""

from __future__ import annotations

import random
from typing import Any

import pytest
from gateway_support import Platform
from test_gateway_edge import Http, _action

pytestmark = pytest.mark.timeout(240)


def _play_to_the_end(web: Http, rng: random.Random) -> str:
    """Follow the player's stream (no table id) from the ticket to the game's end; the table id."""
    table_id, seat, acted = "", -1, ""
    for item in web.stream("Events", {"table_id": "", "after_sequence": "0"}):
        message = item["message"]
        if "ticket" in message and message["ticket"]["state"] == "TICKET_STATE_MATCHED":
            table_id, seat = message["ticket"]["table_id"], message["ticket"]["seat"]
        event: dict[str, Any] | None = message.get("event")
        if event is None:
            continue
        if "game_ended" in event:
            return table_id
        turn = event.get("turn_started")
        if turn is None or seat not in turn["seats"] or turn["turn_seq"] == acted:
            continue
        view = web.ok("GetView", {"table_id": table_id})["view"]
        if view["turn"]["turn_seq"] != turn["turn_seq"] or view["finished"]:
            continue
        action = _action(view, rng)
        if action is None:
            continue
        acted = turn["turn_seq"]
        action.update(table_id=table_id, action_id=f"again-{acted}", last_seen_sequence=event["sequence"])
        status, reply = web.call("SubmitAction", {"action": action})
        assert status in (200, 409, 400), (status, reply)
    raise AssertionError("the stream ended before the game did")


def test_play_again_follows_the_new_ticket_to_a_new_table_not_the_finished_game(platform: Platform) -> None:
    web = Http(platform.edge_url)
    signed = web.ok("SignIn", {"device_secret": "play-again-device-secret-0123456789", "display_name": "again"})
    web.token = signed["token"]
    wish = {"wish": {"variant": "VARIANT_COMPLEX"}}
    web.ok("FindMatch", wish)
    finished = _play_to_the_end(web, random.Random(39))
    assert finished

    again = web.ok("FindMatch", wish)["ticket"]
    assert again["ticket_id"]
    seen_tables: set[str] = set()
    for item in web.stream("Events", {"table_id": "", "after_sequence": "0"}):
        message = item["message"]
        if "event" in message:
            seen_tables.add(message["event"].get("table_id", ""))
            break
        if "ticket" in message and message["ticket"]["state"] == "TICKET_STATE_MATCHED":
            assert message["ticket"]["table_id"] != finished
            seen_tables.add(message["ticket"]["table_id"])
    assert seen_tables and finished not in seen_tables, (finished, seen_tables)
