"""An entrant's own competition seat through the gateway (issue 43, docs/rules.md §10), on the
whole platform (`platform_support.start_platform`: real processes, the timers included).

`trix play --enter` (its `CompetitionTerminal`, in the test's event loop: the test types the
lines a player would, from the legal moves his own stream names) opens his table as soon as a
round seats him, which takes his seat from auto-play: the game waits for him at every decision
and he plays each one himself to the end. The other entrants follow their seats with
`EventsRequest.auto_play` (their seeds given empty, so the first deal does not wait for them)
and leave them to the bot; a player without a seat there cannot open one (PERMISSION_DENIED)."""

from __future__ import annotations

import argparse
import asyncio
import io
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from platform_support import close_all, enter_all, field_of, free_options, organise, platform_running

from trix.client import GatewayClient
from trix.embedded import EmbeddedPlatform
from trix.play_competitions import CompetitionTerminal
from trix.rules import card_text
from trix.v1 import common_pb2, gateway_pb2
from trix.v1 import competitions_pb2 as cpb


@pytest.fixture(scope="module")
def platform(tmp_path_factory: pytest.TempPathFactory) -> Iterator[EmbeddedPlatform]:
    with platform_running(tmp_path_factory.mktemp("competition-seat")) as p:
        yield p


async def _type_moves(terminal: CompetitionTerminal, typed: list[str], first: asyncio.Event) -> None:
    """What the player types on each of his turns: the first legal contract or card, no double."""
    answered: set[tuple[str, int]] = set()
    while True:
        st, turn = terminal.state, terminal.state.turn
        key = (st.table_id, turn.turn_seq if turn is not None else 0)
        if turn is not None and not turn.client_seeds and key not in answered and st.my_turn():
            line = ""
            if turn.decision == common_pb2.DECISION_CONTRACT and turn.legal_contracts:
                line = str(int(turn.legal_contracts[0]))
            elif turn.decision == common_pb2.DECISION_DOUBLE:
                line = "-"
            elif turn.decision == common_pb2.DECISION_CARD and turn.legal_cards:
                line = card_text(turn.legal_cards[0].id)
            if line:
                answered.add(key)
                typed.append(line)
                terminal.lines.put_nowait(line + "\n")
                first.set()
        await asyncio.sleep(0.02)


async def test_trix_play_takes_the_entrants_seat_and_he_plays_every_decision_of_it(
    platform: EmbeddedPlatform, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    auto = await field_of(platform.gateway_target, 2, "auto")
    outsider = (await field_of(platform.gateway_target, 1, "x"))[0]
    others = [*auto, outsider]
    client = GatewayClient(platform.gateway_target)
    typed: list[str] = []
    try:
        me = await client.sign_in(f"seat-taker-{uuid.uuid4().hex}", "Taker")
        options = free_options(cpb.COMPETITION_FORMAT_KNOCKOUT, capacity=4, rounds=1, lead_ms=4_000)
        options.speed = cpb.COMPETITION_SPEED_NORMAL  # the §9 timers: a loaded box never times him out
        cid = (await organise(outsider, options)).competition_id
        await enter_all(auto, cid)  # 3 of 4 with the player: the 75 % a start needs, a bot in the fourth seat
        args = argparse.Namespace(
            lang="en", seed="", deals=0, auto_play=False, private="", host_private=False, device_file=tmp_path / "d"
        )
        terminal = CompetitionTerminal(client, args, cid, enter=True)
        terminal.out = out = io.StringIO()
        first = asyncio.Event()
        typist = asyncio.ensure_future(_type_moves(terminal, typed, first))
        table_id = f"{cid}-r1-t0"
        try:
            following = asyncio.ensure_future(asyncio.wait_for(terminal._follow(), 180))
            await asyncio.wait([following, asyncio.ensure_future(first.wait())], return_when=asyncio.FIRST_COMPLETED)
            # While he plays: a player without a seat there cannot open one (PERMISSION_DENIED).
            resume = gateway_pb2.EventsRequest(table_id=table_id)
            outsider.client.send(gateway_pb2.SessionRequest(resume=resume, request_id="not-mine"))
            assert await following == 0
        finally:
            typist.cancel()
        assert outsider.errors == ["PERMISSION_DENIED: you hold no seat at this table"]
        text = out.getvalue() + capsys.readouterr().out  # the table's lines, the competition's
        assert f"entered {cid}: accepted" in text and f"round 1: your table {table_id}, seat " in text, text
        assert f"table {table_id} ended" in text and "final ranking: " in text, text
        # The game waited for him at each of his decisions: a deal's cards at least, all his own.
        cards = [line for line in typed if len(line) == 2 and not line.isdigit() and line != "-"]
        assert len(cards) >= 13, typed
        assert "! " not in text and "refused" not in text, text
        assert me and terminal.state.table_id == table_id
    finally:
        await client.close()
        await close_all(others)
