"""Each service is declared once (`trix.declarations`): a service declared there, and nowhere
else, gets its NATS user and whitelist, its place in the generated nats.conf, its token keys
and its processes under `trix up`; and the platform's declarations agree with what is
provisioned and what the services run."""

from __future__ import annotations

import asyncio
import importlib.util
import json
import re
import sys
from collections import Counter
from pathlib import Path

import nats
import nats.errors
import pytest
from nats.js.api import AckPolicy, ConsumerConfig

from support.keys import SuiteKeys
from support.nats import AuthNats
from support.up import inspected_supervisor
from trix.declarations import (
    EDGE,
    SERVICES,
    Scaling,
    ServiceDeclaration,
    declaration,
    fronted_by_edge,
    keys_of,
    names_of,
    service_token_callers,
    signers,
)
from trix.natsio import names, permissions, serverconf
from trix.natsio.grants import Grants
from trix.natsio.provisioning import KV_BUCKETS, STREAMS
from trix.runtime.config import ConfigError
from trix.runtime.identity import ADMIN, PLAYER_KEY_ENV, SERVICE_KEY_ENV
from trix.scoring.config import ScoringConfig
from trix.up import parse_assignments

CHAT_DURABLE = "chat-results"
CHAT = ServiceDeclaration(
    name="chat",
    description="A throwaway service, declared here only.",
    grants=Grants(
        publish=("trix.chat.>",),
        subscribe=("trix.chat.>",),
        durable=((names.TABLE_RESULTS_STREAM, CHAT_DURABLE),),
    ),
    keys=(PLAYER_KEY_ENV,),
    callers=("gateway",),
    scaling=Scaling(replicas=2),
)
WITH_CHAT = (*SERVICES, CHAT)


def _allowed(user: str, services: tuple[ServiceDeclaration, ...] = WITH_CHAT) -> list[str]:
    publish = permissions.permissions_of(user, services)["publish"]
    assert isinstance(publish, dict)
    return list(publish["allow"])


def _denied(user: str, services: tuple[ServiceDeclaration, ...] = WITH_CHAT) -> list[str]:
    publish = permissions.permissions_of(user, services)["publish"]
    assert isinstance(publish, dict)
    return list(publish.get("deny", []))


def test_a_declared_service_is_a_nats_user_with_exactly_its_grants() -> None:
    assert permissions.service_users(WITH_CHAT) == (*permissions.SERVICE_USERS, "chat")
    assert permissions.users(WITH_CHAT)[-1] == permissions.PROVISIONER
    assert "chat" not in permissions.USERS  # the platform's own users are unchanged
    allow = _allowed("chat")
    assert "trix.chat.>" in allow
    assert f"$JS.API.CONSUMER.DURABLE.CREATE.{names.TABLE_RESULTS_STREAM}.{CHAT_DURABLE}" in allow
    assert not [a for a in allow if "TABLE_LOG" in a or "trix.table" in a]
    subscribe = permissions.permissions_of("chat", WITH_CHAT)["subscribe"]
    assert subscribe == {"allow": ["trix.chat.>", "_INBOX_chat.>"]}
    assert permissions.streams_of("chat", WITH_CHAT) == (names.TABLE_RESULTS_STREAM,)
    # Its durable is carved out of the streams others open ephemeral consumers on.
    assert f"$JS.API.CONSUMER.CREATE.{names.TABLE_RESULTS_STREAM}.{CHAT_DURABLE}" in _denied("table")
    assert not [d for d in _denied("table", SERVICES) if CHAT_DURABLE in d]
    with pytest.raises(ValueError, match="unknown service user 'chat'"):
        permissions.grants_of("chat")


def test_a_declared_service_is_in_the_generated_nats_config() -> None:
    conf = serverconf.kubernetes(services=WITH_CHAT)
    assert '"password": $NATS_PASSWORD_CHAT' in conf
    block = re.sub(r"\$NATS_PASSWORD_(\w+)", r'"\1"', conf.split("authorization ", 1)[1])
    by_name = {u["user"]: u for u in json.loads(block)["users"]}
    assert list(by_name) == list(permissions.users(WITH_CHAT))
    assert by_name["chat"]["permissions"] == permissions.permissions_of("chat", WITH_CHAT)
    assert by_name["table"]["permissions"] == permissions.permissions_of("table", WITH_CHAT)
    assert "NATS_PASSWORD_CHAT" not in serverconf.kubernetes()


def test_a_declared_service_gets_its_token_keys_and_trix_up_runs_it(tmp_path: Path) -> None:
    assert keys_of(WITH_CHAT)["chat"] == (PLAYER_KEY_ENV,)
    assert parse_assignments("chat=3", "--replicas", minimum=1, services=WITH_CHAT) == {"chat": 3}
    with pytest.raises(
        ValueError, match="NAME one of table, timers, scoring, matchmaking, competitions, social, gateway:"
    ):
        parse_assignments("chat=3", "--replicas", minimum=1)
    sup = inspected_supervisor(tmp_path, declarations=WITH_CHAT)
    sup.prepare()
    assert set(sup.passwords) == set(permissions.users(WITH_CHAT))
    sup.nats_node_child(sup.nats_nodes[0])
    assert permissions.authorization_block(sup.passwords, WITH_CHAT) in (tmp_path / "nats.conf").read_text()
    children = {c.name: c for c in sup.service_children()}
    assert list(children) == [*names_of(), "chat-1", "chat-2"]  # its declared replicas, started last
    for name in ("chat-1", "chat-2"):
        chat = children[name]
        assert chat.argv == [sys.executable, "-m", "trix.chat"]
        assert permissions.user_of(chat.env["TRIX_NATS_URL"]) == "chat"
        assert sup.passwords["chat"] in chat.env["TRIX_NATS_URL"]
        assert chat.env[PLAYER_KEY_ENV] and SERVICE_KEY_ENV not in chat.env
        assert chat.env["TRIX_INSTANCE"] == name
    # Its caller finds it; a service that does not call it does not.
    assert children["gateway"].env["TRIX_CHAT_TARGET"] == f"127.0.0.1:{children['chat-1'].grpc_port}"
    assert "TRIX_CHAT_TARGET" not in children["table"].env


async def test_the_nats_server_enforces_a_declared_service_whitelist(tmp_path: Path) -> None:
    server = AuthNats(tmp_path, users=permissions.users(WITH_CHAT), services=WITH_CHAT)
    server.start()
    violations: list[str] = []

    async def on_error(exc: Exception) -> None:
        violations.append(str(exc).lower())

    try:
        nc = await nats.connect(
            server.url("chat"), inbox_prefix=permissions.inbox_prefix("chat").encode(), error_cb=on_error
        )
        try:
            sub = await nc.subscribe("trix.chat.hello")
            await nc.publish("trix.chat.hello", b"hi")
            assert (await sub.next_msg(timeout=10)).data == b"hi"
            js = nc.jetstream(timeout=5)
            config = ConsumerConfig(durable_name=CHAT_DURABLE, ack_policy=AckPolicy.EXPLICIT)
            assert (await js.add_consumer(names.TABLE_RESULTS_STREAM, config)).name == CHAT_DURABLE
            with pytest.raises(nats.errors.TimeoutError):  # another's durable: refused by the server
                await js.add_consumer(names.TABLE_RESULTS_STREAM, ConsumerConfig(durable_name=names.SCORING_CONSUMER))
            await nc.subscribe(permissions.kv_subjects(names.TABLE_SECRETS_BUCKET))
            for _ in range(100):
                if len(violations) >= 2:
                    break
                await asyncio.sleep(0.05)
            assert any(names.SCORING_CONSUMER in v and "publish" in v for v in violations), violations
            assert any(names.TABLE_SECRETS_BUCKET in v and "subscription" in v for v in violations), violations
        finally:
            await nc.close()
    finally:
        server.stop()


# -- the platform's declarations --------------------------------------------------------


def test_every_stream_and_bucket_is_owned_by_one_service_and_provisioned() -> None:
    owned = Counter(n for s in SERVICES for n in (*s.streams, *s.buckets))
    assert [n for n, count in owned.items() if count > 1] == []
    assert set(owned) == {s.name for s in STREAMS} | {b.bucket for b in KV_BUCKETS}


def test_every_granted_stream_is_provisioned_and_every_durable_is_one_service_s() -> None:
    provisioned = {s.name for s in STREAMS} | {names.kv_stream(b.bucket) for b in KV_BUCKETS}
    for service in SERVICES:
        assert set(service.grants.streams) <= provisioned, service.name
    durables = Counter(d for s in SERVICES for d in s.grants.durable)
    assert [d for d, count in durables.items() if count > 1] == []


def test_each_declared_service_is_a_runnable_package_its_callers_declared() -> None:
    for service in SERVICES:
        assert importlib.util.find_spec(f"{service.module}.__main__") is not None, service.module
        assert set(service.callers) <= {*names_of(), EDGE}, service.name
    assert fronted_by_edge().name == "gateway"
    assert declaration("scoring").callers == ("gateway", "matchmaking", "competitions")
    # Service-role tokens: only from a calling service that signs (its own key), or a declared
    # token caller (the timers' commands to the table, the operators'): ADR 0028.
    assert service_token_callers("scoring") == ("matchmaking", "competitions")  # escrows: ADR 0030
    assert service_token_callers("matchmaking") == service_token_callers("gateway") == ()
    assert service_token_callers("table") == ("table", "timers", ADMIN)
    assert service_token_callers("timers") == (ADMIN,)
    assert signers() == ("table", "timers", "matchmaking", "competitions", ADMIN)  # never scoring nor the gateway
    timed = (*SERVICES, ServiceDeclaration("chat", "", Grants(), keys=(), callers=("gateway", "timers")))
    assert service_token_callers("chat", timed) == ("timers",)
    unsigned = (*SERVICES, ServiceDeclaration("chat", "", Grants(), keys=(), token_callers=("scoring",)))
    with pytest.raises(ValueError, match=r"token callers \['scoring'\] sign nothing"):
        service_token_callers("chat", unsigned)


def test_a_declaration_refuses_a_name_that_cannot_be_a_user_and_an_unknown_key() -> None:
    with pytest.raises(ValueError, match="lower-case letters and digits"):
        ServiceDeclaration(name="chat-2", description="", grants=Grants(), keys=())
    with pytest.raises(ValueError, match="unknown token keys"):
        ServiceDeclaration(name="chat", description="", grants=Grants(), keys=("TRIX_OTHER_KEY",))


def test_the_scoring_consumer_is_the_durable_its_user_is_granted_and_no_other() -> None:
    keys = SuiteKeys("declarations-tests").env("scoring")
    consumer = ScoringConfig.from_env(keys).consumer
    assert (names.TABLE_RESULTS_STREAM, consumer) in declaration("scoring").grants.durable
    assert ScoringConfig.from_env({**keys, "TRIX_SCORING_CONSUMER": consumer}).consumer == consumer
    with pytest.raises(ConfigError, match="TRIX_SCORING_CONSUMER: must be 'scoring'"):
        ScoringConfig.from_env({**keys, "TRIX_SCORING_CONSUMER": "scoring-2"})


def test_a_service_declared_with_one_writer_is_never_run_twice(tmp_path: Path) -> None:
    """The scoring service has one writer (its durable acks cumulatively: docs/adr/0004): its
    declaration caps it at one replica, and `trix up` refuses to run it twice. The competitions
    service, leased by shard since (docs/adr/0026), may run as many replicas as it has shards."""
    assert declaration("scoring").scaling.max_replicas == 1
    with pytest.raises(ValueError, match="scoring runs at most 1 replica"):
        inspected_supervisor(tmp_path, replicas={"scoring": 2})
    assert declaration("competitions").scaling.max_replicas > 1
    inspected_supervisor(tmp_path / "competitions", replicas={"competitions": 2})
