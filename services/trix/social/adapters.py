"""The social service's NATS adapters (`trix.social.ports`).

- `StreamChatLog`: a channel's lines on its stream (SOCIAL_TABLE_CHAT, SOCIAL_DIRECT,
  SOCIAL_COMPETITION_CHAT), one subject per channel, the stream keeping the last 100 of each;
  read back by `trix.natsio.stored` (batched direct gets of the channel's subject);
- `StreamReports`: SOCIAL_REPORTS, read in stream order;
- `KvRelations`, `KvPresence`: the social_friends and social_presence buckets;
- `CoreOutbox`: a `SocialEvent` as a core NATS message on the social service's own subjects
  (`trix.social.evt.…`), the readers not to be shown it in SOCIAL_HIDDEN_FROM_HEADER
  (`trix.natsio.subjects`);
- `ResultsTableFacts`: a table's TableCreated (the first message of its TABLE_RESULTS subject)
  and whether its last one is GameEnded;
- `StreamCompetitions`: a competition's organiser, entrants and chat switch from its events.
"""

from __future__ import annotations

import json
import time
from collections.abc import Collection

import nats.js.errors
from nats.js.kv import KeyValue

from trix.natsio import names, subjects
from trix.natsio.connection import NatsConnection
from trix.natsio.publish import kv_write, publish_once
from trix.natsio.stored import stored_messages
from trix.social.friends import Pair
from trix.social.ports import Competition, StoredChannel
from trix.v1 import competitions_pb2, events_pb2, social_pb2

COMPETITION_FRESH_S = 5.0
"""How long a competition's members and chat switch are taken as read (a registration shows
in its chat within this)."""
PAIR_PREFIX = "pair."
MUTE_PREFIX = "mute."


class StreamChatLog:
    def __init__(self, nats: NatsConnection) -> None:
        self.nats = nats

    async def append(self, channel: StoredChannel, line: social_pb2.ChatLine, msg_id: str) -> int:
        ack = await publish_once(self.nats.jetstream, channel.subject, line.SerializeToString(), msg_id=msg_id)
        return int(ack.seq)

    async def lines(self, channel: StoredChannel) -> list[social_pb2.ChatLine]:
        out = []
        async for msg in stored_messages(self.nats, channel.stream, channel.subject):
            line = social_pb2.ChatLine.FromString(msg.data)
            line.line_id = msg.seq
            out.append(line)
        return out


class StreamReports:
    def __init__(self, nats: NatsConnection) -> None:
        self.nats = nats

    async def add(self, report: social_pb2.ChatReport) -> None:
        await publish_once(
            self.nats.jetstream, subjects.social_reports(), report.SerializeToString(), msg_id=report.report_id
        )

    async def page(self, after: int, limit: int) -> tuple[list[tuple[int, social_pb2.ChatReport]], bool]:
        # One more than asked for: whether there is a next page.
        found = stored_messages(
            self.nats, names.SOCIAL_REPORTS_STREAM, subjects.social_reports(), after=after, limit=limit + 1
        )
        out = [(msg.seq, social_pb2.ChatReport.FromString(msg.data)) async for msg in found]
        return out[:limit], len(out) > limit


async def _keys(kv: KeyValue) -> list[str]:
    try:
        return list(await kv.keys())
    except nats.js.errors.NoKeysError:
        return []


class _Bucket:
    """One KV bucket, bound on first use."""

    bucket = ""

    def __init__(self, nats: NatsConnection) -> None:
        self.nats = nats
        self._kv: KeyValue | None = None

    async def kv(self) -> KeyValue:
        if self._kv is None:
            self._kv = await self.nats.jetstream.key_value(self.bucket)
        return self._kv


class KvRelations(_Bucket):
    bucket = names.SOCIAL_FRIENDS_BUCKET

    async def load(self) -> tuple[dict[tuple[str, str], tuple[Pair, int]], set[tuple[str, str]]]:
        kv = await self.kv()
        pairs: dict[tuple[str, str], tuple[Pair, int]] = {}
        mutes: set[tuple[str, str]] = set()
        for key in await _keys(kv):
            try:
                entry = await kv.get(key)
            except nats.js.errors.KeyNotFoundError:
                continue
            if key.startswith(PAIR_PREFIX):
                doc = json.loads(entry.value or b"{}")
                pair = Pair(
                    doc["a"],
                    doc["b"],
                    doc.get("requested_by", ""),
                    doc.get("friends", False),
                    frozenset(doc["blocked_by"]),
                )
                pairs[(pair.a, pair.b)] = (pair, int(entry.revision or 0))
            elif key.startswith(MUTE_PREFIX):
                muter, muted = key[len(MUTE_PREFIX) :].split(".", 1)
                mutes.add((muter, muted))
        return pairs, mutes

    async def put_pair(self, pair: Pair, revision: int) -> int:
        kv = await self.kv()
        doc = {
            "a": pair.a,
            "b": pair.b,
            "requested_by": pair.requested_by,
            "friends": pair.friends,
            "blocked_by": sorted(pair.blocked_by),
        }
        value = json.dumps(doc, sort_keys=True).encode()
        key = f"{PAIR_PREFIX}{pair.a}.{pair.b}"
        stored = await kv_write(kv, key, value, revision)
        if stored is None:
            raise nats.js.errors.KeyWrongLastSequenceError(description=f"pair {key} is not at revision {revision}")
        return stored

    async def set_mute(self, muter: str, muted: str, on: bool) -> None:
        kv = await self.kv()
        key = f"{MUTE_PREFIX}{muter}.{muted}"
        if on:
            await kv.put(key, b"1")
        else:
            await kv.delete(key)


class KvPresence(_Bucket):
    bucket = names.SOCIAL_PRESENCE_BUCKET

    async def load(self) -> dict[str, tuple[frozenset[str], str]]:
        kv = await self.kv()
        out: dict[str, tuple[frozenset[str], str]] = {}
        for key in await _keys(kv):
            try:
                doc = json.loads((await kv.get(key)).value or b"{}")
            except nats.js.errors.KeyNotFoundError:
                continue
            out[key] = (frozenset(doc.get("sessions", ())), str(doc.get("table", "")))
        return out

    async def put(self, player: str, sessions: Collection[str], table: str) -> None:
        kv = await self.kv()
        if sessions:
            await kv.put(player, json.dumps({"sessions": sorted(sessions), "table": table}).encode())
        else:
            await kv.delete(player)


class CoreOutbox:
    def __init__(self, nats: NatsConnection) -> None:
        self.nats = nats

    async def to_channel(
        self,
        channel: str,
        channel_id: str,
        event: social_pb2.SocialEvent,
        hidden_from: Collection[str],
        sent_by: str = "",
    ) -> None:
        headers = {subjects.SOCIAL_HIDDEN_FROM_HEADER: ",".join(sorted(hidden_from))} if hidden_from else {}
        if sent_by:
            headers[subjects.SOCIAL_SENT_BY_HEADER] = sent_by
        await self.nats.client.publish(
            subjects.social_channel_events(channel_id, channel), event.SerializeToString(), headers=headers or None
        )

    async def to_player(self, player: str, event: social_pb2.SocialEvent, sent_by: str = "") -> None:
        headers = {subjects.SOCIAL_SENT_BY_HEADER: sent_by} if sent_by else None
        await self.nats.client.publish(
            subjects.social_player_events(player), event.SerializeToString(), headers=headers
        )


class ResultsTableFacts:
    def __init__(self, nats: NatsConnection) -> None:
        self.nats = nats

    async def created(self, table_id: str) -> tuple[events_pb2.Event | None, bool]:
        js, subject = self.nats.jetstream, subjects.table_results(table_id)
        try:
            first = await js.get_msg(names.TABLE_RESULTS_STREAM, seq=1, subject=subject, next=True)
            last = await js.get_last_msg(names.TABLE_RESULTS_STREAM, subject)
        except nats.js.errors.NotFoundError:
            return None, False
        created = events_pb2.Event.FromString(first.data or b"")
        if not created.HasField("table_created"):
            return None, False
        ended = events_pb2.Event.FromString(last.data or b"").HasField("game_ended")
        return created, ended


class StreamCompetitions:
    """Each competition read from its events, kept COMPETITION_FRESH_S (a line each, not a read each)."""

    def __init__(self, nats: NatsConnection) -> None:
        self.nats = nats
        self.read: dict[str, tuple[float, Competition | None]] = {}

    async def get(self, competition_id: str) -> Competition | None:
        now = time.monotonic()
        kept = self.read.get(competition_id)
        if kept is not None and now - kept[0] < COMPETITION_FRESH_S:
            return kept[1]
        found = await self._read(competition_id)
        if len(self.read) > 10_000:
            self.read.clear()
        self.read[competition_id] = (now, found)
        return found

    async def _read(self, competition_id: str) -> Competition | None:
        organiser, chat, members = "", False, set()
        subject = subjects.competition_events(competition_id)
        async for msg in stored_messages(self.nats, names.COMPETITIONS_STREAM, subject):
            event = competitions_pb2.CompetitionEvent.FromString(msg.data)
            body = event.WhichOneof("body")
            if body == "created":
                organiser = event.created.competition.organiser_id
                chat = event.created.competition.options.chat
            elif body == "registered":
                members.add(event.registered.entrant.player_id)
            elif body == "approved" and not event.approved.accept:
                members.discard(event.approved.player_id)
        if not organiser and not members:
            return None
        return Competition(organiser, frozenset(members), chat)
