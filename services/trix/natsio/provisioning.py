"""JetStream streams and KV buckets, declared in code and created idempotently (ADR 0014).

Owns every stream (`STREAMS`) and bucket (`KV_BUCKETS`) and `provision()`, which adds or
updates each to its declared config; the provisioner calls it, a service's own user only
waits for what it uses (`wait_provisioned`). Add a stream here, never ad hoc.
"""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from dataclasses import dataclass, field

from nats.js.api import KeyValueConfig, RetentionPolicy, StorageType, StreamConfig
from nats.js.client import JetStreamContext
from nats.js.errors import BucketNotFoundError, NotFoundError

from trix.natsio import names, subjects
from trix.natsio.names import kv_stream

DAY_S = 24 * 3600.0
TABLE_LEASE_TTL_S = 0.8
"""TTL of a table shard's lease and of a table replica's heartbeat: an owner that
stops renewing loses its shards after this long, so a SIGKILL costs players a few seconds.
0.8 s (2 s, then 1.5 s before, ADR 0021): a table replica cut off holds its tables' play for
the TTL and the takeover (1.5-2.05 s with 1.5 s; issue 42 asks at most 1 s at p95). The
owner's validity (`trix.natsio.leases.VALID_S`) is shorter and renewals come every quarter
TTL, so an owner's loop may lag 0.45 s (0.825 s before) before its leases lapse; a taker's
own lag is not counted as the others' silence (`LeaseManager` forgives it)."""

CHAT_LINES_KEPT = 100
"""Lines of one chat channel kept (issue 44: the last 100 of a table or direct conversation)."""
COMPETITION_LEASE_TTL_S = 3.0
"""TTL of a competition shard's lease and of a competitions replica's heartbeat (docs/adr/0026):
a competition waits at most this long plus its rebuild after its owner dies (a round's tables
play on meanwhile); twice the table's, as nothing waits on a competition's owner move by move."""


@dataclass(frozen=True)
class StreamSpec:
    """One JetStream stream."""

    name: str
    subjects: tuple[str, ...]
    description: str
    max_age_s: float = 0.0
    """0 = keep until deleted (retention by the owner, e.g. after archiving)."""
    max_msgs_per_subject: int = -1
    duplicate_window_s: float = 120.0
    """Nats-Msg-Id deduplication window: a retried publish within it is stored once."""
    allow_rollup: bool = False
    allow_direct: bool = True

    def config(self, replicas: int = 1) -> StreamConfig:
        """The stream's config with `replicas` copies (R3 on a 3-node cluster, R1 on one server)."""
        return StreamConfig(
            name=self.name,
            description=self.description,
            subjects=list(self.subjects),
            retention=RetentionPolicy.LIMITS,
            storage=StorageType.FILE,
            max_age=self.max_age_s,
            max_msgs_per_subject=self.max_msgs_per_subject,
            duplicate_window=self.duplicate_window_s,
            allow_rollup_hdrs=self.allow_rollup,
            allow_direct=self.allow_direct,
            num_replicas=replicas,
        )


@dataclass(frozen=True)
class KvSpec:
    """One JetStream key-value bucket."""

    bucket: str
    description: str
    history: int = 1
    ttl_s: float = 0.0
    """0 = entries never expire."""
    memory: bool = False
    """Memory storage: for short-lived coordination keys renewed many times a second (leases),
    which need no fsync and are rebuilt by their owners if the server restarts."""

    def config(self, replicas: int = 1) -> KeyValueConfig:
        return KeyValueConfig(
            bucket=self.bucket,
            description=self.description,
            history=self.history,
            ttl=self.ttl_s or None,
            storage=StorageType.MEMORY if self.memory else StorageType.FILE,
            replicas=replicas,
        )


STREAMS: tuple[StreamSpec, ...] = (
    StreamSpec(
        names.TABLE_LOG_STREAM,
        (subjects.all_table_logs(),),
        "Each table's accepted actions, the truth of the game (private to the table service).",
    ),
    StreamSpec(
        names.TABLE_SNAPSHOTS_STREAM,
        (subjects.all_table_snapshots(),),
        "Latest engine snapshot of each table (private to the table service).",
        max_msgs_per_subject=1,
        allow_rollup=True,
    ),
    StreamSpec(
        names.TABLE_RESULTS_STREAM,
        (subjects.all_table_results(),),
        "The table events scoring settles from (TableCreated, SeatControlChanged, DealScored, "
        "GameEnded); the others travel on core NATS, unstored (issue 16).",
        max_age_s=7 * DAY_S,
    ),
    StreamSpec(
        names.PRESENCE_STREAM, (subjects.all_presence(),), "Player connected/disconnected events.", max_age_s=DAY_S
    ),
    StreamSpec(names.MATCHES_STREAM, (subjects.match_formed(),), "MatchFormed events.", max_age_s=DAY_S),
    StreamSpec(
        names.TIMERS_STREAM, (subjects.all_timers(),), "AutoAct and Leave decisions of the timers.", max_age_s=DAY_S
    ),
    StreamSpec(
        names.SCORING_JOURNAL_STREAM,
        (subjects.scoring_journal(),),
        "The scoring journal (issue 8): game results and double-entry wallet postings, kept forever.",
    ),
    StreamSpec(
        names.SCORING_ARCHIVED_STREAM,
        (subjects.all_records_archived(),),
        "RecordArchived: scoring stored a finished game's record; the table service then purges "
        "that table's log, snapshot and seed (issue 4, ADR 0003).",
        max_age_s=7 * DAY_S,
    ),
    StreamSpec(
        names.COMPETITIONS_STREAM,
        (subjects.all_competition_events(),),
        "Every competition's events, one subject per competition, kept forever: the competitions "
        "service rebuilds each competition from them (issue 43, docs/adr/0026).",
    ),
    # Chat (docs/adr/0027): the last CHAT_LINES_KEPT lines of each channel, dropped with age.
    StreamSpec(
        names.SOCIAL_TABLE_CHAT_STREAM,
        (subjects.all_table_chats(),),
        "Each table's players' and spectators' chat, the last 100 lines of each, kept 2 days: with "
        "the table's record through a competition's review period, then dropped (docs/adr/0027).",
        max_age_s=2 * DAY_S,
        max_msgs_per_subject=CHAT_LINES_KEPT,
    ),
    StreamSpec(
        names.SOCIAL_DIRECT_STREAM,
        (subjects.all_direct_chats(),),
        "Direct messages between friends, the last 100 lines of each pair, kept 30 days.",
        max_age_s=30 * DAY_S,
        max_msgs_per_subject=CHAT_LINES_KEPT,
    ),
    StreamSpec(
        names.SOCIAL_COMPETITION_CHAT_STREAM,
        (subjects.all_competition_chats(),),
        "Each competition's chat, the last 100 lines, kept 7 days (past its review period).",
        max_age_s=7 * DAY_S,
        max_msgs_per_subject=CHAT_LINES_KEPT,
    ),
    StreamSpec(
        names.SOCIAL_REPORTS_STREAM,
        (subjects.social_reports(),),
        "Reported chat lines with their context, for the operators (ListReports), kept 90 days.",
        max_age_s=90 * DAY_S,
    ),
)

KV_BUCKETS: tuple[KvSpec, ...] = (
    KvSpec(
        names.TABLE_LEASES_BUCKET,
        "Owner of each of the TABLE_SHARDS command shards, written by CAS on its revision when the shard "
        "changes hands; held while the owner's heartbeat in table_replicas is fresh (issues 5, 16).",
        memory=True,
    ),
    KvSpec(
        names.TABLE_REPLICAS_BUCKET,
        "Table replicas' heartbeats, each replica's one lease: who shares the shards, who holds its own "
        "(issues 5, 16).",
        ttl_s=TABLE_LEASE_TTL_S,
        memory=True,
    ),
    KvSpec(names.PLAYER_TABLES_BUCKET, "Player -> current table index (issue 4)."),
    KvSpec(
        names.TABLE_SECRETS_BUCKET,
        "Server seed of each running table (private to the table service, docs/rules.md §11, §14).",
    ),
    KvSpec(names.TIMER_DEADLINES_BUCKET, "Pending decision deadlines (issue 7)."),
    KvSpec(
        names.TIMER_REPLICAS_BUCKET,
        "Timers replicas' heartbeats, for sharing the firing of deadlines (issue 7).",
        ttl_s=5.0,
    ),
    KvSpec(names.MATCH_TICKETS_BUCKET, "Matchmaking tickets and claims (issue 6)."),
    KvSpec(
        names.MATCH_LEASES_BUCKET,
        "Matchmaking replicas' heartbeats and queue-partition leases (issue 6).",
        ttl_s=3.0,
        memory=True,
    ),
    KvSpec(
        names.COMPETITION_LEASES_BUCKET,
        "Owner of each competition shard, written by CAS on its revision when the shard changes hands; "
        "held while the owner's heartbeat in competition_replicas is fresh (issue 43, docs/adr/0026).",
        memory=True,
    ),
    KvSpec(
        names.COMPETITION_REPLICAS_BUCKET,
        "Competitions replicas' heartbeats: who shares the competition shards (issue 43).",
        ttl_s=COMPETITION_LEASE_TTL_S,
        memory=True,
    ),
    KvSpec(
        names.GATEWAY_ACCOUNTS_BUCKET, "Guest accounts of the gateway: SHA-256 of a device secret -> player (issue 9)."
    ),
    KvSpec(
        names.SOCIAL_FRIENDS_BUCKET,
        "Friendships, one key per pair of players (pair.<a>.<b>), and mutes (mute.<muter>.<muted>) (issue 44).",
    ),
    KvSpec(
        names.SOCIAL_PRESENCE_BUCKET,
        "Player -> connected sessions and table, from PRESENCE and the public table events (issue 44).",
    ),
)


@dataclass
class ProvisionReport:
    """What `provision` did, for logs and tests."""

    created: list[str] = field(default_factory=list)
    updated: list[str] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)


async def provision(
    js: JetStreamContext,
    streams: Sequence[StreamSpec] = STREAMS,
    buckets: Sequence[KvSpec] = KV_BUCKETS,
    *,
    replicas: int = 1,
) -> ProvisionReport:
    """Create every declared stream and bucket, or update it to its declared config.

    `replicas` (TRIX_NATS_STREAM_REPLICAS) is the number of copies of each stream and
    bucket: 1 on a single server (`trix up`), 3 on the production JetStream cluster. An
    existing stream or bucket with another count is updated to it.
    """
    report = ProvisionReport()
    for spec in streams:
        wanted = spec.config(replicas)
        try:
            info = await js.stream_info(spec.name)
        except NotFoundError:
            await js.add_stream(config=wanted)
            report.created.append(spec.name)
            continue
        have = info.config
        if (
            sorted(have.subjects or []) != sorted(wanted.subjects or [])
            or (have.max_age or 0) != (wanted.max_age or 0)
            or have.max_msgs_per_subject != wanted.max_msgs_per_subject
            or (have.duplicate_window or 0) != (wanted.duplicate_window or 0)
            or (have.num_replicas or 1) != replicas
        ):
            await js.update_stream(config=wanted)
            report.updated.append(spec.name)
        else:
            report.unchanged.append(spec.name)
    for kv in buckets:
        for attempt in range(PROVISION_ATTEMPTS):
            try:
                outcome, name = await _provision_bucket(js, kv, replicas)
                {"created": report.created, "updated": report.updated, "unchanged": report.unchanged}[outcome].append(
                    name
                )
                break
            except (BucketNotFoundError, NotFoundError):
                # Another service deleted the bucket between our reads (moving it to memory,
                # `_recreate_in_memory`): look again.
                if attempt == PROVISION_ATTEMPTS - 1:
                    raise
    return report


PROVISION_ATTEMPTS = 3


class NotProvisioned(Exception):
    """A declared stream or bucket does not exist yet (the provisioner has not run)."""


async def wait_provisioned(
    js: JetStreamContext, streams: Sequence[StreamSpec] = STREAMS, buckets: Sequence[KvSpec] = KV_BUCKETS
) -> ProvisionReport:
    """Check, without creating anything, that every declared stream and bucket exists.

    What a service's own NATS user does at start and after a reconnect: it may not create
    streams (ADR 0014), the provisioner does. Raises NotProvisioned naming the
    first one missing (the caller retries)."""
    report = ProvisionReport()
    for name in [s.name for s in streams] + [kv_stream(b.bucket) for b in buckets]:
        try:
            await js.stream_info(name)
        except NotFoundError:
            raise NotProvisioned(f"{name} is not provisioned yet (python -m trix.natsio.provision)") from None
        report.unchanged.append(name)
    return report


async def _provision_bucket(js: JetStreamContext, kv: KvSpec, replicas: int) -> tuple[str, str]:
    """Create, recreate, update or keep one bucket: (the report's list, the stream's name)."""
    name = kv_stream(kv.bucket)
    try:
        info = await js.stream_info(name)
    except NotFoundError:
        await js.create_key_value(config=kv.config(replicas))
        return "created", name
    have = info.config
    if kv.memory and have.storage != StorageType.MEMORY:
        await _recreate_in_memory(js, kv, replicas)
        return "updated", name
    if (
        have.max_msgs_per_subject != kv.history
        or (have.max_age or 0) != kv.ttl_s
        or (have.num_replicas or 1) != replicas
        or not have.allow_msg_ttl
    ):
        have.max_msgs_per_subject = kv.history
        have.max_age = kv.ttl_s
        have.num_replicas = replicas
        # Per-message TTLs (a finished table's timer document, `trix.timers`): nats-py creates
        # buckets with them allowed; a bucket made before is given them (they cannot be taken
        # back, and nothing here ever wants to).
        have.allow_msg_ttl = True
        await js.update_stream(config=have)
        return "updated", name
    return "unchanged", name


async def _recreate_in_memory(js: JetStreamContext, kv: KvSpec, replicas: int) -> None:
    """Move a bucket declared `memory` off file storage (its renewals were fsynced).

    A stream's storage cannot be updated, so the bucket is deleted and created again: only
    for memory buckets, whose keys are coordination (leases, heartbeats) that their owners
    write again within a TTL and whose loss the owners already survive (a nats-server
    restart loses them the same way). Several services provision at once: whoever creates
    it first wins, and a create that finds the memory bucket there already is fine.
    """
    with contextlib.suppress(BucketNotFoundError, NotFoundError):  # another service deleted it first
        await js.delete_key_value(kv.bucket)
    try:
        await js.create_key_value(config=kv.config(replicas))
    except Exception:
        info = await js.stream_info(kv_stream(kv.bucket))
        if info.config.storage != StorageType.MEMORY:
            raise
