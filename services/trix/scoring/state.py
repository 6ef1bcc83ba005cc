"""The scoring projection: everything the scoring service knows, rebuilt by applying its
journal entries in order.

Owns `ScoringState.apply(sequence, entry)`, a pure, deterministic function of the
journal: the wallets (double-entry accounts, holds, pots, settlements), live standings,
game history and records, ratings and player statistics. Replaying the same journal
always gives the same state, bit for bit (floats included), which is how a restart
rebuilds exactly the live state. Decisions (what to append) live in `service`; this
module only applies what is already in the journal. Must not import grpc or nats.

Accounts (docs/rules.md §13): `player:<id>` (available coins), `held:<id>` (stakes held for
tickets), `pot:<table>` (a running paid table's pot), `house` (rake), and `mint`, the
source of every grant, whose balance is minus all coins ever granted. A posting moves
`amount` from its debit account to its credit account, so the sum over all accounts is
always zero: balances + held + pots + house == -mint == coins granted.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from trix.rules import DOUBLING_CARDS, PARTNERSHIP_VARIANT_NAMES, VARIANT_NAMES, card_of_text
from trix.scoring.ratings import Rating, rate_partnership, rate_singles

MINT = "mint"
HOUSE = "house"
ALL_VIEWERS = "*"
"""A viewer who may see every table (an operator with the admin credential); never a player id."""
PARTNERSHIP_VARIANTS = PARTNERSHIP_VARIANT_NAMES
VARIANTS = VARIANT_NAMES
# docs/rules.md §7: the cards that can be doubled and the contracts where doubling applies.
DOUBLING_CONTRACTS = frozenset(DOUBLING_CARDS)


def player_account(player_id: str) -> str:
    return f"player:{player_id}"


def held_account(player_id: str) -> str:
    return f"held:{player_id}"


def pot_account(table_id: str) -> str:
    return f"pot:{table_id}"


def escrow_account(competition_id: str) -> str:
    """A competition's entry fees until refunded or paid out (docs/adr/0030)."""
    return f"escrow:{competition_id}"


@dataclass(frozen=True)
class EscrowEntry:
    """One entry of a competition's escrow (docs/adr/0030): a fee in; a refund, a prize or the
    house's share out. `kind` is fee, refund, prize or house."""

    competition_id: str
    key: str
    kind: str
    player_id: str
    coins: int
    time_ms: int = 0

    def same(self, other: EscrowEntry) -> bool:
        return (self.competition_id, self.kind, self.player_id, self.coins) == (
            other.competition_id,
            other.kind,
            other.player_id,
            other.coins,
        )


@dataclass(frozen=True)
class Posting:
    """One double-entry movement: `amount` coins from `debit` to `credit`."""

    posting_id: str
    debit: str
    credit: str
    amount: int
    reason: str
    table_id: str
    time_ms: int

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.posting_id,
            "debit": self.debit,
            "credit": self.credit,
            "amount": self.amount,
            "reason": self.reason,
            "table": self.table_id,
            "time_ms": self.time_ms,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Posting:
        return cls(
            str(data["id"]),
            str(data["debit"]),
            str(data["credit"]),
            int(data["amount"]),
            str(data["reason"]),
            str(data.get("table", "")),
            int(data.get("time_ms", 0)),
        )


@dataclass
class Hold:
    """A stake held for a matchmaking ticket (docs/rules.md §13)."""

    player_id: str
    amount: int
    state: str = "held"
    """held, released (ticket cancelled or expired) or staked (moved into a table's pot)."""


@dataclass
class DealRow:
    """One scored deal of a table (DealScored)."""

    deal_index: int
    contract: str
    points: list[int]


@dataclass(frozen=True)
class SeatName:
    """One seat of a table as announced: the player, his shown name, a bot or not."""

    player_id: str
    name: str
    bot: bool


@dataclass
class TableView:
    """What scoring knows about one table."""

    table_id: str
    variant: str = ""
    players: list[str] = field(default_factory=lambda: ["", "", "", ""])
    bots: list[bool] = field(default_factory=lambda: [False, False, False, False])
    bot_seen: bool = False
    """A bot played a seat at some point: the game is unrated."""
    stake: int = 0
    rake_percent: int = 0
    funded: dict[int, int] = field(default_factory=dict)
    """Coins each seat put into the pot."""
    deals: list[DealRow] = field(default_factory=list)
    totals: list[int] = field(default_factory=lambda: [0, 0, 0, 0])
    sequence: int = 0
    """The last table sequence applied (idempotency on (table, sequence))."""
    ended: bool = False
    ranking: list[int] = field(default_factory=list)
    ended_ms: int = 0
    commitment: str = ""
    """The fairness commitment the TableCreated announced (docs/rules.md §11)."""
    disputed: str = ""
    """Why its GameEnded was not settled: it disagrees with its own record."""
    private: bool = False
    """A private table: its standings, record and history row are its players' only."""
    names: list[str] = field(default_factory=lambda: ["", "", "", ""])
    """The seats' display names as the TableCreated announced them ("" before it)."""
    created_ms: int = 0
    """When the TableCreated happened (0 before it)."""

    def seats(self) -> tuple[SeatName, ...]:
        """Who sits where, as the TableCreated announced it."""
        return tuple(SeatName(p, n, b) for p, n, b in zip(self.players, self.names, self.bots, strict=False))

    def visible_to(self, viewer: str | None) -> bool:
        """Whether `viewer` (a player id; ALL_VIEWERS for an operator, "" for anyone) may see
        this table's standings and record: a private table's players only."""
        return not self.private or viewer == ALL_VIEWERS or bool(viewer and viewer in self.players)

    @property
    def partnership(self) -> bool:
        return self.variant in PARTNERSHIP_VARIANTS

    def team_totals(self) -> list[int]:
        if not self.partnership:
            return []
        return [self.totals[0] + self.totals[2], self.totals[1] + self.totals[3]]


@dataclass(frozen=True)
class GameSummary:
    """One finished game in a player's history."""

    table_id: str
    variant: str
    seat: int
    place: int
    totals: tuple[int, ...]
    ended_ms: int
    seats: tuple[SeatName, ...] = ()
    """The four seats (the player's and his opponents'), as the table announced them."""


@dataclass
class PlayerStats:
    """A player's statistics in one variant."""

    games: int = 0
    wins: int = 0
    points: int = 0
    contract_points: dict[str, int] = field(default_factory=dict)
    contract_deals: dict[str, int] = field(default_factory=dict)
    doubled_card_losses: dict[str, int] = field(default_factory=dict)

    def add(self, other: PlayerStats) -> None:
        self.games += other.games
        self.wins += other.wins
        self.points += other.points
        for name in ("contract_points", "contract_deals", "doubled_card_losses"):
            mine: dict[str, int] = getattr(self, name)
            for key, value in getattr(other, name).items():
                mine[key] = mine.get(key, 0) + value


class ScoringState:
    """The projection of the scoring journal."""

    def __init__(self) -> None:
        self.sequence = 0
        """The last journal sequence applied."""
        self.entry_ids: set[str] = set()
        self.balances: dict[str, int] = {}
        self.holds: dict[str, Hold] = {}
        self.grants: dict[str, tuple[str, int]] = {}
        self.settled: set[str] = set()
        """Tables whose settlement (or refund) is applied: settlement id = table id."""
        self.running_pots: set[str] = set()
        self.ledger: dict[str, list[Posting]] = {}
        """Postings per player, oldest first."""
        self.posting_ids: set[str] = set()
        self.tables: dict[str, TableView] = {}
        self.names: dict[str, str] = {}
        """Each human player's name at the last table he sat at (the leaderboard's names)."""
        self.live: dict[str, None] = {}
        """Public tables created and not ended, in creation order (the lobby's list; a
        private table is never in it)."""
        self.history: dict[str, list[GameSummary]] = {}
        self.records: dict[str, str] = {}
        self.ratings: dict[str, dict[str, Rating]] = {v: {} for v in VARIANTS}
        self.stats: dict[tuple[str, str], PlayerStats] = {}
        self.anomalies: list[str] = []
        """Entries that could not be applied as written (never expected; kept for audits)."""
        self.escrow_entries: dict[str, EscrowEntry] = {}
        """Every competition escrow entry by its key (docs/adr/0030)."""
        self.escrows: dict[str, list[EscrowEntry]] = {}
        """Each competition's escrow entries, in the order posted."""

    # -- queries used by decisions --------------------------------------------------

    def balance(self, account: str) -> int:
        return self.balances.get(account, 0)

    def table(self, table_id: str) -> TableView:
        view = self.tables.get(table_id)
        if view is None:
            view = self.tables[table_id] = TableView(table_id)
        return view

    # -- apply ------------------------------------------------------------------------

    def apply(self, sequence: int, entry: dict[str, Any]) -> None:
        """Apply one journal entry (already durable at `sequence`)."""
        self.sequence = sequence
        entry_id = str(entry["id"])
        if entry_id in self.entry_ids:
            self.anomalies.append(f"{sequence}: entry {entry_id} applied before")
            return
        self.entry_ids.add(entry_id)
        for raw in entry.get("postings", []):
            self._post(Posting.from_json(raw))
        kind = entry["kind"]
        if kind == "grant":
            self.grants[str(entry["grant_id"])] = (str(entry["player"]), int(entry["amount"]))
        elif kind == "hold":
            self.holds[str(entry["ticket"])] = Hold(str(entry["player"]), int(entry["amount"]))
        elif kind == "release":
            hold = self.holds.get(str(entry["ticket"]))
            if hold is not None:
                hold.state = "released"
        elif kind == "event":
            self._apply_event(entry)
        elif kind == "escrow":
            e = EscrowEntry(
                str(entry["competition"]),
                str(entry["key"]),
                str(entry["entry_kind"]),
                str(entry["player"]),
                int(entry["amount"]),
                int(entry["time_ms"]),
            )
            self.escrow_entries[e.key] = e
            self.escrows.setdefault(e.competition_id, []).append(e)

    def _post(self, posting: Posting) -> None:
        if posting.posting_id in self.posting_ids:
            self.anomalies.append(f"posting {posting.posting_id} twice")
            return
        self.posting_ids.add(posting.posting_id)
        self.balances[posting.debit] = self.balance(posting.debit) - posting.amount
        self.balances[posting.credit] = self.balance(posting.credit) + posting.amount
        for account in (posting.debit, posting.credit):
            if account != MINT and self.balances[account] < 0:
                self.anomalies.append(f"{account} negative after {posting.posting_id}")
        players = {a.split(":", 1)[1] for a in (posting.debit, posting.credit) if a.startswith(("player:", "held:"))}
        for player in sorted(players):
            self.ledger.setdefault(player, []).append(posting)

    def _apply_event(self, entry: dict[str, Any]) -> None:
        table_id = str(entry["table_id"])
        view = self.table(table_id)
        view.sequence = max(view.sequence, int(entry["sequence"]))
        event: dict[str, Any] = entry["event"]
        kind = event["type"]
        if kind == "table_created":
            view.variant = str(event["variant"])
            view.players = [str(p) for p in event["players"]]
            view.bots = [bool(b) for b in event["bots"]]
            view.bot_seen = view.bot_seen or any(view.bots)
            view.stake = int(event.get("stake", 0))
            view.rake_percent = int(event.get("rake_percent", 0))
            view.commitment = str(event.get("commitment", ""))
            view.private = bool(event.get("private_table", False))
            names = [str(n) for n in event.get("names", [])][:4]
            view.names = names + [""] * (4 - len(names))
            view.created_ms = int(entry.get("time_ms", 0))
            for player, name, bot in zip(view.players, view.names, view.bots, strict=False):
                if player and name and not bot:
                    self.names[player] = name
            if not view.private and not view.ended and not view.disputed:
                self.live[table_id] = None
            for ticket in entry.get("staked_tickets", []):
                hold = self.holds.get(str(ticket))
                if hold is not None:
                    hold.state = "staked"
            for seat, amount in entry.get("funded", {}).items():
                view.funded[int(seat)] = int(amount)
            if view.funded:
                self.running_pots.add(table_id)
        elif kind == "seat_control":
            if event.get("bot"):
                view.bot_seen = True
        elif kind == "deal_scored":
            points = [int(p) for p in event["points"]]
            view.deals.append(DealRow(int(event["deal_index"]), str(event["contract"]), points))
            view.totals = [int(t) for t in event["totals"]]
        elif kind == "game_ended":
            self._apply_game_ended(view, entry, event)

    def _apply_game_ended(self, view: TableView, entry: dict[str, Any], event: dict[str, Any]) -> None:
        self.live.pop(view.table_id, None)  # no longer played, whatever comes of its end
        if entry.get("settlement"):
            self.settled.add(view.table_id)
            self.running_pots.discard(view.table_id)
        if view.ended:
            return  # a second GameEnded (new sequence) for a table already ended: nothing more
        if entry.get("disputed"):
            # Neither paid nor rated nor recorded: the pot stays held and the table keeps its
            # private log (no RecordArchived) for whoever looks into it.
            view.disputed = str(entry["disputed"])
            self.anomalies.append(f"{view.table_id}: GameEnded not settled: {view.disputed}")
            return
        view.ended = True
        view.ended_ms = int(entry["time_ms"])
        view.totals = [int(t) for t in event["totals"]]
        view.ranking = [int(p) for p in event["ranking"]]
        record_json = str(event.get("record_json", ""))
        self.records[view.table_id] = record_json
        record = _parse_record(record_json)
        if not view.variant:
            view.variant = str(record.get("variant", "")) if record else ""
        if not any(view.players) and record and isinstance(record.get("players"), list):
            view.players = [str(p) for p in record["players"]][:4] + [""] * max(0, 4 - len(record["players"]))
        if not entry.get("counted", True):
            return  # refunded (never started): no history, statistics or rating
        humans = [(seat, p) for seat, p in enumerate(view.players) if p and not view.bots[seat]]
        for seat, player in humans:
            place = view.ranking[seat] if len(view.ranking) == 4 else 0
            summary = GameSummary(
                view.table_id, view.variant, seat, place, tuple(view.totals), view.ended_ms, view.seats()
            )
            self.history.setdefault(player, []).append(summary)
            stats = self.stats.setdefault((player, view.variant), PlayerStats())
            stats.games += 1
            stats.wins += 1 if place == 1 else 0
            stats.points += view.totals[seat]
            for deal in view.deals:
                stats.contract_points[deal.contract] = stats.contract_points.get(deal.contract, 0) + deal.points[seat]
                stats.contract_deals[deal.contract] = stats.contract_deals.get(deal.contract, 0) + 1
        for seat, card in doubled_cards_taken(record):
            player = view.players[seat]
            if player and not view.bots[seat]:
                losses = self.stats.setdefault((player, view.variant), PlayerStats()).doubled_card_losses
                losses[card] = losses.get(card, 0) + 1
        if entry.get("rated"):
            ratings = self.ratings.setdefault(view.variant, {})
            current = [ratings.setdefault(p, Rating()) for p in view.players]
            if view.partnership:
                rate_partnership(current, view.ranking)
            else:
                rate_singles(current, view.ranking)

    # -- comparison -------------------------------------------------------------------

    def snapshot(self) -> dict[str, Any]:
        """Everything, as plain data: two states are equal iff their snapshots are."""
        return {
            "sequence": self.sequence,
            "entry_ids": sorted(self.entry_ids),
            "balances": dict(sorted(self.balances.items())),
            "holds": {k: vars(v) for k, v in sorted(self.holds.items())},
            "grants": dict(sorted(self.grants.items())),
            "settled": sorted(self.settled),
            "running_pots": sorted(self.running_pots),
            "ledger": {k: [p.to_json() for p in v] for k, v in sorted(self.ledger.items())},
            "tables": {k: repr(v) for k, v in sorted(self.tables.items())},
            "live": list(self.live),
            "names": dict(sorted(self.names.items())),
            "history": {k: [repr(g) for g in v] for k, v in sorted(self.history.items())},
            "records": dict(sorted(self.records.items())),
            "ratings": {
                v: {p: (r.mu, r.sigma, r.games) for p, r in sorted(rs.items())} for v, rs in self.ratings.items()
            },
            "stats": {f"{p}/{v}": repr(s) for (p, v), s in sorted(self.stats.items())},
            "anomalies": list(self.anomalies),
            "escrows": {k: [repr(e) for e in v] for k, v in sorted(self.escrows.items())},
        }


# -- game records (docs/rules.md §12) --------------------------------------------------------


def _parse_record(record_json: str) -> dict[str, Any] | None:
    try:
        record = json.loads(record_json) if record_json else None
    except ValueError:
        return None
    return record if isinstance(record, dict) else None


def _card(text: Any) -> tuple[int, int] | None:
    """(suit index, rank index) of a card text such as `KH` (docs/rules.md §1), or None."""
    card = card_of_text(text)
    return None if card is None else divmod(card, 13)


def doubled_cards_taken(record: dict[str, Any] | None) -> list[tuple[int, str]]:
    """(taker seat, card) for every doubled card taken in a trick (docs/rules.md §7: it costs its taker).

    Tricks are rebuilt from the record's plays: four cards each, the highest card of the
    led suit takes the trick (docs/rules.md §4). A malformed record gives what can be read.
    """
    found: list[tuple[int, str]] = []
    if record is None or not isinstance(record.get("deals"), list):
        return found
    for deal in record["deals"]:
        if not isinstance(deal, dict) or deal.get("contract") not in DOUBLING_CONTRACTS:
            continue
        doubled: set[str] = set()
        for answer in deal.get("doubles") or []:
            if isinstance(answer, dict):
                doubled.update(c for c in answer.get("cards") or [] if isinstance(c, str))
        if not doubled:
            continue
        plays = [p for p in deal.get("plays") or [] if isinstance(p, dict)]
        for start in range(0, len(plays) - 3, 4):
            trick = plays[start : start + 4]
            cards = [_card(p.get("card")) for p in trick]
            seats = [p.get("seat") for p in trick]
            first = cards[0]
            if first is None or any(c is None for c in cards) or not all(isinstance(s, int) for s in seats):
                break
            led = first[0]
            best = max(range(4), key=lambda i: cards[i][1] if cards[i] is not None and cards[i][0] == led else -1)  # type: ignore[index]
            taker = seats[best]
            assert isinstance(taker, int)
            for play in trick:
                if play.get("card") in doubled and 0 <= taker <= 3:
                    found.append((taker, str(play["card"])))
    return found


def deals_dealt(record: dict[str, Any] | None) -> int:
    """How many deals the record shows dealt, the unfinished one included (0: the table could
    not start and refunds every stake; once the cards are dealt a leaver is placed by §10,
    even before the first card: docs/rules.md §13)."""
    if record is None or not isinstance(record.get("deals"), list):
        return 0
    return sum(isinstance(d, dict) for d in record["deals"])
