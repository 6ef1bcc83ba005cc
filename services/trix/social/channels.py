"""Who may write and read which chat channel (issue 44, docs/rules.md §15).

Owns the channel rules as pure functions: `write_refusal` (why a writer may not send a line
there, or "" when he may) and `may_read`. The kinds of channel: a table's players' channel
(its seated players write), a table's spectators' channel (its spectators write; a player
reads it only if his setting says so), a direct conversation of two friends, and a
competition's chat when its organiser turned it on.

The rules: bots never chat; a spectator never writes into the players' channel, nor a
seated player into the spectators' one (nothing from the seats reaches the spectators' room
and the other way round); in a partnership game a seated player sends no free text while a
deal is being played unless the table's `partner_chat` option allows it (§15: quick phrases
only while a deal is played by default: the deals follow one another without a pause, so
from the first deal to the game's end; free text after it), since free text could tell a
partner about a hand (§14). Quick phrases pass wherever the writer may write. Who is blocked
by whom is `trix.social.friends`; flood limits and the filter are `trix.social.moderation`.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass


class ChannelKind(enum.Enum):
    TABLE_PLAYERS = "table players"
    TABLE_SPECTATORS = "table spectators"
    DIRECT = "direct"
    COMPETITION = "competition"


class Role(enum.Enum):
    """Who a writer or reader is to the channel's table or competition."""

    SEATED = "seated"
    """A human player in a seat of the table (or a member of the competition, a party of the
    direct conversation)."""
    SPECTATOR = "spectator"
    BOT = "bot"
    OUTSIDER = "outsider"
    """Neither seated nor watching nor a member."""


class LineKind(enum.Enum):
    FREE_TEXT = "free text"
    QUICK_PHRASE = "quick phrase"


class PartnerChat(enum.Enum):
    """docs/rules.md §15, the table option `partner_chat` of a partnership game."""

    PHRASES_DURING_DEALS = "phrases during deals"
    """The default: quick phrases only while a deal is played (from the first deal to the game's
    end: the deals follow one another), free text after the game."""
    FREE_TEXT = "free text"
    """Free text at any time (a table of friends who trust each other)."""


DEFAULT_PARTNER_CHAT = PartnerChat.PHRASES_DURING_DEALS


@dataclass(frozen=True)
class TableTalk:
    """What the channel rules need of a table, at the moment of a line."""

    partnership: bool = False
    deal_in_progress: bool = False
    partner_chat: PartnerChat = DEFAULT_PARTNER_CHAT


@dataclass(frozen=True)
class ChannelState:
    """A channel as the rules see it: its kind, its table (table channels) and whether its
    organiser turned it on (a competition's chat)."""

    kind: ChannelKind
    table: TableTalk = TableTalk()
    enabled: bool = True


def write_refusal(channel: ChannelState, writer: Role, line: LineKind) -> str:
    """Why `writer` may not send a `line` in `channel` (a message a client can show), or ""."""
    if writer is Role.BOT:
        return "bots do not chat"
    if not channel.enabled:
        return "this chat is turned off"
    if channel.kind is ChannelKind.TABLE_PLAYERS:
        if writer is Role.SPECTATOR:
            return "spectators write in the spectators' chat, never the players'"
        if writer is not Role.SEATED:
            return "only the players of this table write here"
        talk = channel.table
        if (
            line is LineKind.FREE_TEXT
            and talk.partnership
            and talk.deal_in_progress
            and talk.partner_chat is PartnerChat.PHRASES_DURING_DEALS
        ):
            return "during a deal of a partnership game only quick phrases (docs/rules.md §15)"
        return ""
    if channel.kind is ChannelKind.TABLE_SPECTATORS:
        return "" if writer is Role.SPECTATOR else "only the spectators of this table write here"
    # A direct conversation or a competition: its parties or members only.
    return "" if writer is Role.SEATED else "only its members write here"


def may_write(channel: ChannelState, writer: Role, line: LineKind) -> bool:
    return not write_refusal(channel, writer, line)


def may_read(channel: ChannelState, reader: Role, *, reads_spectators: bool = False) -> bool:
    """Whether `reader` is sent the lines of `channel`. A table's players' channel is read by
    its players and spectators; its spectators' channel by its spectators, and by a player
    whose setting `reads_spectators` is on. Bots read nothing. Blocks and mutes are applied
    per line after this (`trix.social.friends.hides_lines`)."""
    if reader in (Role.BOT, Role.OUTSIDER) or not channel.enabled:
        return False
    if channel.kind is ChannelKind.TABLE_PLAYERS:
        return True
    if channel.kind is ChannelKind.TABLE_SPECTATORS:
        return reader is Role.SPECTATOR or reads_spectators
    return reader is Role.SEATED
