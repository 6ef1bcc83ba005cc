"""Every JetStream stream, KV bucket and durable consumer name of the platform.

Owns the names only: their configs are declared in `trix.natsio.provisioning`, the subjects
in `trix.natsio.subjects`, who may use each in `trix.declarations` (the services' grants).
Services, the permissions and the provisioner import them from here, so a name is written
once and a renamed one cannot leave its grant behind. Pure constants: imports nothing.
"""

from __future__ import annotations

# -- streams ------------------------------------------------------------------------

TABLE_LOG_STREAM = "TABLE_LOG"
"""Each table's accepted actions (private to the table service: hands, seeds)."""
TABLE_SNAPSHOTS_STREAM = "TABLE_SNAPSHOTS"
"""Latest engine snapshot of each table (private to the table service)."""
TABLE_RESULTS_STREAM = "TABLE_RESULTS"
"""The durable part of a table's events: TableCreated, SeatControlChanged,
DealScored and GameEnded, what scoring settles from. The other events travel on core NATS."""
PRESENCE_STREAM = "PRESENCE"
"""PlayerConnected / PlayerDisconnected, published by the gateway."""
MATCHES_STREAM = "MATCHES"
"""MatchFormed, published by matchmaking."""
TIMERS_STREAM = "TIMERS"
"""The timers' AutoAct and Leave decisions (audit)."""
SCORING_JOURNAL_STREAM = "SCORING_JOURNAL"
"""The scoring journal: game results and wallet postings, kept forever."""
SCORING_ARCHIVED_STREAM = "SCORING_ARCHIVED"
"""RecordArchived: scoring stored a finished game's record."""
COMPETITIONS_STREAM = "COMPETITIONS"
"""Every competition's events, one subject per competition (docs/adr/0026): the competitions
service's truth, appended by the competition's one owner with the expected last subject sequence."""
SOCIAL_TABLE_CHAT_STREAM = "SOCIAL_TABLE_CHAT"
"""Each table's two chat channels (players', spectators'), the last 100 lines of each (docs/adr/0027)."""
SOCIAL_DIRECT_STREAM = "SOCIAL_DIRECT"
"""Direct messages, one subject per pair of friends, the last 100 lines of each."""
SOCIAL_COMPETITION_CHAT_STREAM = "SOCIAL_COMPETITION_CHAT"
"""Each competition's chat, the last 100 lines of each."""
SOCIAL_REPORTS_STREAM = "SOCIAL_REPORTS"
"""Reported chat lines with their context, for the operators (ListReports)."""

# -- KV buckets -------------------------------------------------------------------------

TABLE_LEASES_BUCKET = "table_leases"
"""Owner of each table command shard (ADR 0007)."""
TABLE_REPLICAS_BUCKET = "table_replicas"
"""Table replicas' heartbeats."""
PLAYER_TABLES_BUCKET = "player_tables"
"""Player -> current table: the table writes it, matchmaking reads it. Once the game
is over, the value becomes ENDED_TABLE_PREFIX + the table id: no current table, and which game
ended."""
ENDED_TABLE_PREFIX = "ended:"
"""Prefix of a `player_tables` value naming a table whose game is over ("play again" at once)."""
TABLE_SECRETS_BUCKET = "table_secrets"
"""Server seed of each running table (private to the table service, docs/rules.md §11, §14)."""
TIMER_DEADLINES_BUCKET = "timer_deadlines"
"""Pending decision deadlines."""
TIMER_REPLICAS_BUCKET = "timer_replicas"
"""Timers replicas' heartbeats."""
MATCH_TICKETS_BUCKET = "match_tickets"
"""Matchmaking tickets and claims."""
MATCH_LEASES_BUCKET = "match_leases"
"""Matchmaking replicas' heartbeats and queue-partition leases."""
GATEWAY_ACCOUNTS_BUCKET = "gateway_accounts"
"""Guest accounts of the gateway."""
SOCIAL_FRIENDS_BUCKET = "social_friends"
"""Friendships (`pair.<a>.<b>`, one key per pair of players) and mutes (`mute.<muter>.<muted>`)."""
SOCIAL_PRESENCE_BUCKET = "social_presence"
"""Player -> his connected sessions, from the gateway's PRESENCE stream (friends see the status)."""
COMPETITION_LEASES_BUCKET = "competition_leases"
"""Owner of each competition shard (docs/adr/0026: the table's lease pattern)."""
COMPETITION_REPLICAS_BUCKET = "competition_replicas"
"""Competitions replicas' heartbeats."""

# -- durable consumers (each on one stream) ----------------------------------------------

TABLE_MATCH_CONSUMER = "table-match-formed"
"""The table replicas' shared consumer of MATCHES (ADR 0020)."""
TABLE_ARCHIVE_CONSUMER = "table-records-archived"
"""The table replicas' shared consumer of SCORING_ARCHIVED."""
TIMERS_PRESENCE_CONSUMER = "timers-presence"
"""The timers replicas' shared consumer of PRESENCE."""
SCORING_CONSUMER = "scoring"
"""The scoring replicas' shared consumer of TABLE_RESULTS (TRIX_SCORING_CONSUMER may only repeat it)."""
SOCIAL_PRESENCE_CONSUMER = "social-presence"
"""The social service's consumer of PRESENCE (its friends' online status)."""
SOCIAL_RESULTS_CONSUMER = "social-results"
"""The social service's consumer of TABLE_RESULTS (who sits where, the game's end: its table facts)."""


def kv_stream(bucket: str) -> str:
    """The JetStream stream behind a KV bucket."""
    return f"KV_{bucket}"


def kv_subjects(bucket: str) -> str:
    """Every key of a KV bucket (what a write publishes on)."""
    return f"$KV.{bucket}.>"
