"""`trix.natsio.stored.stored_messages` against a real nats-server: every stored message of a
subject or subject filter, oldest first, after a given sequence, at most a limit; nothing for
a subject without messages; read in batches (more than one for a long subject), and from the
leader, message by message, where no direct get answers. Read as a service user (the competitions
service's, the social service's), with its own permissions."""

from __future__ import annotations

import asyncio

from foundation_support import connected
from nats.js.api import RetentionPolicy, StorageType, StreamConfig

from support.nats import AuthNats, NatsServer
from trix.natsio import names, subjects
from trix.natsio.connection import NatsConnection
from trix.natsio.provisioning import CHAT_LINES_KEPT
from trix.natsio.stored import READ_BATCH, StoredMessage, stored_messages


async def _read(
    conn: NatsConnection, stream: str, subject: str, after: int = 0, limit: int | None = None
) -> list[tuple[int, bytes]]:
    return [(m.seq, m.data) async for m in stored_messages(conn, stream, subject, after=after, limit=limit)]


async def test_stored_messages_are_read_by_subject_in_order_after_a_sequence_up_to_a_limit(
    auth_nats: AuthNats,
) -> None:
    stream = names.COMPETITIONS_STREAM
    a, b = subjects.competition_events("c1"), subjects.competition_events("c2")
    async with connected(auth_nats.url("competitions"), "test-stored") as conn:
        js = conn.jetstream
        assert await _read(conn, stream, a) == []  # the stream is empty
        first = (await js.publish(a, b"a0")).seq
        assert await _read(conn, stream, a) == [(first, b"a0")]  # one message
        assert await _read(conn, stream, b) == []  # a subject without a message, its stream not empty
        assert await _read(conn, stream, a, after=first) == []

        # More than a batch of each subject, interleaved (b's payloads empty: still read).
        # Published at once (each is fsynced), in the order their acks give.
        sent = [(s, d) for i in range(1, READ_BATCH + 40) for s, d in ((b, b""), (a, f"a{i}".encode()))]
        acks = await asyncio.gather(*(js.publish(s, d) for s, d in sent))
        stored: dict[str, list[tuple[int, bytes]]] = {a: [(first, b"a0")], b: []}
        for (subject, data), ack in sorted(zip(sent, acks, strict=True), key=lambda sa: sa[1].seq):
            stored[subject].append((ack.seq, data))
        assert await _read(conn, stream, a) == stored[a]
        assert await _read(conn, stream, b) == stored[b]
        both = sorted(stored[a] + stored[b])
        assert await _read(conn, stream, subjects.all_competition_events()) == both  # a subject filter

        middle = stored[a][100][0]
        assert await _read(conn, stream, a, after=middle) == stored[a][101:]  # after a sequence
        assert await _read(conn, stream, a, after=middle - 1) == stored[a][100:]  # b's seq in between
        assert await _read(conn, stream, a, after=both[-1][0]) == []
        assert await _read(conn, stream, a, limit=3) == stored[a][:3]
        assert await _read(conn, stream, a, after=middle, limit=READ_BATCH + 5) == stored[a][101 : 101 + READ_BATCH + 5]
        assert await _read(conn, stream, a, limit=0) == []

        found = [m async for m in stored_messages(conn, stream, subjects.all_competition_events(), limit=2)]
        assert found == [StoredMessage(first, a, b"a0"), StoredMessage(stored[b][0][0], b, b"")]

        # No reply inbox stays subscribed while the caller holds a message (it may stop there).
        subscribed = set(conn.client._subs)  # nats-py's own table (its request inbox)
        async for _ in stored_messages(conn, stream, a):
            assert set(conn.client._subs) == subscribed
            break


async def test_a_chat_channel_reads_the_lines_its_stream_keeps(auth_nats: AuthNats) -> None:
    # SOCIAL_DIRECT keeps the last CHAT_LINES_KEPT lines of a subject: the first ones are gone.
    subject = subjects.direct_chat("p1", "p2")
    async with connected(auth_nats.url("social"), "test-stored-chat") as conn:
        lines = [f"l{i}".encode() for i in range(CHAT_LINES_KEPT + 5)]
        acks = await asyncio.gather(*(conn.jetstream.publish(subject, line) for line in lines))
        stored = sorted((ack.seq, line) for ack, line in zip(acks, lines, strict=True))
        assert await _read(conn, names.SOCIAL_DIRECT_STREAM, subject) == stored[5:]


async def test_stored_messages_of_a_stream_without_direct_gets_are_read_from_the_leader(
    nats_server: NatsServer,
) -> None:
    # No replica answers a direct get: the messages are read from the leader one by one, the same.
    async with connected(nats_server.url, "test-stored-no-direct") as conn:
        js = conn.jetstream
        config = StreamConfig(
            name="STORED_NO_DIRECT",
            subjects=["stored.>"],
            retention=RetentionPolicy.LIMITS,
            storage=StorageType.MEMORY,
            allow_direct=False,
        )
        await js.add_stream(config)
        stored = [((await js.publish(f"stored.{i % 3}", f"m{i}".encode())).seq, f"m{i}".encode()) for i in range(10)]
        assert await _read(conn, "STORED_NO_DIRECT", "stored.1") == stored[1::3]
        assert await _read(conn, "STORED_NO_DIRECT", "stored.>", after=stored[4][0], limit=3) == stored[5:8]
        assert await _read(conn, "STORED_NO_DIRECT", "stored.9") == []
