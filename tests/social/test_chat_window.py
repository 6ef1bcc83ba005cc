"""A gateway's chat lines go to the social service in windows (`trix.gateway.social_adapters.
NatsChatLines`, docs/adr/0031, amendment "a chat line's cost, again"): the lines of one
window leave together once it closes, never before, and a line after it opens the next one.
A real nats-server; the social service's side is a plain responder on its subject."""

from __future__ import annotations

import asyncio
import time

from nats.aio.msg import Msg

from support.nats import NatsServer
from trix.gateway.social_adapters import NatsChatLines
from trix.natsio import subjects
from trix.natsio.connection import NatsConnection
from trix.runtime.identity import TOKEN_HEADER
from trix.v1 import social_pb2 as pb

WINDOW_S = 1.0


def line(text: str) -> pb.SendChatRequest:
    return pb.SendChatRequest(channel=pb.ChatChannel(kind=pb.CHAT_CHANNEL_KIND_TABLE_PLAYERS, id="T1"), text=text)


async def test_the_lines_of_one_window_leave_together_when_it_closes(nats_server: NatsServer) -> None:
    conn = NatsConnection(nats_server.url, "test-chat-window", streams=(), buckets=())
    await conn.connect(give_up_after_s=30)
    arrived: dict[str, tuple[float, str]] = {}

    async def answer(msg: Msg) -> None:
        text = pb.SendChatRequest.FromString(msg.data).text
        arrived[text] = (time.monotonic(), (msg.headers or {}).get(TOKEN_HEADER, ""))
        await msg.respond(pb.SendChatResponse(delivered=True, line_id=len(arrived)).SerializeToString())

    try:
        await conn.client.subscribe(subjects.social_send_chat(), cb=answer)
        await conn.client.flush()
        lines = NatsChatLines(conn, lambda player: f"token-of-{player}", 10, window_s=WINDOW_S)
        opened = time.monotonic()
        first = asyncio.ensure_future(lines.send("p1", line("one")))
        await asyncio.sleep(WINDOW_S / 2)
        answers = await asyncio.gather(first, lines.send("p2", line("two")))
        assert [a.line_id for a in answers] in ([1, 2], [2, 1]) and all(a.delivered for a in answers)
        assert arrived["one"][0] - opened >= WINDOW_S  # nothing leaves before its window closes
        # Together (one write, one read): a window of its own would have sent it WINDOW_S / 2 later.
        assert abs(arrived["two"][0] - arrived["one"][0]) < WINDOW_S / 4
        assert (arrived["one"][1], arrived["two"][1]) == ("token-of-p1", "token-of-p2")

        third_sent = time.monotonic()  # the window closed: this line opens the next one
        assert (await lines.send("p1", line("three"))).line_id == 3
        assert arrived["three"][0] - third_sent >= WINDOW_S
    finally:
        await conn.drain()
