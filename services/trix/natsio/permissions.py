"""NATS users and their permissions: one user per service, least privilege (issue 18).

Owns the one generator of the platform's NATS users: `grants_of(user)` says what each
service does on NATS (the subjects it publishes and subscribes to, the streams and
buckets it reads or writes, its own durable consumers, the streams it opens ephemeral
consumers on), `permissions_of(user)` turns that into a nats-server whitelist, and
`authorization_block` writes the `authorization { users = [...] }` section that
`trix up`, the tests and `deploy/k8s` (a drift check) all use (ARCHITECTURE.md "Each
service connects to NATS as its own user with the least permissions it needs", ADR 0014).

Everything is a whitelist: what is not listed is refused by the server. Subjects come
from `trix.natsio.subjects`, stream names from `trix.natsio.provisioning` and consumer
and bucket names from the services' own constants, so a new subject or consumer is
granted where it is declared, never as a hand-written string here.

What it guarantees:
- No service user may create, update or delete a stream or bucket: only the
  `provisioner` user may (`python -m trix.natsio.provision`), and it may not read any
  message. So nobody can mirror or source the table's private data (TABLE_LOG,
  TABLE_SNAPSHOTS, KV_table_secrets: docs/rules.md §14) into a stream of its own.
- Only the table user reads the private streams (no direct get, message get or
  consumer on them for anyone else).
- Publish rights follow ownership: only the table publishes `trix.table.evt.>`, logs and
  snapshots; only scoring writes its journal and RecordArchived; only matchmaking
  announces matches; only the timers write their audit; only the gateway presence.
- Each service creates, reads from, acknowledges and deletes only its own durable
  consumers; a service that opens ephemeral consumers on a stream is refused the names
  of the other services' durables on it.
- Each user receives replies only under its own inbox prefix (`inbox_prefix(user)`), so
  no service sees the answers to another's requests (the table's reads of its secrets).
"""

from __future__ import annotations

import functools
import json
from collections.abc import Mapping
from dataclasses import dataclass
from urllib.parse import unquote, urlsplit

from trix.natsio import subjects

SERVICE_USERS = ("table", "timers", "scoring", "matchmaking", "gateway")
PROVISIONER = "provisioner"
"""The one user that creates and updates streams and buckets (`trix.natsio.provision`)."""
USERS = (*SERVICE_USERS, PROVISIONER)

GATEWAY_ACCOUNTS_BUCKET = "gateway_accounts"
"""The gateway's own KV bucket (guest accounts, issue 9): the only bucket it may read or write."""


def inbox_prefix(user: str) -> str:
    """The reply inbox prefix of a user: it may subscribe to replies only under it."""
    return f"_INBOX_{subjects.token(user, 'user')}"


GATEWAY_INBOX_PREFIX = inbox_prefix("gateway")
"""The gateway connects with this `inbox_prefix` and may subscribe only under it, so it
never sees replies addressed to another service's inbox."""


def kv_stream(bucket: str) -> str:
    """The JetStream stream behind a KV bucket."""
    return f"KV_{bucket}"


def kv_subjects(bucket: str) -> str:
    """Every key of a KV bucket (what a write publishes on)."""
    return f"$KV.{bucket}.>"


PRIVATE_STREAMS = (subjects.TABLE_LOG_STREAM, subjects.TABLE_SNAPSHOTS_STREAM, kv_stream("table_secrets"))
"""The table service's private data (hands, seeds: docs/rules.md §14): only the table user reads it."""


@dataclass(frozen=True)
class Grants:
    """What one service does on NATS; `permissions_of` makes the server's whitelist of it."""

    publish: tuple[str, ...] = ()
    """Core and JetStream publishes and requests (a JetStream publish needs only its subject)."""
    subscribe: tuple[str, ...] = ()
    """Core subscriptions besides the user's own reply inbox."""
    serves_requests: bool = False
    """Answers requests it receives (nats-server `allow_responses`)."""
    read: tuple[str, ...] = ()
    """Streams (and buckets' streams) it reads by info, message get or direct get."""
    write_buckets: tuple[str, ...] = ()
    """KV buckets whose keys it writes (put, create, update, delete)."""
    purge: tuple[str, ...] = ()
    """Streams it purges (by subject: a finished table's private data, purged tickets)."""
    ephemeral: tuple[str, ...] = ()
    """Streams it opens ephemeral consumers on (KV watches, history reads)."""
    durable: tuple[tuple[str, str], ...] = ()
    """Its own durable consumers: (stream, name)."""

    @property
    def streams(self) -> tuple[str, ...]:
        """Every stream this service uses (what it checks at start)."""
        names = [*self.read, *self.ephemeral, *(s for s, _ in self.durable), *self.purge]
        names += [kv_stream(b) for b in self.write_buckets]
        return tuple(dict.fromkeys(names))


@functools.cache
def _all_grants() -> dict[str, Grants]:
    # The services' own names (imported here, when first asked, as they import trix.natsio).
    from trix.matchmaking import subscribers as mm
    from trix.scoring.config import ScoringConfig
    from trix.table import subscribers as table
    from trix.timers import subscribers as timers

    results = subjects.TABLE_RESULTS_STREAM
    table_buckets = (table.LEASES_BUCKET, table.REPLICAS_BUCKET, table.PLAYERS_BUCKET, table.SECRETS_BUCKET)
    timers_buckets = (timers.DEADLINES_BUCKET, timers.REPLICAS_BUCKET)
    mm_buckets = (mm.TICKETS_BUCKET, mm.LEASES_BUCKET)
    return {
        "table": Grants(
            publish=(
                subjects.all_table_logs(),
                subjects.all_table_snapshots(),
                subjects.all_table_events(),  # core NATS batches (ADR 0012)
                subjects.all_table_results(),  # the durable results scoring settles from
                subjects.all_table_commands(),  # a replica forwards a command to the table's owner
            ),
            # Its own feeds: the gRPC API's seat and public streams (`TableBus.events`) follow
            # them as the gateway does. The table writes them and holds every hand: nothing new.
            subscribe=(subjects.all_table_commands(), subjects.table_live(), subjects.all_table_feeds()),
            serves_requests=True,
            read=(table.LOG_STREAM, table.SNAPSHOT_STREAM, results, *map(kv_stream, table_buckets)),
            write_buckets=table_buckets,
            purge=(table.LOG_STREAM, table.SNAPSHOT_STREAM, kv_stream(table.SECRETS_BUCKET)),
            # Its own results (it publishes them; reads of them), its lease watches.
            ephemeral=(results, *(kv_stream(b) for b in (table.LEASES_BUCKET, table.REPLICAS_BUCKET))),
            durable=(
                (_stream_of(subjects.match_formed()), table.MATCH_CONSUMER),
                (table.ARCHIVE_STREAM, table.ARCHIVE_CONSUMER),
            ),
        ),
        "timers": Grants(
            # Table commands: AutoAct, Leave, ReclaimSeat, and read_events to catch up; the
            # table replicas' unfinished tables (ADR 0012 decision 6).
            publish=(subjects.all_table_commands(), subjects.all_timers(), subjects.table_live()),
            subscribe=(subjects.all_public_events(),),  # every public batch, core NATS
            read=tuple(map(kv_stream, timers_buckets)),
            write_buckets=timers_buckets,
            ephemeral=tuple(map(kv_stream, timers_buckets)),
            durable=((timers.PRESENCE_STREAM, timers.PRESENCE_CONSUMER),),
        ),
        "scoring": Grants(
            publish=(subjects.scoring_journal(), subjects.all_records_archived()),
            read=(_stream_of(subjects.scoring_journal()),),
            ephemeral=(_stream_of(subjects.scoring_journal()),),
            durable=((results, ScoringConfig.consumer),),
        ),
        "matchmaking": Grants(
            publish=(subjects.match_formed(),),
            subscribe=(kv_subjects(mm.TICKETS_BUCKET),),  # KeyWatchHub: every write to the tickets
            read=(*map(kv_stream, mm_buckets), kv_stream(mm.SEATS_BUCKET)),
            write_buckets=mm_buckets,
            purge=(kv_stream(mm.TICKETS_BUCKET),),
            ephemeral=tuple(map(kv_stream, mm_buckets)),
        ),
        "gateway": Grants(
            publish=(subjects.all_table_commands(), subjects.all_presence()),
            subscribe=(subjects.all_table_feeds(),),  # every table's events, each seat's own copies too
            read=(kv_stream(GATEWAY_ACCOUNTS_BUCKET),),
            write_buckets=(GATEWAY_ACCOUNTS_BUCKET,),
        ),
    }


def _stream_of(subject: str) -> str:
    """The declared stream whose subjects are exactly `subject`'s (provisioning.STREAMS)."""
    from trix.natsio.provisioning import STREAMS

    for spec in STREAMS:
        if subject in spec.subjects:
            return spec.name
    raise LookupError(f"no declared stream stores {subject!r}")


def grants_of(user: str) -> Grants:
    """What service `user` does on NATS."""
    grants = _all_grants()
    if user not in grants:
        raise ValueError(f"unknown service user {user!r}; one of {', '.join(SERVICE_USERS)}")
    return grants[user]


def _durables_of_others(user: str, stream: str) -> list[str]:
    return [name for other, g in _all_grants().items() if other != user for s, name in g.durable if s == stream]


def _consumer_api(stream: str, consumer: str) -> list[str]:
    """Create, info, delete, pull from and acknowledge one consumer of a stream."""
    api = "$JS.API.CONSUMER"
    return [
        f"{api}.CREATE.{stream}.{consumer}",
        f"{api}.CREATE.{stream}.{consumer}.>",
        f"{api}.DURABLE.CREATE.{stream}.{consumer}",
        f"{api}.INFO.{stream}.{consumer}",
        f"{api}.DELETE.{stream}.{consumer}",
        f"{api}.MSG.NEXT.{stream}.{consumer}",
        f"$JS.ACK.{stream}.{consumer}.>",
    ]


def permissions_of(user: str) -> dict[str, object]:
    """The nats-server permissions of `user`: a whitelist, with denials only to carve the
    other services' durable consumers out of a stream it opens ephemeral consumers on."""
    if user == PROVISIONER:
        return provisioner_permissions()
    g = grants_of(user)
    allow: list[str] = ["$JS.API.INFO", *g.publish]
    deny: list[str] = []
    for stream in g.read:
        allow += [f"$JS.API.STREAM.INFO.{stream}", f"$JS.API.STREAM.MSG.GET.{stream}"]
        allow += [f"$JS.API.DIRECT.GET.{stream}", f"$JS.API.DIRECT.GET.{stream}.>"]
    allow += [kv_subjects(b) for b in g.write_buckets]
    allow += [f"$JS.API.STREAM.PURGE.{s}" for s in g.purge]
    for stream in g.ephemeral:
        allow += [f"$JS.API.STREAM.INFO.{stream}", f"$JS.API.CONSUMER.CREATE.{stream}", *_consumer_api(stream, "*")]
        allow.append(f"$JS.FC.{stream}.>")
        for name in _durables_of_others(user, stream):
            deny += _consumer_api(stream, name)
    for stream, name in g.durable:
        allow += [f"$JS.API.STREAM.INFO.{stream}", *_consumer_api(stream, name), f"$JS.FC.{stream}.>"]
    perms: dict[str, object] = {
        "publish": {"allow": list(dict.fromkeys(allow)), **({"deny": deny} if deny else {})},
        "subscribe": {"allow": [*g.subscribe, f"{inbox_prefix(user)}.>"]},
    }
    if g.serves_requests:
        perms["allow_responses"] = True
    return perms


def provisioner_permissions() -> dict[str, object]:
    """The provisioner creates, updates and deletes streams and buckets and reads their
    configs; it may not read a single message (no get, no consumer, no subscription)."""
    api = "$JS.API.STREAM"
    return {
        "publish": {
            "allow": ["$JS.API.INFO", f"{api}.INFO.*", f"{api}.CREATE.*", f"{api}.UPDATE.*", f"{api}.DELETE.*"]
        },
        "subscribe": {"allow": [f"{inbox_prefix(PROVISIONER)}.>"]},
    }


def streams_of(user: str) -> tuple[str, ...]:
    """The streams (and buckets' streams) service `user` uses and may see."""
    return grants_of(user).streams


def authorization_block(passwords: Mapping[str, str]) -> str:
    """The nats-server config section declaring one user per entry of `passwords`.

    JSON is valid nats-server config syntax, so values are written with json.dumps.
    """
    users = []
    for user, password in passwords.items():
        if user not in USERS:
            raise ValueError(f"unknown NATS user {user!r}; one of {', '.join(USERS)}")
        users.append({"user": user, "password": password, "permissions": permissions_of(user)})
    return "authorization " + json.dumps({"users": users}, indent=2) + "\n"


def user_url(url: str, user: str, password: str) -> str:
    """`nats://127.0.0.1:4222` -> `nats://user:password@127.0.0.1:4222` (the form TRIX_NATS_URL takes)."""
    scheme, sep, rest = url.partition("://")
    if not sep:
        scheme, rest = "nats", url
    return f"{scheme}://{user}:{password}@{rest}"


def user_of(url: str) -> str | None:
    """The user named in a NATS URL (`nats://table:pw@host:4222` -> `table`), None without one."""
    if "://" not in url:
        url = f"nats://{url}"
    name = urlsplit(url).username
    return unquote(name) if name else None
