"""What the social service knows of the tables (issue 44, docs/adr/0027), from their stored
results only (TABLE_RESULTS: TableCreated, SeatControlChanged, DealScored, GameEnded; a few
a game, never one an action): who sits where and which seats are bots, whether a deal is
being played, the table's `partner_chat` option (docs/rules.md §15), whether it is private,
and whether its game ended. Never a hand: results are public events (§14).

A deal is being played from a table's creation to its game's end: the first deal is dealt
when the table is created (a table awaiting its players' seeds, §11, which only an operator's
CreateTable asks for, counts as dealt: the safe side of §15), and the next deal is dealt in
the step that scores one (`trix.table.table.Table._map`): there is no moment between deals.
A seat leaving a free table gives it to a bot (SeatControlChanged), a paid table ends
(GameEnded, §10): the results tell every leaving without SeatLeft.

Owns `TableBook`: `apply` one result of a table; `role` of a player at a table for the
channel rules (`trix.social.channels`); `talk` (what the players' channel rule needs); each
player's live table (presence: in a game). Pure.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from trix.social.channels import DEFAULT_PARTNER_CHAT, PartnerChat, Role, TableTalk
from trix.v1 import common_pb2, events_pb2

PARTNERSHIP_VARIANTS = frozenset({common_pb2.VARIANT_TRIX_PARTNERSHIP, common_pb2.VARIANT_COMPLEX_PARTNERSHIP})
_PARTNER_CHAT = {common_pb2.PARTNER_CHAT_FREE_TEXT: PartnerChat.FREE_TEXT}


def partner_chat_of(options: common_pb2.TableOptions) -> PartnerChat:
    """A table's `partner_chat` option (§15; unspecified: the default)."""
    return _PARTNER_CHAT.get(options.partner_chat, DEFAULT_PARTNER_CHAT)


@dataclass
class Table:
    """One table as its results tell it."""

    table_id: str
    players: dict[str, bool] = field(default_factory=dict)
    """Each seat's player -> whether a bot plays the seat now."""
    partnership: bool = False
    partner_chat: PartnerChat = DEFAULT_PARTNER_CHAT
    private: bool = False
    ended: bool = False
    sequence: int = 0

    @property
    def deal_in_progress(self) -> bool:
        """From its creation to its game's end (the module docstring)."""
        return not self.ended


class TableBook:
    """The tables seen, and each player's table while its game is played."""

    def __init__(self) -> None:
        self.tables: dict[str, Table] = {}
        self.live_table: dict[str, str] = {}
        """Player -> the table he is seated at while its game is being played."""

    def created(self, event: events_pb2.Event, *, ended: bool = False) -> Table:
        """A table from its TableCreated (`ended`: read back after its game's end)."""
        created = event.table_created
        table = Table(
            event.table_id,
            players={s.player_id: s.bot for s in created.seats if s.player_id},
            partnership=created.variant in PARTNERSHIP_VARIANTS,
            partner_chat=partner_chat_of(created.options),
            private=created.private_table,
            ended=ended,
            sequence=event.sequence,
        )
        self.tables[table.table_id] = table
        if not ended:
            for player in table.players:
                self.live_table[player] = table.table_id
        return table

    def apply(self, event: events_pb2.Event) -> tuple[str, ...]:
        """One result; returns the players whose live table changed (presence)."""
        body = event.WhichOneof("body")
        if body == "table_created":
            if event.table_id in self.tables:
                return ()
            return tuple(self.created(event).players)
        table = self.tables.get(event.table_id)
        if table is None or event.sequence <= table.sequence:
            return ()
        table.sequence = event.sequence
        if body == "seat_control_changed":
            change = event.seat_control_changed
            player = change.player_id
            if not player:
                return ()
            table.players[player] = change.bot
            live = self.live_table.get(player) == table.table_id
            if change.bot and live:  # he left: a bot plays his seat (§10)
                del self.live_table[player]
                return (player,)
            if not change.bot and not live and not table.ended:  # he took his seat back
                self.live_table[player] = table.table_id
                return (player,)
        elif body == "game_ended":
            table.ended = True
            left = tuple(p for p, t in self.live_table.items() if t == table.table_id)
            for player in left:
                del self.live_table[player]
            return left
        return ()

    def role(self, table: Table, player: str) -> Role:
        """Who `player` is to `table`: seated, a bot's seat, or a spectator (anyone else may
        watch a public table; a private table is watched by invitation, at the gateway)."""
        if player in table.players:
            return Role.BOT if table.players[player] else Role.SEATED
        return Role.SPECTATOR

    @staticmethod
    def talk(table: Table) -> TableTalk:
        return TableTalk(table.partnership, table.deal_in_progress, table.partner_chat)
