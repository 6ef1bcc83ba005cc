"""Every NATS subject of the platform is built here, and only here.

Owns one builder per subject (the table's commands per shard, log, snapshots, feed and
public events, results; presence; MatchFormed; the timers' audit; the scoring journal and
RecordArchived); who publishes and reads each: docs/architecture.md. Tokens are checked,
so an id can never inject a wildcard or an extra token. The streams, buckets and consumers
that hold these subjects are named in `trix.natsio.names`.
"""

from __future__ import annotations

import zlib

from trix.errors import InvalidArgument
from trix.rules import PLAYER_ID, PLAYER_ID_RULE

ROOT = "trix"
TABLE_SHARDS = 64
"""Number of command shards; a table's shard is crc32(table_id) % TABLE_SHARDS."""


def token(value: str, what: str = "id") -> str:
    """A subject token from an id (`trix.rules.PLAYER_ID`: also a table id or a service name);
    raises InvalidArgument on `.`, `*`, `>`, spaces or empty."""
    if not PLAYER_ID.fullmatch(value):
        raise InvalidArgument(f"{what} must be {PLAYER_ID_RULE}: {value!r}")
    return value


def table_shard(table_id: str, shards: int = TABLE_SHARDS) -> int:
    """The command shard of a table (stable across processes and versions)."""
    return zlib.crc32(token(table_id, "table id").encode()) % shards


# -- table commands -------------------------------------------------------------


def table_command(table_id: str, shards: int = TABLE_SHARDS) -> str:
    """Where TableCommand requests for one table are sent."""
    return f"{ROOT}.table.cmd.{table_shard(table_id, shards)}.{token(table_id, 'table id')}"


ACCEPTED_BY_CAUSE_HEADER = "Trix-Accepted-By-Cause"
"""On a seat action's table command (value "1"): the sender follows the table's feed, so
a fresh acceptance reaches it as the feed batch's `cause` and the table sends no reply to
it; errors and repeats are answered as ever (`trix.table.codec.handle_command`)."""


def table_commands_of_shard(shard: int) -> str:
    """Wildcard an owner subscribes to for every table of one shard."""
    return f"{ROOT}.table.cmd.{int(shard)}.*"


def all_table_commands() -> str:
    """Wildcard over every table command (permissions, tools)."""
    return f"{ROOT}.table.cmd.>"


def table_served() -> str:
    """Where a table replica says it now serves shards it won (their numbers, comma-separated,
    `trix.natsio.served`): a caller whose command to one of them waits for an answer sends it
    again at once, instead of waiting out an attempt that went to the old owner (ADR 0021)."""
    return f"{ROOT}.table.served"


# -- table log and snapshots (private to the table service) -----------------------


def table_log(table_id: str) -> str:
    """The subject of a table's JetStream log."""
    return f"{ROOT}.table.log.{token(table_id, 'table id')}"


def all_table_logs() -> str:
    return f"{ROOT}.table.log.>"


def table_snapshot(table_id: str) -> str:
    """The subject of a table's snapshots."""
    return f"{ROOT}.table.snap.{token(table_id, 'table id')}"


def all_table_snapshots() -> str:
    return f"{ROOT}.table.snap.>"


# -- table events ---------------------------------------------------------------


def table_feed(table_id: str) -> str:
    """A table's feed: every action's public copies with each seat's own copies, for the
    gateways only, which give each seat its own and a spectator none (docs/rules.md §14)."""
    return f"{ROOT}.table.evt.{token(table_id, 'table id')}.feed"


def public_events(table_id: str) -> str:
    """Public events of a table: what spectators may see (docs/rules.md §14)."""
    return f"{ROOT}.table.evt.{token(table_id, 'table id')}.public"


def all_table_feeds() -> str:
    return f"{ROOT}.table.evt.*.feed"


def all_public_events() -> str:
    return f"{ROOT}.table.evt.*.public"


def all_table_events() -> str:
    return f"{ROOT}.table.evt.>"


def table_live() -> str:
    """Asked of every table replica at once: its unfinished tables (LiveTablesResponse)."""
    return f"{ROOT}.table.live"


def table_results(table_id: str) -> str:
    """A table's durable results (TABLE_RESULTS): the public events scoring needs."""
    return f"{ROOT}.table.results.{token(table_id, 'table id')}"


def all_table_results() -> str:
    return f"{ROOT}.table.results.*"


# -- presence, matches, timers ------------------------------------------------------


def presence(player_id: str) -> str:
    """Presence events of one player (published by the gateway)."""
    return f"{ROOT}.presence.{token(player_id, 'player id')}"


def all_presence() -> str:
    return f"{ROOT}.presence.*"


def gateways_online() -> str:
    """Core NATS: each gateway's beat, the players it holds online (`trix.natsio.online`);
    the social service marks offline a player no gateway named for a few periods."""
    return f"{ROOT}.gateway.online"


def match_formed() -> str:
    """MatchFormed events (published by matchmaking)."""
    return f"{ROOT}.match.formed"


def timers_autoact(table_id: str) -> str:
    """AutoAct decisions of the timers for a table."""
    return f"{ROOT}.timers.autoact.{token(table_id, 'table id')}"


def timers_leave(table_id: str) -> str:
    """Leave decisions of the timers for a table."""
    return f"{ROOT}.timers.leave.{token(table_id, 'table id')}"


def all_timers() -> str:
    return f"{ROOT}.timers.>"


def competition_events(competition_id: str) -> str:
    """One competition's stored events (COMPETITIONS, docs/adr/0026)."""
    return f"{ROOT}.competitions.evt.{token(competition_id, 'competition id')}"


COMPETITION_SHARDS = 16
"""Number of competition shards leased by the competitions replicas (docs/adr/0026); a
competition's shard is crc32(competition_id) % COMPETITION_SHARDS."""


def competition_shard(competition_id: str, shards: int = COMPETITION_SHARDS) -> int:
    """The lease shard of a competition (stable across processes and versions)."""
    return zlib.crc32(token(competition_id, "competition id").encode()) % shards


def all_competition_events() -> str:
    return f"{ROOT}.competitions.evt.*"


def competition_notices(player_id: str) -> str:
    """What the competitions service tells one entrant (core NATS, docs/adr/0029): his next
    table, his competitions' changes; the gateways pass them to his streams."""
    return f"{ROOT}.competitions.notice.{token(player_id, 'player id')}"


def all_competition_notices() -> str:
    return f"{ROOT}.competitions.notice.*"


# -- social (docs/adr/0027): stored chat, and its core NATS events for the gateways ----------


def table_chat(table_id: str, spectators: bool) -> str:
    """A table's players' or spectators' chat channel (SOCIAL_TABLE_CHAT)."""
    return f"{ROOT}.social.chat.table.{token(table_id, 'table id')}.{'spectators' if spectators else 'players'}"


def all_table_chats() -> str:
    return f"{ROOT}.social.chat.table.>"


def direct_chat(one: str, other: str) -> str:
    """Two friends' conversation (SOCIAL_DIRECT), one subject per pair (ids sorted)."""
    a, b = sorted((token(one, "player id"), token(other, "player id")))
    return f"{ROOT}.social.chat.direct.{a}.{b}"


def all_direct_chats() -> str:
    return f"{ROOT}.social.chat.direct.>"


def competition_chat(competition_id: str) -> str:
    """A competition's chat (SOCIAL_COMPETITION_CHAT)."""
    return f"{ROOT}.social.chat.competition.{token(competition_id, 'competition id')}"


def all_competition_chats() -> str:
    return f"{ROOT}.social.chat.competition.*"


def social_reports() -> str:
    """Reported lines (SOCIAL_REPORTS)."""
    return f"{ROOT}.social.reports"


SOCIAL_HIDDEN_FROM_HEADER = "Trix-Hidden-From"
"""On a channel's social event: the comma-separated players it must not be shown to (a block
either way, a mute); the gateway drops the event for them and never forwards the header."""


def social_channel_events(table_or_competition: str, channel: str) -> str:
    """Core NATS: a table channel's (`players`, `spectators`) or a competition's (`competition`)
    lines as `SocialEvent`s, for the gateways' sessions that read it."""
    return f"{ROOT}.social.evt.{channel}.{token(table_or_competition, 'channel id')}"


def social_player_events(player_id: str) -> str:
    """Core NATS: one player's own social events (direct messages, friend notices, presence
    of friends, invitations, his timeout), for the gateway holding his sessions."""
    return f"{ROOT}.social.evt.player.{token(player_id, 'player id')}"


def all_social_events() -> str:
    return f"{ROOT}.social.evt.>"


def social_send_chat() -> str:
    """Core NATS request/reply: a player's chat line (`SendChatRequest`) from a gateway to the
    social service (docs/adr/0031), his token in `trix.runtime.identity.TOKEN_HEADER`; only the gateway's user
    may publish here, only the social service's subscribes."""
    return f"{ROOT}.social.send.chat"


SOCIAL_DISPLAY_NAME_HEADER = "Trix-Display-Name"
"""On a chat line's request: the writer's display name as the gateway knows it, percent-encoded
UTF-8 (`urllib.parse.quote`), judged by the social service before anyone is shown it."""
SOCIAL_ERROR_HEADER = "Trix-Error"
"""On a chat line's reply: the refusal's kind (`trix.errors.error_kind`), its public message
the body (UTF-8); absent, the body is the `SendChatResponse`."""
SOCIAL_RETRY_AFTER_HEADER = "Trix-Retry-After-Ms"
"""On a rate limit's refusal: the milliseconds to wait (`ResourceExhausted.retry_after_s`)."""
SOCIAL_SENT_BY_HEADER = "Trix-Sent-By"
"""On a chat line's request, and on the line's social events: the gateway session that sent it
(a Session stream), which has the line in its answer (`SendChatResponse.line`) and is not sent
it again as an event; the gateway never forwards the header."""


# -- scoring ------------------------------------------------------------------------


def scoring_journal() -> str:
    """The scoring service's journal: every applied game event and wallet
    posting, in order; its projections are rebuilt by replaying it."""
    return f"{ROOT}.scoring.journal"


def record_archived(table_id: str) -> str:
    """RecordArchived of a table, published by scoring once the finished game's record is in
    its journal; the table service then purges the table's log, snapshot and seed."""
    return f"{ROOT}.scoring.archived.{token(table_id, 'table id')}"


def all_records_archived() -> str:
    return f"{ROOT}.scoring.archived.*"
