"""What the social service needs from the world (its adapters: `trix.social.adapters`).

- `ChatLog`: the stored lines of each channel (a stream per kind of channel, the last 100 of a
  channel kept), a line's id being its stream sequence (increasing within its channel); an
  append names a message id, so a client's retry of one line is stored once;
- `Reports`: reported lines with their context, for the operators;
- `Relations`: the friendships (one key per pair) and mutes, read whole at start, each write a
  compare-and-set on the revision last read;
- `PresenceStore`: each player's connected sessions and table, kept across restarts;
- `Outbox`: a `SocialEvent` to a channel's readers or to one player, as a core NATS event the
  gateways forward, with the readers who must not be shown it;
- `TableFacts`: a table's TableCreated and whether its game ended, read back from its durable
  results when the service did not see it created (a restart);
- `Competitions`: a competition's members and whether its chat is on.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass
from typing import Protocol

from trix.social.friends import Pair
from trix.v1 import events_pb2, social_pb2


@dataclass(frozen=True)
class StoredChannel:
    """Where a channel's lines are stored: its stream and subject."""

    stream: str
    subject: str


class ChatLog(Protocol):
    async def append(self, channel: StoredChannel, line: social_pb2.ChatLine, msg_id: str) -> int:
        """Stores `line`; returns its id (the stream sequence; the first one's on a retry)."""
        ...

    async def lines(self, channel: StoredChannel) -> list[social_pb2.ChatLine]:
        """Every kept line of the channel, oldest first, each with its `line_id`."""
        ...


class Reports(Protocol):
    async def add(self, report: social_pb2.ChatReport) -> None: ...

    async def page(self, after: int, limit: int) -> tuple[list[tuple[int, social_pb2.ChatReport]], bool]:
        """Up to `limit` reports stored after sequence `after`, oldest first, and whether more follow."""
        ...


class Relations(Protocol):
    async def load(self) -> tuple[dict[tuple[str, str], tuple[Pair, int]], set[tuple[str, str]]]:
        """Every stored pair with its revision, and every (muter, muted)."""
        ...

    async def put_pair(self, pair: Pair, revision: int) -> int:
        """Stores `pair` if its key is still at `revision` (0: absent); the new revision."""
        ...

    async def set_mute(self, muter: str, muted: str, on: bool) -> None: ...


class PresenceStore(Protocol):
    async def load(self) -> dict[str, tuple[frozenset[str], str]]:
        """Each player's sessions and table (empty: none)."""
        ...

    async def put(self, player: str, sessions: Collection[str], table: str) -> None: ...


class Outbox(Protocol):
    async def to_channel(
        self,
        channel: str,
        channel_id: str,
        event: social_pb2.SocialEvent,
        hidden_from: Collection[str],
        sent_by: str = "",
    ) -> None:
        """A table channel's (`players`, `spectators`) or a competition's (`competition`) event;
        `sent_by`: the gateway session that sent its line (not sent it again)."""
        ...

    async def to_player(self, player: str, event: social_pb2.SocialEvent, sent_by: str = "") -> None: ...


class TableFacts(Protocol):
    async def created(self, table_id: str) -> tuple[events_pb2.Event | None, bool]:
        """The table's stored TableCreated (None: no such table) and whether its game ended."""
        ...


@dataclass(frozen=True)
class Competition:
    """What the chat needs of a competition."""

    organiser: str
    members: frozenset[str]
    chat: bool


class Competitions(Protocol):
    async def get(self, competition_id: str) -> Competition | None: ...
