"""The matchmaking records as stored in the `match_tickets` bucket: `Ticket`, `Lobby`
(a private table or a rematch), `MatchRecord` (the four seats of a match, its state the
commit point), their keys, ids, partitions and states. Encoding only: no I/O, no decisions.

| key | value |
|---|---|
| `tk.<pp>.<ticket_id>` | a `Ticket` (the ticket id starts with its two-digit partition) |
| `lb.<pp>.<lobby_id>` | a `Lobby`: a private table (`<lobby_id>` = invite code) or a rematch (`r-<table>`) |
| `mt.<match_id>` | a `MatchRecord`: the four seats; its state is the commit point of a match |
| `pl.<player_id>` | the player's current ticket id: one live ticket per player |
| `qs.<hash>` | a queue's count for its waiting players (`queue_status.QueueCount`), informational |
"""

from __future__ import annotations

import dataclasses
import json
import uuid
import zlib
from dataclasses import dataclass, field

from trix.errors import NotFound
from trix.matchmaking.wishes import Wish

SEARCHING = "SEARCHING"
HOLDING = "HOLDING"  # created, stake being held: not matchable yet
CLAIMED = "CLAIMED"  # inside a match being committed; shown to clients as searching
MATCHED = "MATCHED"
CANCELLED = "CANCELLED"
EXPIRED = "EXPIRED"
TERMINAL = frozenset({MATCHED, CANCELLED, EXPIRED})

QUEUE = "queue"
PRIVATE = "private"
REMATCH = "rematch"


@dataclass
class Ticket:
    """A player's ticket, as stored."""

    ticket_id: str
    player_id: str
    wish: Wish
    kind: str = QUEUE
    partner_id: str = ""
    client_seed: str = ""
    rating: float = 0.0
    created_at: float = 0.0
    state: str = SEARCHING
    widened: bool = False
    lobby: str = ""
    """The lobby key of a private table or rematch ticket."""
    match_id: str = ""
    claimed_at: float = 0.0
    table_id: str = ""
    seat: int = -1
    matched_at: float = 0.0
    preset: str = ""
    finished_at: float = 0.0
    """When it was cancelled or expired (matched: `matched_at`); its retention runs from here."""
    display_name: str = ""
    """The player's name at the table (the gateway's cleaned sign-in name)."""

    def encode(self) -> bytes:
        raw = dataclasses.asdict(self)
        raw["wish"] = self.wish.to_json()
        return json.dumps(raw, separators=(",", ":")).encode()

    @classmethod
    def decode(cls, data: bytes) -> Ticket:
        raw = json.loads(data)
        raw["wish"] = Wish.from_json(raw["wish"])
        return cls(**raw)

    @property
    def partition(self) -> int:
        return int(self.ticket_id[:2])

    @property
    def key(self) -> str:
        return ticket_key(self.ticket_id)


@dataclass
class SeatRecord:
    """One seat of a match."""

    player_id: str = ""
    ticket_id: str = ""
    client_seed: str = ""
    bot: bool = False
    display_name: str = ""


PENDING = "PENDING"
COMMITTED = "COMMITTED"
ABORTED = "ABORTED"
DONE = "DONE"


@dataclass
class MatchRecord:
    """A match: four seats; `state` is the commit point (PENDING -> COMMITTED | ABORTED -> DONE)."""

    match_id: str
    wish: Wish
    seats: list[SeatRecord]
    state: str = PENDING
    created_at: float = 0.0
    private: bool = False
    """From a private lobby (invite code): only its players may watch the table."""

    @property
    def table_id(self) -> str:
        return self.match_id

    def encode(self) -> bytes:
        raw = {
            "match_id": self.match_id,
            "wish": self.wish.to_json(),
            "seats": [dataclasses.asdict(s) for s in self.seats],
            "state": self.state,
            "created_at": self.created_at,
            "private": self.private,
        }
        return json.dumps(raw, separators=(",", ":")).encode()

    @classmethod
    def decode(cls, data: bytes) -> MatchRecord:
        raw = json.loads(data)
        return cls(
            raw["match_id"],
            Wish.from_json(raw["wish"]),
            [SeatRecord(**s) for s in raw["seats"]],
            raw["state"],
            raw["created_at"],
            bool(raw.get("private", False)),
        )

    def ticket_ids(self) -> list[str]:
        return [s.ticket_id for s in self.seats if s.ticket_id]


OPEN = "OPEN"
STARTED = "STARTED"  # seats chosen: the commit point of a lobby's match
FORMED = "FORMED"  # MatchFormed published, tickets matched
CLOSED = "CLOSED"


@dataclass
class LobbyMember:
    """A player in a lobby."""

    player_id: str
    ticket_id: str
    client_seed: str = ""
    display_name: str = ""


@dataclass
class Lobby:
    """A private table (by invite code) or a rematch (by finished table) gathering players."""

    lobby_id: str
    kind: str
    host: str
    wish: Wish
    members: list[LobbyMember]
    created_at: float
    state: str = OPEN
    match_id: str = ""
    fixed_seats: dict[str, int] = field(default_factory=dict)
    """Rematch: each player's seat at the finished table (partners stay opposite)."""
    fixed_seeds: dict[str, str] = field(default_factory=dict)
    finished_at: float = 0.0
    """When it was formed or closed; its retention runs from here."""

    def encode(self) -> bytes:
        raw = dataclasses.asdict(self)
        raw["wish"] = self.wish.to_json()
        return json.dumps(raw, separators=(",", ":")).encode()

    @classmethod
    def decode(cls, data: bytes) -> Lobby:
        raw = json.loads(data)
        raw["wish"] = Wish.from_json(raw["wish"])
        raw["members"] = [LobbyMember(**m) for m in raw["members"]]
        return cls(**raw)


def partition_of(text: str, partitions: int) -> int:
    return zlib.crc32(text.encode()) % partitions


def new_match_id() -> str:
    """A match id, which is also the id of the table the table service creates."""
    return "m" + uuid.uuid4().hex


def ticket_key(ticket_id: str) -> str:
    if len(ticket_id) < 3 or not ticket_id[:2].isdigit() or not ticket_id.isalnum():
        raise NotFound(f"no ticket {ticket_id!r}")
    return f"tk.{ticket_id[:2]}.{ticket_id}"


def match_key(match_id: str) -> str:
    return f"mt.{match_id}"


def player_key(player_id: str) -> str:
    return f"pl.{player_id}"


def public_state(ticket: Ticket) -> str:
    """The state a client sees: HOLDING and CLAIMED are still searching (or widened)."""
    if ticket.state in (SEARCHING, HOLDING, CLAIMED):
        return "WIDENED" if ticket.widened else "SEARCHING"
    return ticket.state
