"""A chat line as the gateway sends it (docs/adr/0031, amendment "a chat line over NATS"): a
NATS request on `trix.natsio.subjects.social_send_chat` as the gateway's own NATS user, the
writer the player token in `Trix-Caller`, his display name percent-encoded. The real social
and table services of `test_social_service`'s platform answer it; every refusal comes back
with its kind and the message a client is shown, as the gRPC door gives them."""

from __future__ import annotations

import urllib.parse

from nats.aio.msg import Msg
from test_social_service import PLAYERS_CHANNEL, SPECTATORS_CHANNEL, Platform, until
from test_social_service import platform as platform  # the fixture

from support.table import KEYS, token
from trix.natsio import subjects
from trix.runtime.identity import ROLE_PLAYER, ROLE_SERVICE, TOKEN_HEADER
from trix.v1 import common_pb2
from trix.v1 import social_pb2 as pb


async def ask(
    p: Platform, caller: str | None, table_id: str, text: str, *, kind: int = PLAYERS_CHANNEL, **fields: str
) -> Msg:
    """One line as the gateway sends it (`caller`: the token, None for none; `name`: the
    display name; `client_line_id`)."""
    request = pb.SendChatRequest(channel=pb.ChatChannel(kind=kind, id=table_id), text=text)  # type: ignore[arg-type]
    request.client_line_id = fields.get("client_line_id", "")
    headers = {TOKEN_HEADER: caller} if caller is not None else {}
    if "name" in fields:
        headers[subjects.SOCIAL_DISPLAY_NAME_HEADER] = urllib.parse.quote(fields["name"], safe="")
    if "sent_by" in fields:
        headers[subjects.SOCIAL_SENT_BY_HEADER] = fields["sent_by"]
    return await p.gateway_nc.request(
        subjects.social_send_chat(), request.SerializeToString(), timeout=10, headers=headers
    )


def sent(reply: Msg) -> pb.SendChatResponse:
    assert not (reply.headers or {}).get(subjects.SOCIAL_ERROR_HEADER), reply.data
    return pb.SendChatResponse.FromString(reply.data)


def refused(reply: Msg) -> tuple[str, str]:
    """(kind, message) of a refusal."""
    return (reply.headers or {}).get(subjects.SOCIAL_ERROR_HEADER, ""), reply.data.decode()


async def test_a_line_sent_over_nats_is_stored_once_delivered_and_shown_under_its_judged_name(
    platform: Platform,
) -> None:
    p = platform
    await p.create_table("nats-1", common_pb2.VARIANT_COMPLEX)
    p1 = token(ROLE_PLAYER, "p1")
    first = sent(await ask(p, p1, "nats-1", "salam all", name="ليلى\u202e", client_line_id="c-1"))
    assert first.delivered and first.line_id > 0
    p.clock.now += 5.0
    again = sent(await ask(p, p1, "nats-1", "salam all", name="ليلى\u202e", client_line_id="c-1"))
    assert again.line_id == first.line_id  # the client's retry: stored and sent once
    p.clock.now += 5.0
    assert sent(await ask(p, token(ROLE_PLAYER, "p2"), "nats-1", "hi", name="a fuck name")).delivered
    subject = subjects.social_channel_events("nats-1", "players")
    await until(lambda: len(p.inbox.lines(subject)) == 2, "both lines delivered")
    lines = p.inbox.lines(subject)
    # The bidi override cleaned off; a name the filter refuses is never shown (the seat's name, else the id).
    assert (lines[0].author_id, lines[0].author_name, lines[0].text) == ("p1", "ليلى", "salam all")
    assert (lines[1].author_id, lines[1].text) == ("p2", "hi")
    assert lines[1].author_name != "a fuck name"
    history = await p.social_service().history("p3", pb.ChatChannel(kind=PLAYERS_CHANNEL, id="nats-1"), 0, "")
    assert [line.line_id for line in history[0]][-1] == first.line_id


async def test_a_line_from_a_session_stream_comes_back_in_its_answer_and_its_event_names_that_session(
    platform: Platform,
) -> None:
    """The session that sent a line has it in its answer and is not sent it again: its event
    names the session (`Trix-Sent-By`) for the gateway to skip (docs/adr/0031); a line sent
    otherwise (the plain `Social` call) has no line in its answer and its event names none."""
    p = platform
    await p.create_table("nats-own", common_pb2.VARIANT_COMPLEX)
    own = sent(await ask(p, token(ROLE_PLAYER, "p1"), "nats-own", "salam", name="Layla", sent_by="s-1"))
    assert own.delivered and (own.line.line_id, own.line.author_id, own.line.text) == (own.line_id, "p1", "salam")
    assert own.line.author_name == "Layla" and own.line.channel.id == "nats-own"
    p.clock.now += 5.0
    plain = sent(await ask(p, token(ROLE_PLAYER, "p2"), "nats-own", "hi"))
    assert plain.delivered and plain.line_id > own.line_id and not plain.HasField("line")
    subject = subjects.social_channel_events("nats-own", "players")
    await until(lambda: len(p.inbox.lines(subject)) == 2, "both lines delivered")
    senders = [by for (s, e, _), by in zip(p.inbox.got, p.inbox.sent_by, strict=True) if s == subject]
    assert senders == ["s-1", ""]
    assert p.inbox.lines(subject)[0] == own.line


async def test_a_line_over_nats_is_refused_with_its_kind_and_a_message_a_client_can_show(platform: Platform) -> None:
    p = platform
    await p.create_table("nats-2", common_pb2.VARIANT_COMPLEX)
    kind, _ = refused(await ask(p, None, "nats-2", "who am I"))
    assert kind == "Unauthenticated"
    kind, _ = refused(await ask(p, "v2.player.p1.9999999999.forged", "nats-2", "forged"))
    assert kind == "Unauthenticated"
    admin = KEYS.token(ROLE_SERVICE, "admin")
    assert refused(await ask(p, admin, "nats-2", "as an operator")) == (
        "PermissionDenied",
        "a player's own token is needed",
    )
    w1 = token(ROLE_PLAYER, "w1")
    assert refused(await ask(p, w1, "nats-2", "I am only watching")) == (
        "PermissionDenied",
        "spectators write in the spectators' chat, never the players'",
    )
    assert sent(await ask(p, w1, "nats-2", "nice hand", kind=SPECTATORS_CHANNEL)).delivered
    p1 = token(ROLE_PLAYER, "p1")
    p.clock.now += 5.0
    assert sent(await ask(p, p1, "nats-2", "one")).delivered
    flood = await ask(p, p1, "nats-2", "two")
    assert refused(flood) == ("ResourceExhausted", "too fast: wait a moment before the next line")
    assert int((flood.headers or {})[subjects.SOCIAL_RETRY_AFTER_HEADER]) > 0
    assert refused(await ask(p, token(ROLE_PLAYER, "p3"), "nats-2", "x" * 281)) == (
        "InvalidArgument",
        "a line is at most 280 characters",
    )
    garbage = await p.gateway_nc.request(
        subjects.social_send_chat(), b"\xff\xff", timeout=10, headers={TOKEN_HEADER: p1}
    )
    assert refused(garbage) == ("InvalidArgument", "the chat line does not decode")
