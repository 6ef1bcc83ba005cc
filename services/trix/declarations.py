"""Every service of the platform, declared once.

Owns `SERVICES`: one `ServiceDeclaration` per service (after `nats.micro`'s `ServiceConfig`),
what the plumbing derives everything per service from: its NATS user and whitelist
(`trix.natsio.permissions`, the generated nats.conf of `trix.natsio.serverconf`), the token
keys it is given (`keys_of`), the processes `trix up` runs (`trix.supervisor`), and what
`make k8s-check` holds the manifests to. Adding a service is its package, its proto, its
declaration here and its manifest: nothing else lists the services.

Imports only plumbing (NATS names, subjects, `Grants`, the token key variables), never a
service, so `trix.natsio` and `trix.runtime` may import it.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal

from trix.natsio import names, subjects
from trix.natsio.grants import Grants
from trix.natsio.names import kv_stream, kv_subjects
from trix.runtime.identity import (
    ADMIN,
    GATEWAY_KEY_ENV,
    PLAYER_KEY_ENV,
    SERVICE_KEY_ENV,
    Keys,
    load_key,
    load_signing_key,
    load_trusted,
    public_key_env,
    public_key_of,
)

EDGE = "edge"
"""The public edge (Envoy) as a caller: it alone reaches the service that declares it."""
NAME = re.compile(r"[a-z][a-z0-9]*")
"""A service's name: its NATS user, its package, its Kubernetes name and the `<NAME>` of its
environment variables (`NATS_PASSWORD_<NAME>`, `TRIX_<NAME>_TARGET`)."""
TOKEN_KEYS = (PLAYER_KEY_ENV, SERVICE_KEY_ENV, GATEWAY_KEY_ENV)


@dataclass(frozen=True)
class Scaling:
    """How many copies of a service run."""

    replicas: int = 1
    """Copies `trix up` starts unless told otherwise (`--replicas NAME=N`)."""
    autoscale_on: Literal["cpu", "lag"] = "cpu"
    """What the deployed autoscaler follows: CPU (an HPA) or its durable consumers' lag (KEDA)."""
    max_replicas: int = 0
    """At most this many copies (0: no limit): 1 for a service with one writer and no leases yet."""


@dataclass(frozen=True)
class ServiceDeclaration:
    """One service: who it is on NATS and gRPC, what it owns and what it needs."""

    name: str
    """Its name (`NAME`), which is also its NATS user."""
    description: str
    grants: Grants
    """What it does on NATS: its user's whitelist is made of exactly this."""
    keys: tuple[str, ...]
    """The internal token keys it holds (`trix.runtime.identity`), nothing more: SERVICE_KEY_ENV
    is its own signing key (each service its own), held only by a service that signs."""
    streams: tuple[str, ...] = ()
    """The streams it owns (writes; their configs: `trix.natsio.provisioning`)."""
    buckets: tuple[str, ...] = ()
    """The KV buckets it owns."""
    callers: tuple[str, ...] = ()
    """Who may call its gRPC API besides admin clients: services by name, or `EDGE`."""
    token_callers: tuple[str, ...] = ()
    """Whose service tokens it accepts besides its gRPC callers': services that reach it over
    NATS (the timers' table commands), itself, or `ADMIN` (the operators' tools)."""
    scaling: Scaling = field(default_factory=Scaling)
    module: str = ""
    """What `trix up` runs: `python -m <module>` (default `trix.<name>`)."""

    def __post_init__(self) -> None:
        if not NAME.fullmatch(self.name):
            raise ValueError(f"service name {self.name!r}: lower-case letters and digits, a letter first")
        unknown = [k for k in self.keys if k not in TOKEN_KEYS]
        if unknown:
            raise ValueError(f"service {self.name}: unknown token keys {unknown}; one of {', '.join(TOKEN_KEYS)}")
        if not self.module:
            object.__setattr__(self, "module", f"trix.{self.name}")

    @property
    def target_env(self) -> str:
        """The variable its callers find its gRPC address in (host:port)."""
        return f"TRIX_{self.name.upper()}_TARGET"


_TABLE_BUCKETS = (
    names.TABLE_LEASES_BUCKET,
    names.TABLE_REPLICAS_BUCKET,
    names.PLAYER_TABLES_BUCKET,
    names.TABLE_SECRETS_BUCKET,
)
_TIMERS_BUCKETS = (names.TIMER_DEADLINES_BUCKET, names.TIMER_REPLICAS_BUCKET)
_MATCHMAKING_BUCKETS = (names.MATCH_TICKETS_BUCKET, names.MATCH_LEASES_BUCKET)
_COMPETITIONS_BUCKETS = (names.COMPETITION_LEASES_BUCKET, names.COMPETITION_REPLICAS_BUCKET)
_TABLE_STREAMS = (names.TABLE_LOG_STREAM, names.TABLE_SNAPSHOTS_STREAM, names.TABLE_RESULTS_STREAM)

TABLE = ServiceDeclaration(
    name="table",
    description="Runs the tables: validates and applies each action, appends it to the table's log.",
    grants=Grants(
        publish=(
            subjects.all_table_logs(),
            subjects.all_table_snapshots(),
            subjects.all_table_events(),  # core NATS batches (ADR 0012)
            subjects.all_table_results(),  # the durable results scoring settles from
            subjects.all_table_commands(),  # a replica forwards a command to the table's owner
            subjects.table_served(),  # shards it now serves: their waiting callers send again
        ),
        # Its own feeds: the gRPC API's seat and public streams (`TableBus.events`) follow
        # them as the gateway does. The table writes them and holds every hand: nothing new.
        subscribe=(subjects.all_table_commands(), subjects.table_live(), subjects.all_table_feeds()),
        serves_requests=True,
        read=(*_TABLE_STREAMS, *map(kv_stream, _TABLE_BUCKETS)),
        write_buckets=_TABLE_BUCKETS,
        purge=(names.TABLE_LOG_STREAM, names.TABLE_SNAPSHOTS_STREAM, kv_stream(names.TABLE_SECRETS_BUCKET)),
        # Its own results (it publishes them; reads of them), its lease and seed watches.
        ephemeral=(
            names.TABLE_RESULTS_STREAM,
            kv_stream(names.TABLE_LEASES_BUCKET),
            kv_stream(names.TABLE_REPLICAS_BUCKET),
            kv_stream(names.TABLE_SECRETS_BUCKET),  # its seeds' watch (`JetStreamStore.watch_seeds`)
        ),
        durable=(
            (names.MATCHES_STREAM, names.TABLE_MATCH_CONSUMER),
            (names.SCORING_ARCHIVED_STREAM, names.TABLE_ARCHIVE_CONSUMER),
        ),
    ),
    keys=(PLAYER_KEY_ENV, SERVICE_KEY_ENV),
    streams=_TABLE_STREAMS,
    # Its own CreateTable on a MatchFormed, the timers' AutoAct/Leave/reclaims, the operators.
    token_callers=("table", "timers", ADMIN),
    buckets=_TABLE_BUCKETS,
    scaling=Scaling(autoscale_on="cpu"),
)

TIMERS = ServiceDeclaration(
    name="timers",
    description="Decides turn deadlines and disconnections: AutoAct and Leave as table commands.",
    grants=Grants(
        # Table commands: AutoAct, Leave, ReclaimSeat, and read_events to catch up; the
        # table replicas' unfinished tables (ADR 0012 decision 6).
        publish=(subjects.all_table_commands(), subjects.all_timers(), subjects.table_live()),
        subscribe=(subjects.all_public_events(), subjects.table_served()),  # every public batch, core NATS
        read=tuple(map(kv_stream, _TIMERS_BUCKETS)),
        write_buckets=_TIMERS_BUCKETS,
        ephemeral=tuple(map(kv_stream, _TIMERS_BUCKETS)),
        durable=((names.PRESENCE_STREAM, names.TIMERS_PRESENCE_CONSUMER),),
    ),
    keys=(SERVICE_KEY_ENV,),
    streams=(names.TIMERS_STREAM,),
    token_callers=(ADMIN,),  # a player's presence (GetPresence)
    buckets=_TIMERS_BUCKETS,
    scaling=Scaling(autoscale_on="lag"),
)

SCORING = ServiceDeclaration(
    name="scoring",
    description="Settles finished games: the journal of results and wallet postings, ratings, records.",
    grants=Grants(
        publish=(subjects.scoring_journal(), subjects.all_records_archived()),
        read=(names.SCORING_JOURNAL_STREAM,),
        ephemeral=(names.SCORING_JOURNAL_STREAM,),
        durable=((names.TABLE_RESULTS_STREAM, names.SCORING_CONSUMER),),
    ),
    keys=(PLAYER_KEY_ENV,),  # it signs nothing: matchmaking's public key verifies its stake calls
    streams=(names.SCORING_JOURNAL_STREAM, names.SCORING_ARCHIVED_STREAM),
    # The competitions service posts to its competitions' escrows (docs/adr/0030).
    callers=("gateway", "matchmaking", "competitions"),
    # One consumer at a time (docs/adr/0004): its durable acks cumulatively and a gap in the
    # consumer sequence rewinds it (trix.natsio.consumer), so a second replica on the same
    # durable would ack the other's unapplied deliveries and rewind it every few seconds.
    scaling=Scaling(autoscale_on="lag", max_replicas=1),
)

MATCHMAKING = ServiceDeclaration(
    name="matchmaking",
    description="Seats players: tickets, private lobbies and rematches; announces each match formed.",
    grants=Grants(
        publish=(subjects.match_formed(),),
        subscribe=(kv_subjects(names.MATCH_TICKETS_BUCKET),),  # KeyWatchHub: every write to the tickets
        read=(*map(kv_stream, _MATCHMAKING_BUCKETS), kv_stream(names.PLAYER_TABLES_BUCKET)),
        write_buckets=_MATCHMAKING_BUCKETS,
        purge=(kv_stream(names.MATCH_TICKETS_BUCKET),),
        ephemeral=tuple(map(kv_stream, _MATCHMAKING_BUCKETS)),
    ),
    keys=(PLAYER_KEY_ENV, SERVICE_KEY_ENV),
    streams=(names.MATCHES_STREAM,),
    buckets=_MATCHMAKING_BUCKETS,
    callers=("gateway",),
    scaling=Scaling(autoscale_on="cpu"),
)

GATEWAY = ServiceDeclaration(
    name="gateway",
    description="The players' one API: accounts, sessions, each seat's own event stream, presence.",
    grants=Grants(
        # Presence: each session's, and its beat naming the players it holds (trix.natsio.online);
        # a player's chat line to the social service (a NATS request: docs/adr/0031); its other
        # social calls go by gRPC.
        publish=(
            subjects.all_table_commands(),
            subjects.all_presence(),
            subjects.gateways_online(),
            subjects.social_send_chat(),
        ),
        # Every table's events, each seat's own copies too; which shards a replica now serves;
        # the social service's events for its sessions (chat lines, friends' notices;
        # docs/adr/0027), never the chat streams; the competitions' notices to their entrants
        # (their next table, docs/adr/0029).
        subscribe=(
            subjects.all_table_feeds(),
            subjects.table_served(),
            subjects.all_social_events(),
            subjects.all_competition_notices(),
        ),
        read=(kv_stream(names.GATEWAY_ACCOUNTS_BUCKET),),
        write_buckets=(names.GATEWAY_ACCOUNTS_BUCKET,),
    ),
    # The player-role key and its own public-token key, never the service-role key.
    keys=(PLAYER_KEY_ENV, GATEWAY_KEY_ENV),
    streams=(names.PRESENCE_STREAM,),
    buckets=(names.GATEWAY_ACCOUNTS_BUCKET,),
    callers=(EDGE,),
    scaling=Scaling(autoscale_on="cpu"),
)

COMPETITIONS = ServiceDeclaration(
    name="competitions",
    description="Runs competitions: registration, rounds of tables, the bracket, the digest (docs/adr/0026).",
    grants=Grants(
        # Its own events (fenced appends); each round's tables as matchmaking's word, MatchFormed,
        # which the table service turns into its create command (ADR 0020).
        # and core NATS notices to each entrant (his next table, the bracket changed: docs/adr/0029).
        publish=(subjects.all_competition_events(), subjects.match_formed(), subjects.all_competition_notices()),
        # Its events read back at start and followed (the other replicas' appends); each table's
        # results read by last-message get; its shard leases (the table's pattern, watched).
        read=(names.COMPETITIONS_STREAM, names.TABLE_RESULTS_STREAM, *map(kv_stream, _COMPETITIONS_BUCKETS)),
        write_buckets=_COMPETITIONS_BUCKETS,
        ephemeral=tuple(map(kv_stream, _COMPETITIONS_BUCKETS)),
    ),
    # Its own key signs its escrow calls to scoring (docs/adr/0030); the operators' public key
    # verifies their calls.
    keys=(PLAYER_KEY_ENV, SERVICE_KEY_ENV),
    streams=(names.COMPETITIONS_STREAM,),
    buckets=_COMPETITIONS_BUCKETS,
    token_callers=(ADMIN,),  # system competitions (ADR 0028)
    # The gateway, with each player's own token (ADR 0029); operators' tools.
    callers=("gateway",),
    # Several replicas, one owner per competition by its shard's lease (docs/adr/0026); every
    # append fenced by the competition subject's expected last sequence. One in `trix up`
    # (cheapest); more than one per shard would idle.
    scaling=Scaling(replicas=1, autoscale_on="cpu", max_replicas=subjects.COMPETITION_SHARDS),
)

_SOCIAL_STREAMS = (
    names.SOCIAL_TABLE_CHAT_STREAM,
    names.SOCIAL_DIRECT_STREAM,
    names.SOCIAL_COMPETITION_CHAT_STREAM,
    names.SOCIAL_REPORTS_STREAM,
)
_SOCIAL_BUCKETS = (names.SOCIAL_FRIENDS_BUCKET, names.SOCIAL_PRESENCE_BUCKET)

SOCIAL = ServiceDeclaration(
    name="social",
    description="Chat, friends, presence for friends, invitations and moderation (docs/adr/0027).",
    grants=Grants(
        # Its chat streams and reports; each line again as a core event for the gateways.
        publish=(
            subjects.all_table_chats(),
            subjects.all_direct_chats(),
            subjects.all_competition_chats(),
            subjects.social_reports(),
            subjects.all_social_events(),
        ),
        # Two core subscriptions: the gateways' beat of the players online (a dead gateway's go
        # offline) and the gateways' chat lines (requests it answers: docs/adr/0031); the
        # tables' event batches (the move path) never reach it.
        subscribe=(subjects.gateways_online(), subjects.social_send_chat()),
        serves_requests=True,
        # History and reports by message get; a table's TableCreated read back (a table it
        # did not see created) and a competition's members and chat switch by message gets.
        read=(
            *_SOCIAL_STREAMS,
            *map(kv_stream, _SOCIAL_BUCKETS),
            names.TABLE_RESULTS_STREAM,
            names.COMPETITIONS_STREAM,
        ),
        write_buckets=_SOCIAL_BUCKETS,
        ephemeral=tuple(map(kv_stream, _SOCIAL_BUCKETS)),  # loaded at start (keys, watch)
        # Sessions (presence); the tables' stored results, a few a game (seats, bots, a
        # deal in progress, partner_chat, the end): public events (docs/rules.md §14).
        durable=(
            (names.PRESENCE_STREAM, names.SOCIAL_PRESENCE_CONSUMER),
            (names.TABLE_RESULTS_STREAM, names.SOCIAL_RESULTS_CONSUMER),
        ),
    ),
    keys=(PLAYER_KEY_ENV,),  # it signs nothing: players' tokens passed on by the gateway
    streams=_SOCIAL_STREAMS,
    buckets=_SOCIAL_BUCKETS,
    callers=("gateway",),
    token_callers=(ADMIN,),  # ListReports: the operators' tools
    # One replica: its flood limits and timeouts are in memory, and it alone writes the
    # friendships (no compare-and-set race); sharing them is the step before more (ADR 0027).
    scaling=Scaling(replicas=1, autoscale_on="cpu", max_replicas=1),
)

SERVICES: tuple[ServiceDeclaration, ...] = (TABLE, TIMERS, SCORING, MATCHMAKING, COMPETITIONS, SOCIAL, GATEWAY)
"""Every service, in start order: the table first, the gateway (which calls the others) last."""


def names_of(services: Sequence[ServiceDeclaration] = SERVICES) -> tuple[str, ...]:
    """The services' names (their NATS users), in declaration order."""
    return tuple(s.name for s in services)


def declaration(name: str, services: Sequence[ServiceDeclaration] = SERVICES) -> ServiceDeclaration:
    """The declaration of service `name`; ValueError naming the declared ones if none."""
    for service in services:
        if service.name == name:
            return service
    raise ValueError(f"unknown service {name!r}; one of {', '.join(names_of(services))}")


def keys_of(services: Sequence[ServiceDeclaration] = SERVICES) -> dict[str, tuple[str, ...]]:
    """The token keys each service holds (`trix up`, deploy/k8s)."""
    return {s.name: s.keys for s in services}


def callers_of(name: str, services: Sequence[ServiceDeclaration] = SERVICES) -> tuple[ServiceDeclaration, ...]:
    """The services that call service `name`'s gRPC API (not the edge nor admin clients)."""
    callers = declaration(name, services).callers
    return tuple(s for s in services if s.name in callers)


def signers(services: Sequence[ServiceDeclaration] = SERVICES) -> tuple[str, ...]:
    """Who signs service tokens, each with its own private key: the services holding a signing
    key (SERVICE_KEY_ENV), then the operators' tools (`ADMIN`)."""
    return (*(s.name for s in services if SERVICE_KEY_ENV in s.keys), ADMIN)


def service_token_callers(name: str, services: Sequence[ServiceDeclaration] = SERVICES) -> tuple[str, ...]:
    """The signers whose service tokens service `name` accepts, the public keys it is given
    (`TRIX_<NAME>_PUBLIC_KEY`): its gRPC callers that sign (never the gateway), then its
    `token_callers`."""
    declared = declaration(name, services)
    signing = signers(services)
    accepted = [s.name for s in callers_of(name, services) if s.name in signing]
    unknown = [c for c in declared.token_callers if c not in signing]
    if unknown:
        raise ValueError(f"service {name}: token callers {unknown} sign nothing; signers: {', '.join(signing)}")
    return tuple(dict.fromkeys((*accepted, *declared.token_callers)))


def signing_env(
    name: str, private_keys: Mapping[str, str], services: Sequence[ServiceDeclaration] = SERVICES
) -> dict[str, str]:
    """What service `name` is given of the signers' private keys (by signer, hex): its own if it
    signs (SERVICE_KEY_ENV), and the public key of each signer it accepts, nothing else."""
    env = {SERVICE_KEY_ENV: private_keys[name]} if SERVICE_KEY_ENV in declaration(name, services).keys else {}
    env.update({public_key_env(s): public_key_of(private_keys[s]) for s in service_token_callers(name, services)})
    return env


def load_keys(env: Mapping[str, str], name: str, services: Sequence[ServiceDeclaration] = SERVICES) -> Keys:
    """The token keys service `name` holds, from its environment as its declaration says: the
    player-role key, its own signing key and its accepted signers' public keys; ConfigError
    naming a missing or bad one."""
    declared = declaration(name, services)
    return Keys(
        player=load_key(env, PLAYER_KEY_ENV) if PLAYER_KEY_ENV in declared.keys else b"",
        signing=load_signing_key(env) if SERVICE_KEY_ENV in declared.keys else None,
        trusted=load_trusted(env, service_token_callers(name, services)),
    )


def fronted_by_edge(services: Sequence[ServiceDeclaration] = SERVICES) -> ServiceDeclaration:
    """The one service the public edge calls."""
    fronted = [s for s in services if EDGE in s.callers]
    if len(fronted) != 1:
        raise ValueError(f"exactly one service must declare the edge as its caller, not {names_of(fronted)}")
    return fronted[0]


KEYS_OF = keys_of()
"""`keys_of()` of the platform's services."""
PUBLIC_KEYS_OF = {s.name: service_token_callers(s.name) for s in SERVICES}
"""The signers whose public keys each service is given (`service_token_callers`)."""
