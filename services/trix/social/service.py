"""The social service (issue 44, docs/adr/0027): chat in four kinds of channel, its history,
reports, and the friends, mutes, presence and invitations of `trix.social.graph`.

Owns `SocialService`, the use cases behind `trix.v1.SocialService`, each for a caller the gRPC
adapter identified (a player by his own token, never a request field):
- `send_chat`: who may write where (`trix.social.channels`, the table's facts from its stored
  results, docs/rules.md §15), the flood limits, repeats, length and the word filter
  (`trix.social.moderation`), a direct message only between friends; a line is stored on its
  channel's stream, then sent as a core event to its readers with who must not see it (a
  block either way, a mute); a client's retry of one line is stored and sent once;
- `history`: the kept lines of a channel the caller may read, newest first, paged, without
  the lines he must not see;
- `report` / `reports`: a line kept with the lines around it, for an operator.
Imports neither grpc nor nats (ports: `trix.social.ports`).
"""

from __future__ import annotations

import itertools
import time
import uuid
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field

from trix.errors import InvalidArgument, NotFound, PermissionDenied, ResourceExhausted
from trix.natsio import names, subjects
from trix.natsio.provisioning import CHAT_LINES_KEPT
from trix.natsio.subjects import token
from trix.social import channels, phrases
from trix.social.channels import ChannelKind, ChannelState, LineKind, Role
from trix.social.friends import View
from trix.social.graph import SocialGraph, token_number
from trix.social.moderation import MAX_LINE_CHARACTERS, ChatModeration, Outcome
from trix.social.ports import ChatLog, Competitions, Outbox, Reports, StoredChannel, TableFacts
from trix.social.tables import Table, TableBook
from trix.v1 import events_pb2
from trix.v1 import social_pb2 as pb

KINDS = {
    pb.CHAT_CHANNEL_KIND_TABLE_PLAYERS: ChannelKind.TABLE_PLAYERS,
    pb.CHAT_CHANNEL_KIND_TABLE_SPECTATORS: ChannelKind.TABLE_SPECTATORS,
    pb.CHAT_CHANNEL_KIND_DIRECT: ChannelKind.DIRECT,
    pb.CHAT_CHANNEL_KIND_COMPETITION: ChannelKind.COMPETITION,
}
DEFAULT_PAGE = 50
REPORT_CONTEXT = 5
"""Lines kept before and after a reported line."""
MAX_REASON = 280
RETRIES_REMEMBERED = 10_000


@dataclass(frozen=True)
class Where:
    """A channel resolved for one player: the rules' view, its storage, its readers' subject."""

    state: ChannelState
    role: Role
    stored: StoredChannel
    kind: int
    channel_id: str
    """The channel's id as its proto names it (a direct channel: the other player)."""
    event_channel: str = ""
    """`players`, `spectators`, `competition`: its core subject's kind; "" for direct."""
    event_id: str = ""
    extra_readers: frozenset[str] = field(default_factory=frozenset)


class SocialService:
    def __init__(
        self,
        graph: SocialGraph,
        chat: ChatLog,
        reports: Reports,
        outbox: Outbox,
        table_facts: TableFacts,
        competitions: Competitions,
        *,
        clock: Callable[[], float] = time.monotonic,
        wall_ms: Callable[[], int] = lambda: time.time_ns() // 1_000_000,
    ) -> None:
        self.graph = graph
        self.tables: TableBook = graph.tables
        self.chat = chat
        self.report_log = reports
        self.outbox = outbox
        self.table_facts = table_facts
        self.competitions = competitions
        self.moderation = ChatModeration(clock)
        self.wall_ms = wall_ms
        self._sent: OrderedDict[tuple[str, str], int] = OrderedDict()
        self._run = uuid.uuid4().hex
        self._line_ids = itertools.count(1)
        """A line without a client_line_id: its message id this run's and a count (no random read a line)."""
        self.lines_sent = 0

    async def recover(self) -> None:
        await self.graph.load()

    # -- table facts (TABLE_RESULTS) -----------------------------------------------------

    async def on_table_result(self, event: events_pb2.Event) -> None:
        """One stored result of a table (`trix.social.tables`). A table this process did not
        see created (it started after, or restarted) is read back first, once."""
        body = event.WhichOneof("body")
        if body == "table_created":
            self._learn_names(event)
        elif event.table_id not in self.tables.tables and body != "game_ended":
            await self._read_back(event.table_id)
        for player in self.tables.apply(event):
            await self.graph.presence_changed(player)

    def _learn_names(self, created: events_pb2.Event) -> None:
        for seat in created.table_created.seats:
            if seat.player_id and seat.display_name and not seat.bot:
                self.graph.names.setdefault(seat.player_id, seat.display_name)

    async def _read_back(self, table_id: str) -> Table | None:
        """A table from TABLE_RESULTS (its TableCreated, whether its game ended), its players
        then shown in a game; None if there is no such table."""
        created, ended = await self.table_facts.created(table_id)
        if created is None:
            return None
        if table_id in self.tables.tables:  # its TableCreated came while we read
            return self.tables.tables[table_id]
        self._learn_names(created)
        table = self.tables.created(created, ended=ended)
        if not ended:
            for player in table.players:
                await self.graph.presence_changed(player)
        return table

    async def _table(self, table_id: str) -> Table:
        table = self.tables.tables.get(table_id)
        if table is None:
            table = await self._read_back(table_id)
        if table is None:
            raise NotFound("no such table")
        return table

    # -- channels -------------------------------------------------------------------------

    async def where(self, player: str, channel: pb.ChatChannel) -> Where:
        kind = KINDS.get(channel.kind)
        if kind is None:
            raise InvalidArgument("channel.kind: a table's players or spectators, direct, or a competition")
        cid = token(channel.id, "channel.id")
        if kind in (ChannelKind.TABLE_PLAYERS, ChannelKind.TABLE_SPECTATORS):
            table = await self._table(cid)
            role = self.tables.role(table, player)
            if table.private and role is Role.SPECTATOR:
                role = Role.OUTSIDER  # a private table's talk is its players' (docs/adr/0027)
            spectators = kind is ChannelKind.TABLE_SPECTATORS
            return Where(
                ChannelState(kind, self.tables.talk(table)),
                role,
                StoredChannel(names.SOCIAL_TABLE_CHAT_STREAM, subjects.table_chat(cid, spectators)),
                channel.kind,
                cid,
                "spectators" if spectators else "players",
                cid,
            )
        if kind is ChannelKind.DIRECT:
            if cid == player:
                raise InvalidArgument("channel.id: the other player")
            view = self.graph.view(player, cid)
            return Where(
                ChannelState(kind),
                Role.SEATED if view is View.FRIENDS else Role.OUTSIDER,
                StoredChannel(names.SOCIAL_DIRECT_STREAM, subjects.direct_chat(player, cid)),
                channel.kind,
                cid,
            )
        competition = await self.competitions.get(cid)
        if competition is None:
            raise NotFound("no such competition")
        member = player in competition.members or player == competition.organiser
        return Where(
            ChannelState(kind, enabled=competition.chat),
            Role.SEATED if member else Role.OUTSIDER,
            StoredChannel(names.SOCIAL_COMPETITION_CHAT_STREAM, subjects.competition_chat(cid)),
            channel.kind,
            cid,
            "competition",
            cid,
        )

    # -- chat -----------------------------------------------------------------------------

    async def send_chat(
        self, player: str, channel: pb.ChatChannel, text: str | None, phrase_id: str | None, client_line_id: str
    ) -> tuple[bool, int]:
        """(delivered, line id) of one line; raises what the caller is told (module docstring)."""
        delivered, line = await self.send_line(player, channel, text, phrase_id, client_line_id)
        return delivered, line.line_id if line is not None else 0

    async def send_line(
        self,
        player: str,
        channel: pb.ChatChannel,
        text: str | None,
        phrase_id: str | None,
        client_line_id: str,
        sent_by: str = "",
    ) -> tuple[bool, pb.ChatLine | None]:
        """`send_chat` with the line as sent (None: not delivered; its id alone: a retry's);
        `sent_by`: the gateway session that sent it, which has it in its answer, not as an event."""
        if text is None and phrase_id is None:
            raise InvalidArgument("a line is free text or a quick phrase")
        if text is not None and len(text) > MAX_LINE_CHARACTERS:
            raise InvalidArgument(f"a line is at most {MAX_LINE_CHARACTERS} characters")
        phrase = phrases.phrase(phrase_id) if phrase_id is not None else None
        if len(client_line_id) > 64:
            raise InvalidArgument("client_line_id: at most 64 characters")
        where = await self.where(player, channel)
        line_kind = LineKind.QUICK_PHRASE if phrase is not None else LineKind.FREE_TEXT
        if where.state.kind is ChannelKind.DIRECT and where.role is not Role.SEATED:
            raise PermissionDenied("direct messages go to friends only")
        refusal = channels.write_refusal(where.state, where.role, line_kind)
        if refusal:
            raise PermissionDenied(refusal)
        retry = (player, client_line_id)
        if client_line_id and retry in self._sent:
            return True, pb.ChatLine(line_id=self._sent[retry])
        judged = self.moderation.judge(player, where.stored.subject, phrase.en if phrase is not None else text or "")
        if judged.outcome is Outcome.TIMED_OUT:
            raise ResourceExhausted("you may not chat for a while after repeated filtered lines", judged.retry_after_s)
        if judged.outcome is Outcome.EMPTY:
            raise InvalidArgument("a line needs some text")
        if judged.outcome is Outcome.TOO_LONG:
            raise InvalidArgument(f"a line is at most {MAX_LINE_CHARACTERS} characters")
        if judged.outcome in (Outcome.TOO_FAST, Outcome.CHANNEL_BUSY):
            raise ResourceExhausted("too fast: wait a moment before the next line", judged.retry_after_s)
        if judged.timeout_started:
            until = self.wall_ms() + int(judged.retry_after_s * 1000)
            timed_out = pb.ChatTimedOut()
            timed_out.until.FromMilliseconds(until)
            await self.outbox.to_player(player, pb.SocialEvent(chat_timed_out=timed_out))
        if not judged.sent:
            return False, None
        line = pb.ChatLine(
            channel=pb.ChatChannel(kind=where.kind, id=where.channel_id),  # type: ignore[arg-type]
            author_id=player,
            author_name=self.graph.name(player),
        )
        if phrase is not None:
            line.phrase.CopyFrom(pb.QuickPhrase(id=phrase.id, text_en=phrase.en, text_ar=phrase.ar))
        else:
            line.text = text or ""
        line.sent_at.FromMilliseconds(self.wall_ms())
        msg_id = f"{player}.{client_line_id or f'{self._run}-{next(self._line_ids)}'}"
        line.line_id = await self.chat.append(where.stored, line, msg_id)
        if client_line_id:
            self._sent[retry] = line.line_id
            while len(self._sent) > RETRIES_REMEMBERED:
                self._sent.popitem(last=False)
        await self._deliver(player, where, line, sent_by)
        self.lines_sent += 1
        return True, line

    async def _deliver(self, author: str, where: Where, line: pb.ChatLine, sent_by: str = "") -> None:
        if where.event_channel:
            hidden = self.graph.hidden_from(author)
            event = pb.SocialEvent(chat_line=line)
            await self.outbox.to_channel(where.event_channel, where.event_id, event, hidden, sent_by)
            return
        # A direct line: to both parties' sessions, each seeing the other as the channel;
        # not to a reader who muted the author (his view only).
        other = where.channel_id
        if (other, author) not in self.graph.mutes:
            incoming = pb.ChatLine()
            incoming.CopyFrom(line)
            incoming.channel.id = author
            await self.outbox.to_player(other, pb.SocialEvent(chat_line=incoming))
        await self.outbox.to_player(author, pb.SocialEvent(chat_line=line), sent_by)

    async def _readable(self, player: str, channel: pb.ChatChannel) -> tuple[Where, list[pb.ChatLine]]:
        where = await self.where(player, channel)
        reader = where.role
        if not channels.may_read(where.state, reader, reads_spectators=True):
            raise PermissionDenied("you may not read this chat")
        lines = await self.chat.lines(where.stored)
        for line in lines:
            line.channel.id = where.channel_id
        return where, lines

    async def history(
        self, player: str, channel: pb.ChatChannel, page_size: int, page_token: str
    ) -> tuple[list[pb.ChatLine], str]:
        if page_size < 0 or page_size > CHAT_LINES_KEPT:
            raise InvalidArgument(f"page_size: 0..{CHAT_LINES_KEPT}")
        before = token_number(page_token)
        _, lines = await self._readable(player, channel)
        shown = [
            line
            for line in reversed(lines)
            if (not before or line.line_id < before) and not self.graph.hides(player, line.author_id)
        ]
        size = page_size or DEFAULT_PAGE
        page = shown[:size]
        return page, str(page[-1].line_id) if len(shown) > size else ""

    # -- reports --------------------------------------------------------------------------

    async def report(self, player: str, channel: pb.ChatChannel, line_id: int, reason: str) -> str:
        if len(reason) > MAX_REASON:
            raise InvalidArgument(f"reason: at most {MAX_REASON} characters")
        _, lines = await self._readable(player, channel)
        at = next((i for i, line in enumerate(lines) if line.line_id == line_id), None)
        if at is None:
            raise NotFound("no such line in this chat (lines are kept for a while only)")
        report = pb.ChatReport(
            report_id=uuid.uuid4().hex,
            reporter_id=player,
            reason=reason,
            line=lines[at],
            context=lines[max(0, at - REPORT_CONTEXT) : at] + lines[at + 1 : at + 1 + REPORT_CONTEXT],
        )
        report.reported_at.FromMilliseconds(self.wall_ms())
        await self.report_log.add(report)
        return report.report_id

    async def reports(self, page_size: int, page_token: str) -> tuple[list[pb.ChatReport], str]:
        if page_size < 0:
            raise InvalidArgument("page_size: 0 or more")
        size = page_size or DEFAULT_PAGE
        found, more = await self.report_log.page(token_number(page_token), size)
        return [r for _, r in found], str(found[-1][0]) if more and found else ""
