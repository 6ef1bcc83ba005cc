"""Friends, blocks, mutes, presence and invitations as the social service keeps them (issue 44).

Owns `SocialGraph`: every pair of players with a relation and every mute, held in memory and
written through to storage (`ports.Relations`, a compare-and-set per pair: one replica writes,
docs/adr/0027), each player's sessions and live table (presence), the friends' notices each
change sends (`ports.Outbox`), and the readers who must not see an author's lines (a block
either way, or a mute). The transitions and the rules are the pure core's
(`trix.social.friends`); a blocked player is never told (no notice, his view unchanged).
Imports neither grpc nor nats.
"""

from __future__ import annotations

import asyncio
import time
import urllib.parse
from collections.abc import Callable
from dataclasses import dataclass

from trix.errors import InvalidArgument, PermissionDenied
from trix.social import friends
from trix.social.friends import NoticeKind, Pair, Step, View
from trix.social.names import judge_display_name
from trix.social.ports import Outbox, PresenceStore, Relations
from trix.social.tables import TableBook
from trix.v1 import social_pb2 as pb

STATES = {
    View.NONE: pb.FRIEND_STATE_UNSPECIFIED,
    View.REQUESTED: pb.FRIEND_STATE_REQUESTED,
    View.INCOMING: pb.FRIEND_STATE_INCOMING,
    View.FRIENDS: pb.FRIEND_STATE_FRIENDS,
    View.BLOCKED: pb.FRIEND_STATE_BLOCKED,
}
INVITE_KINDS: dict[int, str] = {
    pb.INVITE_KIND_PRIVATE_TABLE: "table",
    pb.INVITE_KIND_WATCH_TABLE: "watch",
    pb.INVITE_KIND_COMPETITION: "competition",
}
INVITE_TTL_S = 24 * 3600
"""How long an invitation's link works."""
MAX_OFFERED_NAMES = 100_000
"""Players whose last offered name is remembered at once (`SocialGraph.offer_name`)."""
_LIST_ORDER = {View.FRIENDS: 0, View.INCOMING: 1, View.REQUESTED: 1, View.BLOCKED: 2}


@dataclass(frozen=True)
class Invite:
    link: str
    expires_at_ms: int


class SocialGraph:
    """Relations, mutes and presence of every player (one replica's memory, stored through)."""

    def __init__(
        self,
        relations: Relations,
        presence: PresenceStore,
        outbox: Outbox,
        tables: TableBook,
        *,
        link_base: str = "",
        wall_ms: Callable[[], int] = lambda: time.time_ns() // 1_000_000,
    ) -> None:
        self.relations = relations
        self.presence_store = presence
        self.outbox = outbox
        self.tables = tables
        self.link_base = link_base.rstrip("/")
        self.wall_ms = wall_ms
        self.pairs: dict[tuple[str, str], tuple[Pair, int]] = {}
        self.others: dict[str, set[str]] = {}
        """Player -> the players he has a stored pair with."""
        self.mutes: set[tuple[str, str]] = set()
        self.muters: dict[str, set[str]] = {}
        """Player -> who muted him."""
        self.muting: dict[str, set[str]] = {}
        """Player -> whom he muted (his own list, ListFriends)."""
        self.sessions: dict[str, frozenset[str]] = {}
        self.names: dict[str, str] = {}
        """Display names seen (the gateway's word on a session, table seats)."""
        self._offered: dict[str, str] = {}
        """Player -> the name the gateway last passed on for him (`offer_name`)."""
        self._lock = asyncio.Lock()

    async def load(self) -> None:
        self.pairs, mutes = await self.relations.load()
        for (a, b), _ in self.pairs.items():
            self.others.setdefault(a, set()).add(b)
            self.others.setdefault(b, set()).add(a)
        for muter, muted in mutes:
            self._mute(muter, muted, True)
        for player, (sessions, _table) in (await self.presence_store.load()).items():
            if sessions:
                self.sessions[player] = sessions

    # -- reading -------------------------------------------------------------------------

    def pair(self, me: str, other: str) -> Pair:
        empty = friends.pair_of(me, other)
        return self.pairs.get((empty.a, empty.b), (empty, 0))[0]

    def view(self, me: str, other: str) -> View:
        return friends.view_of(self.pair(me, other), me)

    def name(self, player: str) -> str:
        return self.names.get(player, player)

    def offer_name(self, player: str, raw: str) -> None:
        """The gateway's word on `player`'s display name: shown from now on once cleaned and
        passed by the word filter (`trix.social.names`), judged once per name he sends, not
        once per call (a line each)."""
        if self._offered.get(player) == raw:
            return
        if len(self._offered) >= MAX_OFFERED_NAMES:
            self._offered.clear()  # judged again on their next call: nothing is lost
        self._offered[player] = raw
        judged = judge_display_name(raw)
        if judged.acceptable:
            self.names[player] = judged.name

    def hidden_from(self, author: str) -> set[str]:
        """The readers not shown `author`'s lines: a block either way, or they muted him."""
        hidden = {o for o in self.others.get(author, ()) if friends.either_blocks(self.pair(author, o))}
        return hidden | self.muters.get(author, set())

    def hides(self, reader: str, author: str) -> bool:
        return reader != author and reader in self.hidden_from(author)

    def presence(self, player: str) -> tuple[pb.PresenceStatus.ValueType, str]:
        """`player`'s status and, in a game at a public table, the table."""
        if not self.sessions.get(player):
            return pb.PRESENCE_STATUS_OFFLINE, ""
        table_id = self.tables.live_table.get(player, "")
        if not table_id:
            return pb.PRESENCE_STATUS_IN_LOBBY, ""
        table = self.tables.tables.get(table_id)
        return pb.PRESENCE_STATUS_IN_GAME, "" if table is None or table.private else table_id

    def list_friends(self, me: str, page_size: int, page_token: str) -> tuple[list[pb.Friend], str]:
        entries: list[tuple[tuple[int, int, str], pb.Friend]] = []
        for other in self.others.get(me, ()):
            pair = self.pair(me, other)
            view = friends.view_of(pair, me)
            if view is View.NONE:
                continue
            status, table_id = (
                self.presence(other) if friends.sees_presence(pair, me) else (pb.PRESENCE_STATUS_UNSPECIFIED, "")
            )
            online = 0 if status in (pb.PRESENCE_STATUS_IN_GAME, pb.PRESENCE_STATUS_IN_LOBBY) else 1
            entry = pb.Friend(
                player_id=other, display_name=self.name(other), state=STATES[view], presence=status, table_id=table_id
            )
            entries.append(((_LIST_ORDER[view], online, other), entry))
        entries.sort(key=lambda e: e[0])
        size = page_size if page_size > 0 else 100
        start = token_number(page_token)
        page = [e for _, e in entries[start : start + size]]
        more = start + size < len(entries)
        return page, str(start + size) if more else ""

    # -- changing ------------------------------------------------------------------------

    async def change(self, me: str, other: str, move: Callable[[Pair, str], Step]) -> View:
        """Apply one transition of the pair, store it, deliver its notices; `me`'s view after it."""
        async with self._lock:
            empty = friends.pair_of(me, other)
            key = (empty.a, empty.b)
            pair, revision = self.pairs.get(key, (empty, 0))
            step = move(pair, me)
            new_revision = await self.relations.put_pair(step.pair, revision)
            self.pairs[key] = (step.pair, new_revision)
            self.others.setdefault(me, set()).add(other)
            self.others.setdefault(other, set()).add(me)
        for notice in step.notices:
            await self._notify(notice)
        return friends.view_of(step.pair, me)

    async def _notify(self, notice: friends.Notice) -> None:
        name = self.name(notice.about)
        if notice.kind is NoticeKind.REQUEST_RECEIVED:
            event = pb.SocialEvent(
                friend_request_received=pb.FriendRequestReceived(player_id=notice.about, display_name=name)
            )
        else:
            event = pb.SocialEvent(
                friend_request_accepted=pb.FriendRequestAccepted(player_id=notice.about, display_name=name)
            )
            # New friends see each other's presence from now on.
            await self._tell_presence(notice.to, notice.about)
            await self._tell_presence(notice.about, notice.to)
        await self.outbox.to_player(notice.to, event)

    async def set_muted(self, me: str, other: str, muted: bool) -> None:
        friends.pair_of(me, other)  # not himself
        await self.relations.set_mute(me, other, muted)
        self._mute(me, other, muted)

    def _mute(self, muter: str, muted: str, on: bool) -> None:
        if on:
            self.mutes.add((muter, muted))
            self.muters.setdefault(muted, set()).add(muter)
            self.muting.setdefault(muter, set()).add(muted)
        else:
            self.mutes.discard((muter, muted))
            self.muters.get(muted, set()).discard(muter)
            self.muting.get(muter, set()).discard(muted)

    def muted_by(self, me: str) -> list[str]:
        """The players `me` muted, sorted."""
        return sorted(self.muting.get(me, ()))

    async def invite(self, me: str, other: str, kind: int, target: str) -> Invite:
        """An invitation to a friend; PermissionDenied unless `me` sees him as a friend (a
        block by the other shows as no friendship, as a removal would)."""
        if kind not in INVITE_KINDS:
            raise InvalidArgument("kind: a private table, a table to watch, or a competition")
        pair = self.pair(me, other)
        if friends.view_of(pair, me) is not View.FRIENDS:
            raise PermissionDenied("invitations go to friends only")
        expires = self.wall_ms() + INVITE_TTL_S * 1000
        query = urllib.parse.urlencode({"from": me, "expires": expires})
        link = f"{self.link_base}/invite/{INVITE_KINDS[kind]}/{urllib.parse.quote(target, safe='')}?{query}"
        if friends.may_invite(pair, me):
            received = pb.InviteReceived(player_id=me, display_name=self.name(me), kind=kind, link=link)  # type: ignore[arg-type]
            await self.outbox.to_player(other, pb.SocialEvent(invite_received=received))
        return Invite(link, expires)

    # -- presence ------------------------------------------------------------------------

    async def connected(self, player: str, session: str, on: bool) -> None:
        before = self.presence(player)
        sessions = set(self.sessions.get(player, ()))
        if on:
            sessions.add(session)
        else:
            sessions.discard(session)
        self.sessions[player] = frozenset(sessions)
        if not sessions:
            del self.sessions[player]
        await self.presence_store.put(player, sessions, self.tables.live_table.get(player, ""))
        if self.presence(player) != before:
            await self.presence_changed(player)

    async def presence_changed(self, player: str) -> None:
        for other in self.others.get(player, ()):
            if friends.sees_presence(self.pair(player, other), other):
                await self._tell_presence(other, player)

    async def _tell_presence(self, to: str, about: str) -> None:
        status, _ = self.presence(about)
        changed = pb.FriendPresenceChanged(player_id=about, presence=status)
        await self.outbox.to_player(to, pb.SocialEvent(friend_presence_changed=changed))


def token_number(page_token: str) -> int:
    """A page token as this service writes them (a number; empty: 0), else InvalidArgument."""
    if not page_token:
        return 0
    if not page_token.isdigit():
        raise InvalidArgument("page_token: as returned by the previous page")
    return int(page_token)
