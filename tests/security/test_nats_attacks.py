"""Issue 18, findings 1-3: the attacks a compromised or buggy service would try on NATS,
each refused by the server for every NATS user that does not own the data or the
subject, on a bare nats-server with the generated permissions and on `trix up`'s own
NATS (its real services created the consumers attacked there). Each test first shows the
owner can do what the others are refused (the data is there: the refusal is not vacuous)
and afterwards that the attack changed nothing."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable

import nats
import pytest
from nats.errors import TimeoutError as NatsTimeout
from nats.js.api import AckPolicy, ConsumerConfig, StorageType, StreamConfig, StreamSource
from nats.js.errors import NotFoundError
from security_support import HELD, REFUSED, Backend, Conn, attempt, connected, report

from trix.natsio import names, permissions, subjects
from trix.v1 import events_pb2

TABLE = "victim-table"
SECRET = b"server-seed-of-a-live-game"
PRIVATE_LOG = "TABLE_LOG"
SECRETS_STREAM = names.kv_stream(names.TABLE_SECRETS_BUCKET)


async def _seed(backend: Backend) -> None:
    """The table's private data of a live game: its server seed and a log entry."""
    async with connected(backend, "table") as table:
        js = table.nc.jetstream(timeout=20)
        await (await js.key_value("table_secrets")).put(TABLE, SECRET)
        await js.publish(subjects.table_log(TABLE), b'{"hand": "the dealt hands"}')


def _durables() -> list[tuple[str, str, str]]:
    """(owner, stream, durable) of every service's own durable consumer."""
    return [(u, s, d) for u in permissions.SERVICE_USERS for s, d in permissions.grants_of(u).durable]


async def _ensure_durables(backend: Backend) -> None:
    """Each service's durables: on `trix up` its real services created them (waited for),
    on a bare server each owner creates its own (which its permissions allow)."""
    for owner, stream, durable in _durables():
        async with connected(backend, owner) as conn:
            js = conn.nc.jetstream(timeout=20)
            for _ in range(300):
                try:
                    await js.consumer_info(stream, durable)
                    break
                except NotFoundError:
                    if backend.name != "trix up":
                        config = ConsumerConfig(durable_name=durable, ack_policy=AckPolicy.EXPLICIT)
                        await js.add_consumer(stream, config)
                        break
                    await asyncio.sleep(0.2)
            else:
                raise AssertionError(f"{owner}'s durable {durable} on {stream} never appeared")


def _refused_all(lines: list[str]) -> None:
    not_refused = [line for line in lines if not line.endswith(REFUSED)]
    assert not not_refused, "\n".join(not_refused)


async def test_no_service_user_may_declare_a_stream_mirroring_the_table_secrets(backend: Backend) -> None:
    await _seed(backend)
    lines = []
    for user in permissions.SERVICE_USERS:
        name = f"STOLEN_SECRETS_{user.upper()}"
        config = StreamConfig(name=name, mirror=StreamSource(name=SECRETS_STREAM), storage=StorageType.MEMORY)
        async with connected(backend, user) as conn:
            js = conn.nc.jetstream(timeout=20)
            outcome = await attempt(conn, js.add_stream(config=config), f"$JS.API.STREAM.CREATE.{name}")
        lines.append(report(backend, f"mirror {SECRETS_STREAM}", user, outcome))
        async with connected(backend, permissions.PROVISIONER) as admin:
            with pytest.raises(NotFoundError):  # nothing was declared
                await admin.nc.jetstream(timeout=20).stream_info(name)
    _refused_all(lines)


async def test_no_service_user_may_declare_a_stream_sourcing_the_table_log(backend: Backend) -> None:
    await _seed(backend)
    lines = []
    for user in permissions.SERVICE_USERS:
        name = f"STOLEN_LOG_{user.upper()}"
        config = StreamConfig(name=name, sources=[StreamSource(name=PRIVATE_LOG)], storage=StorageType.MEMORY)
        async with connected(backend, user) as conn:
            js = conn.nc.jetstream(timeout=20)
            outcome = await attempt(conn, js.add_stream(config=config), f"$JS.API.STREAM.CREATE.{name}")
        lines.append(report(backend, f"source {PRIVATE_LOG}", user, outcome))
        async with connected(backend, permissions.PROVISIONER) as admin:
            with pytest.raises(NotFoundError):
                await admin.nc.jetstream(timeout=20).stream_info(name)
    _refused_all(lines)


async def test_only_the_table_reads_a_table_secret(backend: Backend) -> None:
    await _seed(backend)
    key = f"$KV.table_secrets.{TABLE}"
    async with connected(backend, "table") as table:  # the owner reads it
        got = await table.nc.jetstream(timeout=20).get_msg(SECRETS_STREAM, subject=key)
        assert got.data == SECRET
    lines = []
    for user in (u for u in permissions.USERS if u != "table"):
        async with connected(backend, user) as conn:
            js = conn.nc.jetstream(timeout=20)
            direct = js.get_msg(SECRETS_STREAM, subject=key, direct=True)
            outcome = await attempt(conn, direct, f"$JS.API.DIRECT.GET.{SECRETS_STREAM}.{key}")
            lines.append(report(backend, "direct get of a table secret", user, outcome))
            stored = js.get_msg(SECRETS_STREAM, subject=key)
            outcome = await attempt(conn, stored, f"$JS.API.STREAM.MSG.GET.{SECRETS_STREAM}")
            lines.append(report(backend, "message get of a table secret", user, outcome))
            watch = js.add_consumer(SECRETS_STREAM, ConsumerConfig(ack_policy=AckPolicy.NONE))
            outcome = await attempt(conn, watch, f"$JS.API.CONSUMER.CREATE.{SECRETS_STREAM}")
            lines.append(report(backend, "consumer on the table secrets", user, outcome))
    _refused_all(lines)


async def _connect_outcome(url: str) -> str:
    errors: list[str] = []

    async def on_error(exc: Exception) -> None:
        errors.append(str(exc))

    try:
        nc = await nats.connect(
            url, allow_reconnect=False, max_reconnect_attempts=0, connect_timeout=10, error_cb=on_error
        )
    except Exception as exc:  # noqa: BLE001 - the refusal is what is looked for
        said = " ".join([str(exc), *errors]).lower()
        return REFUSED if "authorization" in said else f"failed otherwise ({type(exc).__name__}: {exc})"
    await nc.close()
    return "ALLOWED"


async def test_nobody_connects_to_nats_without_a_users_password(backend: Backend) -> None:
    """Finding 3: `trix up`'s NATS had no users; a local process read seeds and hands. Now an
    anonymous connection and a known user with a wrong password are refused (the server's
    authorization violation), like every server with the generated permissions."""
    url = backend.url("table")
    scheme, _, rest = url.partition("://")
    address = rest.rpartition("@")[2]
    lines = [
        report(backend, "connect to NATS without a user", "anyone", await _connect_outcome(f"{scheme}://{address}")),
        report(
            backend,
            "connect to NATS as the table with a wrong password",
            "anyone",
            await _connect_outcome(f"{scheme}://table:not-the-password@{address}"),
        ),
    ]
    _refused_all(lines)


async def _subscribe_outcome(backend: Backend, user: str, subject: str) -> str:
    """What happens when `user` subscribes to `subject` (REFUSED, or ALLOWED)."""
    async with connected(backend, user) as conn:

        async def sniff() -> None:
            await conn.nc.subscribe(subject)
            await conn.nc.flush(timeout=20)
            await asyncio.sleep(1.0)  # the refusal comes asynchronously

        return await attempt(conn, sniff(), subject)


async def test_no_user_may_listen_to_the_table_services_replies(backend: Backend) -> None:
    """The table's reads of its secrets come back to its inbox: nobody else may subscribe there."""
    lines = []
    inbox = f"{permissions.inbox_prefix('table')}.>"
    for user in (u for u in permissions.USERS if u != "table"):
        outcome = await _subscribe_outcome(backend, user, inbox)
        lines.append(report(backend, "subscribe to the table's reply inbox", user, outcome))
    _refused_all(lines)


async def _stored_count(backend: Backend, reader: str, stream: str) -> int:
    async with connected(backend, reader) as conn:
        return int((await conn.nc.jetstream(timeout=20).stream_info(stream)).state.messages)


async def test_only_scoring_writes_its_journal(backend: Backend) -> None:
    forged = b'{"kind": "posting", "player": "forger", "amount": 1000000}'
    before = await _stored_count(backend, "scoring", "SCORING_JOURNAL")
    lines = []
    for user in (u for u in permissions.USERS if u != "scoring"):
        async with connected(backend, user) as conn:
            js = conn.nc.jetstream(timeout=20)
            outcome = await attempt(conn, js.publish(subjects.scoring_journal(), forged), subjects.scoring_journal())
        lines.append(report(backend, "write the scoring journal", user, outcome))
    assert await _stored_count(backend, "scoring", "SCORING_JOURNAL") == before
    _refused_all(lines)


async def test_only_the_gateway_and_the_table_read_a_tables_feed_with_every_seats_hand(backend: Backend) -> None:
    """A table's feed carries each seat's own copies (its hand, its legal moves, docs/rules.md
    §14) for the gateways, which give each seat only its own (issue 16): the gateway may
    subscribe to it, and the table, which writes it and whose gRPC streams follow it
    (`TableBus.events`); every other user is refused, the timers included (they read the
    public subject)."""
    lines = []
    feed = subjects.table_feed(TABLE)
    for user in permissions.USERS:
        outcome = await _subscribe_outcome(backend, user, feed)
        expected = "ALLOWED" if user in ("gateway", "table") else REFUSED
        lines.append(report(backend, "subscribe to a table's feed (every seat's hand)", user, outcome, expected))
    assert all(line.startswith(HELD) for line in lines), "\n".join(lines)


async def test_only_the_table_publishes_table_events(backend: Backend) -> None:
    """The table's events travel on core NATS (issue 16) and its results, which scoring
    settles money and ratings from, on TABLE_RESULTS: nobody but the table publishes either,
    nor says which shards a replica serves (`trix.table.served`)."""
    table_id = "forged-table"
    forged = events_pb2.TableEventBatch(events=[events_pb2.Event(table_id=table_id, sequence=1)]).SerializeToString()
    result = events_pb2.Event(table_id=table_id, sequence=1)
    result.game_ended.record_json = "{}"
    lines = []
    for user in (u for u in permissions.USERS if u != "table"):
        async with connected(backend, user) as conn:
            js = conn.nc.jetstream(timeout=20)
            subject = subjects.public_events(table_id)
            outcome = await attempt(conn, conn.nc.publish(subject, forged), subject)
            lines.append(report(backend, "forge a public table event", user, outcome))
            subject = subjects.table_feed(table_id)
            outcome = await attempt(conn, conn.nc.publish(subject, forged), subject)
            lines.append(report(backend, "forge a table's feed (the seats' own copies)", user, outcome))
            subject = subjects.table_results(table_id)
            outcome = await attempt(conn, js.publish(subject, result.SerializeToString()), subject)
            lines.append(report(backend, "forge a table result (a GameEnded)", user, outcome))
            subject = subjects.table_served()  # its callers would send their commands again
            outcome = await attempt(conn, conn.nc.publish(subject, b"0,1"), subject)
            lines.append(report(backend, "say it serves a table shard", user, outcome))
    async with connected(backend, "table") as table:
        js = table.nc.jetstream(timeout=20)
        with pytest.raises(NotFoundError):  # nothing stored
            await js.get_last_msg(names.TABLE_RESULTS_STREAM, subjects.table_results(table_id))
    _refused_all(lines)


MATCH_ANNOUNCERS = ("matchmaking", "competitions")
"""Who makes tables by MatchFormed: matchmaking, and the competitions service for its rounds
(docs/adr/0026): nobody else."""


async def test_only_matchmaking_and_competitions_announce_matches(backend: Backend) -> None:
    forged = events_pb2.Event(table_id="forged-match").SerializeToString()
    before = await _stored_count(backend, "table", "MATCHES")
    lines = []
    for user in (u for u in permissions.USERS if u not in MATCH_ANNOUNCERS):
        async with connected(backend, user) as conn:
            js = conn.nc.jetstream(timeout=20)
            outcome = await attempt(conn, js.publish(subjects.match_formed(), forged), subjects.match_formed())
        lines.append(report(backend, "forge a MatchFormed", user, outcome))
    assert await _stored_count(backend, "table", "MATCHES") == before
    _refused_all(lines)


async def test_no_user_deletes_another_services_consumer(backend: Backend) -> None:
    await _ensure_durables(backend)
    lines = []
    for user in permissions.USERS:
        async with connected(backend, user) as conn:
            js = conn.nc.jetstream(timeout=20)
            for owner, stream, durable in _durables():
                if owner == user:
                    continue
                subject = f"$JS.API.CONSUMER.DELETE.{stream}.{durable}"
                outcome = await attempt(conn, js.delete_consumer(stream, durable), subject)
                lines.append(report(backend, f"delete {owner}'s consumer {durable}", user, outcome))
    for owner, stream, durable in _durables():  # every one still there
        async with connected(backend, owner) as conn:
            try:
                await conn.nc.jetstream(timeout=20).consumer_info(stream, durable)
            except (NotFoundError, NatsTimeout) as exc:
                raise AssertionError(f"{owner}'s consumer {durable} on {stream} is gone") from exc
    _refused_all(lines)


async def test_the_provisioner_declares_streams_but_reads_no_message(backend: Backend) -> None:
    """The one user that may declare a mirror cannot read a message of it (or of anything)."""
    await _seed(backend)
    name = "PROVISIONER_MIRROR"
    async with connected(backend, permissions.PROVISIONER) as admin:
        js = admin.nc.jetstream(timeout=20)
        config = StreamConfig(name=name, mirror=StreamSource(name=SECRETS_STREAM), storage=StorageType.MEMORY)
        await js.add_stream(config=config)
        try:
            outcome = await attempt(admin, js.get_msg(name, seq=1, direct=True), f"$JS.API.DIRECT.GET.{name}")
            lines = [report(backend, "provisioner reads its own mirror", "provisioner", outcome)]
            watch = js.add_consumer(name, ConsumerConfig(ack_policy=AckPolicy.NONE))
            outcome = await attempt(admin, watch, f"$JS.API.CONSUMER.CREATE.{name}")
            lines.append(report(backend, "provisioner opens a consumer on it", "provisioner", outcome))
        finally:
            await js.delete_stream(name)
    _refused_all(lines)


async def test_only_the_competitions_service_writes_competition_events(backend: Backend) -> None:
    """A competition's stored events are its truth (docs/adr/0026): its owner appends them,
    nobody else; the competitions service itself may (the refusals are not vacuous)."""
    subject = subjects.competition_events("forged-competition")
    async with connected(backend, "competitions") as owner:
        await owner.nc.jetstream(timeout=20).publish(subject, b"by its owner")
    before = await _stored_count(backend, "competitions", names.COMPETITIONS_STREAM)
    lines = []
    for user in (u for u in permissions.USERS if u != "competitions"):
        async with connected(backend, user) as conn:
            js = conn.nc.jetstream(timeout=20)
            outcome = await attempt(conn, js.publish(subject, b"forged"), subject)
        lines.append(report(backend, "forge a competition event", user, outcome))
    assert await _stored_count(backend, "competitions", names.COMPETITIONS_STREAM) == before
    _refused_all(lines)


def _table_and_coins_attacks(conn: Conn) -> list[tuple[str, str, Awaitable[object]]]:
    """What a service that is not the table, the gateway or scoring tries: command a table,
    speak for a player's presence, write the scoring journal, read a table's private log."""
    js = conn.nc.jetstream(timeout=20)
    return [
        ("command a table", subjects.table_command(TABLE), conn.nc.publish(subjects.table_command(TABLE), b"x")),
        ("forge presence", subjects.presence("p1"), js.publish(subjects.presence("p1"), b"x")),
        ("write the scoring journal", subjects.scoring_journal(), js.publish(subjects.scoring_journal(), b"x")),
        (
            "read a table's private log",
            f"$JS.API.STREAM.MSG.GET.{PRIVATE_LOG}",
            js.get_msg(PRIVATE_LOG, subject=subjects.table_log(TABLE)),
        ),
    ]


async def test_the_competitions_user_commands_no_table_and_moves_no_coins(backend: Backend) -> None:
    """The competitions service makes tables only by MatchFormed and reads only their stored
    results: it may not command a table, speak for a player's presence, write the scoring
    journal, index a player's table, read a table's private log or a table's every-seat feed."""
    lines = []
    async with connected(backend, "competitions") as conn:
        js = conn.nc.jetstream(timeout=20)
        attacks = (
            *_table_and_coins_attacks(conn),
            (
                "index a player's table",
                f"$KV.{names.PLAYER_TABLES_BUCKET}.p1",
                js.publish(f"$KV.{names.PLAYER_TABLES_BUCKET}.p1", b"x"),
            ),
        )
        for attack, subject, op in attacks:
            lines.append(report(backend, attack, "competitions", await attempt(conn, op, subject)))
    lines.append(
        report(
            backend,
            "subscribe to a table's feed (every seat's hand)",
            "competitions",
            await _subscribe_outcome(backend, "competitions", subjects.table_feed(TABLE)),
        )
    )
    _refused_all(lines)


CHAT_SUBJECTS = (
    subjects.table_chat(TABLE, spectators=False),
    subjects.direct_chat("p1", "p2"),
    subjects.competition_chat("forged-competition"),
    subjects.social_reports(),
)
"""One subject of each chat stream and of the reports (docs/adr/0027)."""


async def test_only_the_social_service_writes_chat(backend: Backend) -> None:
    """Chat lines and reports are the social service's: no other service writes a line into
    a table's, a pair's or a competition's chat, nor forges a report; the social service may."""
    streams = (
        names.SOCIAL_TABLE_CHAT_STREAM,
        names.SOCIAL_DIRECT_STREAM,
        names.SOCIAL_COMPETITION_CHAT_STREAM,
        names.SOCIAL_REPORTS_STREAM,
    )
    async with connected(backend, "social") as owner:
        for subject in CHAT_SUBJECTS:
            await owner.nc.jetstream(timeout=20).publish(subject, b"by its owner")
    before = [await _stored_count(backend, "social", s) for s in streams]
    lines = []
    for user in (u for u in permissions.USERS if u != "social"):
        async with connected(backend, user) as conn:
            js = conn.nc.jetstream(timeout=20)
            for subject in CHAT_SUBJECTS:
                outcome = await attempt(conn, js.publish(subject, b"forged"), subject)
                lines.append(report(backend, f"write chat ({subject})", user, outcome))
    assert [await _stored_count(backend, "social", s) for s in streams] == before
    _refused_all(lines)


async def test_no_other_service_forges_the_social_services_events(backend: Backend) -> None:
    """The gateways forward `trix.social.evt.>` to players' sessions: only the social service
    publishes there (a forged line or friend notice would reach a player)."""
    await _refused_to_all_but(backend, "social", "forge a social event", subjects.social_player_events("p1"))


async def _refused_to_all_but(backend: Backend, owner: str, attack: str, subject: str) -> None:
    """Every user but `owner` is refused a publish on `subject`."""
    lines = []
    for user in (u for u in permissions.USERS if u != owner):
        async with connected(backend, user) as conn:
            outcome = await attempt(conn, conn.nc.publish(subject, b"forged"), subject)
        lines.append(report(backend, attack, user, outcome))
    _refused_all(lines)


async def test_the_social_user_reads_no_hand_and_commands_no_table(backend: Backend) -> None:
    """The social service knows the tables from their stored results only (public events,
    docs/rules.md §14): it may not subscribe to a table's feed (every seat's hand), read TABLE_LOG or a table's seed,
    publish a table command, speak for a player's presence or write the scoring journal."""
    await _seed(backend)
    lines = []
    async with connected(backend, "social") as conn:
        js = conn.nc.jetstream(timeout=20)
        attacks = (
            *_table_and_coins_attacks(conn),
            (
                "read a table's seed",
                f"$JS.API.STREAM.MSG.GET.{SECRETS_STREAM}",
                js.get_msg(SECRETS_STREAM, subject=f"$KV.{names.TABLE_SECRETS_BUCKET}.{TABLE}"),
            ),
        )
        for attack, subject, op in attacks:
            lines.append(report(backend, attack, "social", await attempt(conn, op, subject)))
    for attack, subject in (
        ("subscribe to a table's feed (every seat's hand)", subjects.table_feed(TABLE)),
        ("subscribe to every table's feed", subjects.all_table_feeds()),
        ("subscribe to table commands", subjects.all_table_commands()),
    ):
        lines.append(report(backend, attack, "social", await _subscribe_outcome(backend, "social", subject)))
    _refused_all(lines)


async def test_the_social_user_is_refused_the_tables_event_batches(backend: Backend) -> None:
    """The tables' core event batches are the move path (one each action): the social service
    reads the few stored results a game instead (its durable on TABLE_RESULTS), so its user
    may not subscribe to a table's public batches nor to every table's; the timers, which
    hold that grant, may (the refusal is not vacuous)."""
    batches = (
        ("subscribe to a table's public event batches", subjects.public_events(TABLE)),
        ("subscribe to every table's public event batches", subjects.all_public_events()),
        ("subscribe to every table event batch", subjects.all_table_events()),
    )
    lines = []
    for attack, subject in batches:
        lines.append(report(backend, attack, "social", await _subscribe_outcome(backend, "social", subject)))
    _refused_all(lines)
    held = await _subscribe_outcome(backend, "timers", subjects.all_public_events())
    assert report(backend, batches[1][0], "timers", held, "ALLOWED").startswith(HELD)
    await _ensure_durables(backend)  # on `trix up`: its social process made its own
    async with connected(backend, "social") as conn:  # what it reads instead
        info = await conn.nc.jetstream(timeout=20).consumer_info(
            names.TABLE_RESULTS_STREAM, names.SOCIAL_RESULTS_CONSUMER
        )
    assert info.name == names.SOCIAL_RESULTS_CONSUMER


async def test_only_the_social_service_reads_the_chat_streams(backend: Backend) -> None:
    """Stored chat is read by the social service alone (its history and reports RPCs): the
    gateway and the others get lines only as the social service sends them."""
    async with connected(backend, "social") as owner:
        await owner.nc.jetstream(timeout=20).publish(CHAT_SUBJECTS[1], b"a private line")
    lines = []
    for user in (u for u in permissions.SERVICE_USERS if u != "social"):
        async with connected(backend, user) as conn:
            js = conn.nc.jetstream(timeout=20)
            op = js.get_msg(names.SOCIAL_DIRECT_STREAM, subject=CHAT_SUBJECTS[1], next=True, seq=1)
            outcome = await attempt(conn, op, f"$JS.API.STREAM.MSG.GET.{names.SOCIAL_DIRECT_STREAM}")
        lines.append(report(backend, "read a direct conversation", user, outcome))
    _refused_all(lines)


async def test_only_the_gateway_names_the_players_online(backend: Backend) -> None:
    """The gateways' beat keeps their players online for their friends (`trix.natsio.online`):
    nobody else may publish one (a forged beat would keep a gone player online for good)."""
    await _refused_to_all_but(
        backend, "gateway", "name a player online (the gateways' beat)", subjects.gateways_online()
    )


async def test_only_the_competitions_service_tells_entrants_and_only_the_gateway_listens(backend: Backend) -> None:
    """An entrant's notices (his next table, docs/adr/0029) come from the competitions service
    alone: nobody else may publish one (a forged notice would steer a player elsewhere); only
    the gateway, which passes them to each player's own streams, may subscribe to them."""
    notice = subjects.competition_notices("p1")
    lines = []
    for user in (u for u in permissions.USERS if u != "competitions"):
        async with connected(backend, user) as conn:
            outcome = await attempt(conn, conn.nc.publish(notice, b"forged"), notice)
        lines.append(report(backend, "forge a competition notice", user, outcome))
    _refused_all(lines)
    lines = []
    for user in permissions.USERS:
        outcome = await _subscribe_outcome(backend, user, subjects.all_competition_notices())
        expected = "ALLOWED" if user == "gateway" else REFUSED
        lines.append(report(backend, "subscribe to the entrants' notices", user, outcome, expected))
    assert all(line.startswith(HELD) for line in lines), "\n".join(lines)


async def test_only_the_gateway_sends_chat_lines_and_only_the_social_service_takes_them(backend: Backend) -> None:
    """A chat line goes from the gateway to the social service as a NATS request (docs/adr/0031),
    its writer the player token it carries: no other user may send one (the subject's
    permission is the second lock after the token), and only the social service may listen to
    the lines sent; the gateway may send and the social service listen (not vacuous)."""
    subject = subjects.social_send_chat()
    lines = []
    for user in permissions.USERS:
        async with connected(backend, user) as conn:
            outcome = await attempt(conn, conn.nc.publish(subject, b"a forged line"), subject)
        expected = "ALLOWED" if user == "gateway" else REFUSED
        lines.append(report(backend, "send a chat line to the social service", user, outcome, expected))
    for user in permissions.USERS:
        outcome = await _subscribe_outcome(backend, user, subject)
        expected = "ALLOWED" if user == "social" else REFUSED
        lines.append(report(backend, "listen to the players' chat lines", user, outcome, expected))
    assert all(line.startswith(HELD) for line in lines), "\n".join(lines)
