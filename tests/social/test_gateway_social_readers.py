"""The gateway's readers of the social service's events (`trix.gateway.social_api`, ADR
0031): one subscription per subject while any session of this replica reads it, dropped with
its last reader; a table's channels read by who follows it (a private table's invited
spectators none); an event pushed to the social sessions of its readers' players, never to a
player the social service named hidden. The NATS side is an in-memory `SocialEventsPort`."""

from __future__ import annotations

import asyncio
from typing import Any

from trix.gateway.config import GatewayConfig
from trix.gateway.ports import SPECTATOR
from trix.gateway.service import GatewayService
from trix.gateway.session import Session
from trix.gateway.social_api import OnSocialMessage, SocialGateway
from trix.gateway.tokens import Principal
from trix.natsio import subjects
from trix.v1 import gateway_pb2, social_pb2


class Subscriptions:
    """`SocialEventsPort` in memory: the subjects subscribed now, and every change in order."""

    def __init__(self) -> None:
        self.on_message: OnSocialMessage | None = None
        self.now: set[str] = set()
        self.changes: list[str] = []

    async def subscribe(self, subject: str) -> None:
        self.now.add(subject)
        self.changes.append(f"+{subject}")

    async def unsubscribe(self, subject: str) -> None:
        self.now.discard(subject)
        self.changes.append(f"-{subject}")


class NoTables:
    def hear_causes(self, listener: Any) -> None:
        pass


def gateway() -> tuple[GatewayService, Subscriptions]:
    env = {"TRIX_NATS_URL": "none", "TRIX_PLAYER_TOKEN_KEY": "k" * 32, "TRIX_GATEWAY_TOKEN_KEY": "g" * 32}
    service = GatewayService(GatewayConfig.from_env(env), NoTables(), NoTables(), NoTables())  # type: ignore[arg-type]
    port = Subscriptions()
    service.social = SocialGateway(None, port)
    return service, port


def session(service: GatewayService, player_id: str) -> Session:
    return Session(service, Principal(player_id, player_id, 0), interactive=False)


def pushed(s: Session) -> list[gateway_pb2.SessionResponse]:
    out = []
    while not s.outbox.empty():
        item = s.outbox.get_nowait()
        if isinstance(item, gateway_pb2.SessionResponse):
            out.append(item)
    return out


async def settled() -> None:
    for _ in range(10):
        await asyncio.sleep(0)


async def test_a_subject_is_subscribed_once_while_read_and_dropped_with_its_last_reader() -> None:
    service, port = gateway()
    hub = service.social
    amal, badr, badr_watching = session(service, "amal"), session(service, "badr"), session(service, "badr")
    hub.attach(amal)
    hub.attach(badr)
    hub.follow(amal, "T1", 0)
    hub.follow(badr_watching, "T1", SPECTATOR)
    hub.follow(badr_watching, "T2", SPECTATOR, invited=True)  # a private table's: none of its chat
    await settled()
    players, spectators = (
        subjects.social_channel_events("T1", "players"),
        subjects.social_channel_events("T1", "spectators"),
    )
    assert port.now == {
        subjects.social_player_events("amal"),
        subjects.social_player_events("badr"),
        players,
        spectators,
    }
    assert port.changes.count(f"+{players}") == 1  # two readers, one subscription

    line = social_pb2.SocialEvent(chat_line=social_pb2.ChatLine(author_id="cyra", text="salam"))
    assert port.on_message is not None
    port.on_message(players, line.SerializeToString(), "")
    # badr reads T1 through his watching session: the line goes to his social session.
    assert [m.social_event for m in pushed(amal)] == [line]
    assert [m.social_event for m in pushed(badr)] == [line]
    assert pushed(badr_watching) == []  # not a social session: nothing pushed there
    port.on_message(players, line.SerializeToString(), "badr,dina")  # cyra blocked by badr
    assert len(pushed(amal)) == 1 and pushed(badr) == []
    port.on_message(spectators, line.SerializeToString(), "")
    assert pushed(amal) == [] and len(pushed(badr)) == 1  # amal is seated: the spectators' chat is not his

    for s in (amal, badr, badr_watching):
        hub.detach(s)
    await settled()
    assert port.now == set() and hub.readers == {} and hub.interests == {} and hub.social_sessions == {}


async def test_the_session_that_sent_a_line_is_not_sent_it_again_but_his_other_sessions_are() -> None:
    """A line sent on a Session stream comes back in its answer (`SendChatResponse.line`):
    its event skips that session alone (`Trix-Sent-By`), not his other sessions nor the
    other readers (docs/adr/0031, amendment "a line read once a reader")."""
    service, port = gateway()
    hub = service.social
    amal, amal_web, badr = session(service, "amal"), session(service, "amal"), session(service, "badr")
    for s, seat in ((amal, 0), (amal_web, 0), (badr, 1)):
        hub.attach(s)
        hub.follow(s, "T1", seat)
    await settled()
    line = social_pb2.SocialEvent(chat_line=social_pb2.ChatLine(author_id="amal", text="salam"))
    assert port.on_message is not None
    port.on_message(subjects.social_channel_events("T1", "players"), line.SerializeToString(), "", amal.session_id)
    assert pushed(amal) == []
    assert [m.social_event for m in pushed(amal_web)] == [line] and [m.social_event for m in pushed(badr)] == [line]
    assert hub.delivered == 2


async def test_a_session_reads_the_chat_of_its_latest_tables_only() -> None:
    service, port = gateway()
    watcher = session(service, "eli")
    for i in range(20):
        service.social.follow(watcher, f"T{i}", SPECTATOR)
    await settled()
    tables = {s.rsplit(".", 1)[-1] for s in port.now}
    assert tables == {f"T{i}" for i in range(12, 20)}  # MAX_TABLE_CHANNELS, the newest


async def test_a_seated_players_setting_reads_the_spectators_channel_until_turned_off() -> None:
    """docs/rules.md §15: a player reads the spectators' channel only if his own setting says
    so; on, its lines reach him (but a reader named hidden); the setting holds for a follow
    that starts later and goes with his last social session."""
    service, port = gateway()
    hub = service.social
    amal, badr = (session(service, p) for p in ("amal", "badr"))
    for seat, social in enumerate((amal, badr)):  # amal's table on another session of hers
        hub.attach(social)
        hub.follow(session(service, "amal") if social is amal else social, "T1", seat)
    spectators = subjects.social_channel_events("T1", "spectators")
    line = social_pb2.SocialEvent(chat_line=social_pb2.ChatLine(author_id="eli", text="yalla"))
    await settled()
    assert spectators not in port.now  # off by default

    await hub.handle(
        "amal",
        gateway_pb2.SocialRequest(set_spectator_chat=gateway_pb2.SetSpectatorChatRequest(table_id="T1", on=True)),
    )
    assert spectators in port.now  # answered once subscribed
    assert port.on_message is not None
    port.on_message(spectators, line.SerializeToString(), "")
    assert [m.social_event for m in pushed(amal)] == [line] and pushed(badr) == []  # badr's setting is off
    port.on_message(spectators, line.SerializeToString(), "amal")  # eli muted or blocked by amal
    assert pushed(amal) == []

    hub.follow(session(service, "amal"), "T1", 2)  # a later follow of his reads it too
    assert len(hub.readers[spectators]) == 2
    hub.set_spectator_chat("amal", "T1", on=False)
    await settled()
    assert spectators not in port.now and "amal" not in hub.spectator_chat
    hub.set_spectator_chat("amal", "T1", on=True)
    hub.detach(amal)  # his last social session: the setting goes with it
    assert "amal" not in hub.spectator_chat


class HeldLines:
    """A `SocialPort` whose chat lines are answered when the test lets them go."""

    def __init__(self) -> None:
        self.go = asyncio.Event()
        self.asked: list[str] = []

    async def call(
        self, player_id: str, request: gateway_pb2.SocialRequest, display_name: str = "", sent_by: str = ""
    ) -> gateway_pb2.SocialResponse:
        self.asked.append(sent_by)
        await self.go.wait()
        return gateway_pb2.SocialResponse(send_chat=social_pb2.SendChatResponse(delivered=True, line_id=9))


async def test_a_chat_line_on_the_session_stream_holds_back_none_of_its_next_requests() -> None:
    """A line waits for its window (docs/adr/0031): the stream's next request (an action, a
    ping) is answered meanwhile, the line's answer comes when the social service gives it,
    and a session closed before that cancels it."""
    service, _ = gateway()
    held = HeldLines()
    service.social = SocialGateway(held, None)
    amal = session(service, "amal")
    chat = gateway_pb2.SocialRequest(send_chat=social_pb2.SendChatRequest(text="salam"))
    await asyncio.wait_for(amal.handle(gateway_pb2.SessionRequest(request_id="c1", social=chat)), 5)
    await asyncio.wait_for(amal.handle(gateway_pb2.SessionRequest(request_id="p1", ping=True)), 5)
    await settled()
    assert [m.request_id for m in pushed(amal)] == ["p1"] and held.asked == [amal.session_id]
    held.go.set()
    await settled()
    assert [(m.request_id, m.social.send_chat.line_id) for m in pushed(amal)] == [("c1", 9)]

    held.go.clear()
    await amal.handle(gateway_pb2.SessionRequest(request_id="c2", social=chat))
    await settled()
    assert len(amal.chats) == 1
    await asyncio.wait_for(amal.close(), 5)
    assert amal.chats == set() and pushed(amal) == []
