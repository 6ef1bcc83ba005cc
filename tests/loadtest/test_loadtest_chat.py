"""`trix loadtest ... --chat-every SECONDS` (issue 44, `trix.loadtest.chat`): the table's
seat-0 bot sends a line every SECONDS, each one different from the last (a repeat is
dropped), quick phrases in a partnership variant (free text is refused there during a deal);
every bot counts the lines it gets, the answers and the refusals apart from the actions; the
summary gives the social service's CPU ms per line of the measured window."""

from __future__ import annotations

import argparse
import asyncio
import itertools
import random
import threading

from trix.loadtest.arguments import add_loadtest_arguments
from trix.loadtest.chat import CHAT_REQUEST_PREFIX, TableChat, chat_summary
from trix.loadtest.worker import Stats
from trix.v1 import gateway_pb2, social_pb2


def test_chat_every_is_an_option_off_by_default() -> None:
    parser = argparse.ArgumentParser()
    add_loadtest_arguments(parser)
    assert parser.parse_args(["steady"]).chat_every == 0.0
    assert parser.parse_args(["steady", "--chat-every", "10"]).chat_every == 10.0


async def test_seat_zero_sends_a_different_line_each_period_and_the_others_none() -> None:
    stats = Stats()
    sent: list[gateway_pb2.SessionRequest] = []
    talker = TableChat(0.05, lambda: stats, random.Random(1), phrases=False)
    quiet = TableChat(0.05, lambda: stats, random.Random(2), phrases=False)
    talker.start(0, "T1", sent.append)
    quiet.start(2, "T1", sent.append)
    await asyncio.sleep(0.5)
    talker.stop()
    assert len(sent) >= 5
    texts = [r.social.send_chat.text for r in sent]
    assert all(a != b for a, b in itertools.pairwise(texts))
    assert all(r.request_id.startswith(CHAT_REQUEST_PREFIX) for r in sent)
    assert {r.social.send_chat.channel.id for r in sent} == {"T1"}
    partners: list[gateway_pb2.SessionRequest] = []
    phrases = TableChat(0.05, lambda: stats, random.Random(3), phrases=True)
    phrases.start(0, "T2", partners.append)
    await asyncio.sleep(0.2)
    phrases.stop()
    assert partners and all(r.social.send_chat.phrase_id for r in partners)


async def test_no_line_goes_out_before_the_window() -> None:
    window = threading.Event()
    sent: list[gateway_pb2.SessionRequest] = []
    chat = TableChat(0.05, Stats, random.Random(1), phrases=False, chatting=window)
    chat.start(0, "T1", sent.append)
    await asyncio.sleep(0.3)
    assert sent == []
    window.set()
    await asyncio.sleep(0.3)
    chat.stop()
    assert sent


def test_answers_lines_and_refusals_are_counted_as_chat() -> None:
    stats = Stats()
    chat = TableChat(10, lambda: stats, random.Random(1), phrases=False)
    answer = gateway_pb2.SessionResponse(
        social=gateway_pb2.SocialResponse(send_chat=social_pb2.SendChatResponse(delivered=True))
    )
    line = gateway_pb2.SessionResponse(social_event=social_pb2.SocialEvent(chat_line=social_pb2.ChatLine(text="hi")))
    refused = gateway_pb2.SessionResponse(
        request_id=f"{CHAT_REQUEST_PREFIX}3", error=gateway_pb2.ClientError(code="RESOURCE_EXHAUSTED")
    )
    action_error = gateway_pb2.SessionResponse(request_id="a1", error=gateway_pb2.ClientError(code="ABORTED"))
    assert chat.on_message("social", answer) and chat.on_message("social_event", line)
    assert chat.on_message("error", refused) and not chat.on_message("error", action_error)
    taken = stats.take()["chat"]
    assert taken == {"sent": 1, "delivered": 1, "refused": {"RESOURCE_EXHAUSTED": 1}}
    assert stats.take()["chat"] == {"sent": 0, "delivered": 0, "refused": {}}


def test_the_summary_gives_the_social_service_cpu_per_line() -> None:
    cpu = {"ms_per_s": {"social": 25.0, "gateway": 30.0}}
    silent = {"ms_per_s": {"social": 15.0, "gateway": 28.0}}
    summary = chat_summary({"sent": 400, "delivered": 1600, "refused": {}}, 200, 20.0, cpu, silent)
    assert summary["window_lines_per_s"] == 10.0 and summary["social_ms_per_line"] == 2.5
    assert summary["chat_ms_per_line"] == 1.0  # (25 - 15) ms/s over 10 lines/s
    assert (summary["lines_sent"], summary["lines_delivered"]) == (400, 1600)


def test_the_summary_gives_every_process_cpu_per_line_net_of_its_cost_per_action() -> None:
    """Each process's chat share: its window CPU less its silent settle's per action at the
    window's action rate, per line; the platform's sum leaves the bots out."""
    cpu = {"ms_per_s": {"social": 25.0, "gateway": 60.0, "bots": 50.0}}
    silent = {"ms_per_s": {"social": 15.0, "gateway": 50.0, "bots": 40.0}, "actions_per_s": 100.0}
    summary = chat_summary({"sent": 200}, 200, 20.0, cpu, silent, 110.0)
    # gateway: (60 - 50 x 110/100) / 10 lines/s; social (25 - 16.5) / 10
    assert summary["ms_per_line_by_process"] == {"social": 0.85, "gateway": 0.5, "bots": 0.6}
    assert summary["platform_ms_per_line"] == 1.35


def test_the_summary_gives_what_a_line_may_cost_within_5_percent_of_the_silent_run() -> None:
    """Issue 44's criterion as a budget per line: 5 % of the silent settle's platform ms per
    action (the bots left out) times the window's actions per line."""
    cpu = {"ms_per_s": {"social": 25.0, "gateway": 60.0, "bots": 50.0}}
    silent = {"ms_per_s": {"social": 15.0, "gateway": 50.0, "bots": 40.0}, "actions_per_s": 100.0}
    summary = chat_summary({"sent": 200}, 200, 20.0, cpu, silent, 120.0)
    assert summary["platform_ms_per_action_silent"] == 0.65  # (15 + 50) ms/s over 100 actions/s
    assert summary["budget_ms_per_line_within_5pct"] == 0.39  # 0.05 x 0.65 x 120 / 10
