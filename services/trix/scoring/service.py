"""The scoring service's logic: standings, history and records, ratings and
leaderboards, wallets and paid-table settlement (docs/rules.md §13, ADR 0004).

Owns the decisions and the queries. Every change, under one lock: decide from the
projection (`ScoringState`), idempotent on its id; append to the journal with the
projection's last sequence as the expected last (a stale writer is refused); apply. A crash
between any two steps loses and doubles nothing (the journal replays). Must not import grpc
or nats: the journal is `ports.Journal`, errors are `trix.errors` domain errors.
"""

from __future__ import annotations

import asyncio
import hmac
import json
import time
from collections.abc import Callable
from dataclasses import replace
from itertools import islice
from typing import Any

import structlog

from trix.errors import AlreadyExists, IllegalMove, InvalidArgument, NotFound, PermissionDenied, Unauthenticated
from trix.errors import Unavailable as UnavailableError
from trix.scoring import escrow
from trix.scoring.audit import dispute
from trix.scoring.config import ScoringConfig
from trix.scoring.ports import Journal, JournalConflict, JournalDuplicate
from trix.scoring.state import (
    HOUSE,
    MINT,
    VARIANTS,
    EscrowEntry,
    GameSummary,
    PlayerStats,
    Posting,
    ScoringState,
    TableView,
    _parse_record,
    deals_dealt,
    held_account,
    player_account,
    pot_account,
)

log = structlog.get_logger("trix.scoring")

DEFAULT_PAGE_SIZE = 20
MAX_PAGE_SIZE = 100
MAX_ID_LENGTH = 128
MAX_COMMIT_ATTEMPTS = 50


class InsufficientBalance(IllegalMove):
    """docs/rules.md §13: "a player whose balance is short cannot join" (FAILED_PRECONDITION)."""


def encode_entry(entry: dict[str, Any]) -> bytes:
    return json.dumps(entry, sort_keys=True, separators=(",", ":")).encode()


def decode_entry(payload: bytes) -> dict[str, Any]:
    entry = json.loads(payload)
    if not isinstance(entry, dict):
        raise ValueError("journal entry is not an object")
    return entry


def _check_id(value: str, what: str) -> str:
    if not value or len(value) > MAX_ID_LENGTH or any(c.isspace() for c in value):
        raise InvalidArgument(f"{what} must be 1-{MAX_ID_LENGTH} characters without spaces")
    return value


def _check_amount(amount: int) -> int:
    if amount <= 0:
        raise InvalidArgument("amount must be > 0")
    return amount


def _page(page_size: int, page_token: str) -> tuple[int, int]:
    if page_size < 0:
        raise InvalidArgument("page_size must be >= 0")
    size = min(page_size or DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE)
    if not page_token:
        return 0, size
    if not page_token.isdigit():
        raise InvalidArgument("page_token is not a token this service gave")
    return int(page_token), size


def _next_token(start: int, size: int, total: int) -> str:
    return str(start + size) if start + size < total else ""


def valid_ranking(ranking: list[int]) -> bool:
    return len(ranking) == 4 and all(1 <= p <= 4 for p in ranking) and 1 in ranking


def settlement_postings(
    table_id: str, view: TableView, pot: int, ranking: list[int], never_started: bool, time_ms: int
) -> list[Posting]:
    """docs/rules.md §13 settlement of a paid table's pot (or its refund)."""
    postings: list[Posting] = []
    winners = [s for s in range(4) if s in view.funded and len(ranking) == 4 and ranking[s] == 1]
    if never_started or not winners:
        # §13 "A paid table that ends before its first deal is dealt (it could not start)
        # gives every stake back."
        for seat in sorted(view.funded):
            amount = min(view.funded[seat], pot - sum(p.amount for p in postings))
            if amount > 0:
                postings.append(
                    Posting(
                        f"refund:{table_id}:{seat}",
                        pot_account(table_id),
                        player_account(view.players[seat]),
                        amount,
                        "refund",
                        table_id,
                        time_ms,
                    )
                )
        return postings
    # §13 "Option rake_percent moves floor(pot * rake_percent / 100) to the house account;
    # the rest is the prize."
    rake = pot * view.rake_percent // 100
    if rake > 0:
        postings.append(Posting(f"rake:{table_id}", pot_account(table_id), HOUSE, rake, "rake", table_id, time_ms))
    # §13 "The prize is split equally among the winners (singles: every seat ranked 1;
    # partnership: both members of each winning team); an indivisible remainder goes to
    # the winner with the lowest seat number." In partnership both partners carry the
    # team's place (§12), so "ranked 1" covers both cases.
    prize = pot - rake
    share, remainder = divmod(prize, len(winners))
    for index, seat in enumerate(winners):
        amount = share + (remainder if index == 0 else 0)
        if amount > 0:
            postings.append(
                Posting(
                    f"prize:{table_id}:{seat}",
                    pot_account(table_id),
                    player_account(view.players[seat]),
                    amount,
                    "settle",
                    table_id,
                    time_ms,
                )
            )
    return postings


class ScoringService:
    """The scoring's domain logic."""

    def __init__(
        self,
        config: ScoringConfig,
        journal: Journal,
        *,
        state: ScoringState | None = None,
        clock: Callable[[], int] | None = None,
    ) -> None:
        self.config = config
        self.journal = journal
        self.clock = clock or (lambda: int(time.time() * 1000))
        self.state = state or ScoringState()
        """The projection of the journal (`load` rebuilds it; every commit applies its entry)."""
        self._lock = asyncio.Lock()
        self.events_applied = 0
        self.events_skipped = 0

    # -- journal ------------------------------------------------------------------------

    async def load(self) -> None:
        """Rebuild the projection from the whole journal (the lifespan does it before serving)."""
        async with self._lock:
            await self._catch_up()

    async def _catch_up(self) -> None:
        """Apply the journal's entries after the projection's, up to the first one missing from
        the read: the journal's sequences have no holes (one subject, kept forever), and the
        read has no acks, so an entry lost on its way is not delivered again on it; applying
        the entries after it would leave the projection without it for good (its next commit
        conflicts and reads from it again)."""
        for sequence, payload in await self.journal.read_from(self.state.sequence + 1):
            if sequence <= self.state.sequence:
                continue
            if sequence != self.state.sequence + 1:
                log.warning("journal entry missing from a read, read again", expected=self.state.sequence + 1)
                return
            self.state.apply(sequence, decode_entry(payload))

    async def _commit(self, decide: Callable[[ScoringState], dict[str, Any] | None]) -> dict[str, Any] | None:
        """Decide, append, apply (module docstring); returns the entry applied, or None."""
        async with self._lock:
            for _ in range(MAX_COMMIT_ATTEMPTS):
                entry = decide(self.state)
                if entry is None:
                    return None
                try:
                    sequence = await self.journal.append(str(entry["id"]), encode_entry(entry), self.state.sequence)
                except (JournalConflict, JournalDuplicate):
                    await self._catch_up()
                    continue
                except Exception as exc:  # NATS down or slow: the caller retries
                    raise UnavailableError("the scoring journal is unavailable; retry") from exc
                self.state.apply(sequence, entry)
                return entry
        raise UnavailableError("the scoring journal keeps moving; retry")

    # -- wallets (docs/rules.md §13) ----------------------------------------------------------

    def _check_admin(self, credential: str | None) -> None:
        """Granting coins (and audits) need the admin credential from the configuration."""
        if not credential:
            raise Unauthenticated("an admin credential is required")
        wanted = self.config.admin_token
        if not wanted or not hmac.compare_digest(credential.encode(), wanted.encode()):
            raise PermissionDenied("not an admin credential")

    def balance(self, player_id: str) -> tuple[int, int]:
        """(available, held) coins of a player."""
        _check_id(player_id, "player_id")
        return self.state.balance(player_account(player_id)), self.state.balance(held_account(player_id))

    async def grant(self, player_id: str, amount: int, grant_id: str, credential: str | None) -> tuple[int, int]:
        """Credit coins from the mint; idempotent on `grant_id`."""
        self._check_admin(credential)
        _check_id(player_id, "player_id")
        _check_id(grant_id, "grant_id")
        _check_amount(amount)

        def decide(state: ScoringState) -> dict[str, Any] | None:
            done = state.grants.get(grant_id)
            if done is not None:
                if done != (player_id, amount):
                    raise AlreadyExists(f"grant {grant_id} exists with another player or amount")
                return None
            now = self.clock()
            posting = Posting(f"grant:{grant_id}", MINT, player_account(player_id), amount, "grant", "", now)
            return {
                "id": f"grant:{grant_id}",
                "kind": "grant",
                "grant_id": grant_id,
                "player": player_id,
                "amount": amount,
                "time_ms": now,
                "postings": [posting.to_json()],
            }

        await self._commit(decide)
        return self.balance(player_id)

    async def hold_stake(self, player_id: str, ticket_id: str, amount: int) -> tuple[int, int]:
        """Hold a ticket's stake (docs/rules.md §13); idempotent on `ticket_id`."""
        _check_id(player_id, "player_id")
        _check_id(ticket_id, "ticket_id")
        _check_amount(amount)

        def decide(state: ScoringState) -> dict[str, Any] | None:
            hold = state.holds.get(ticket_id)
            if hold is not None:
                if (hold.player_id, hold.amount) != (player_id, amount):
                    raise AlreadyExists(f"ticket {ticket_id} holds a stake for another player or amount")
                return None
            available = state.balance(player_account(player_id))
            if available < amount:
                # §13 "a player whose balance is short cannot join"
                raise InsufficientBalance(f"balance {available} is short of the stake {amount}")
            now = self.clock()
            posting = Posting(
                f"hold:{ticket_id}", player_account(player_id), held_account(player_id), amount, "hold", "", now
            )
            return {
                "id": f"hold:{ticket_id}",
                "kind": "hold",
                "ticket": ticket_id,
                "player": player_id,
                "amount": amount,
                "time_ms": now,
                "postings": [posting.to_json()],
            }

        await self._commit(decide)
        return self.balance(player_id)

    async def release_stake(self, player_id: str, ticket_id: str) -> tuple[int, int]:
        """Release a cancelled or expired ticket's stake (docs/rules.md §13); idempotent."""
        _check_id(player_id, "player_id")
        _check_id(ticket_id, "ticket_id")

        def decide(state: ScoringState) -> dict[str, Any] | None:
            hold = state.holds.get(ticket_id)
            if hold is None or hold.player_id != player_id:
                raise NotFound(f"no stake held for ticket {ticket_id} of this player")
            if hold.state == "released":
                return None
            if hold.state == "staked":
                raise IllegalMove(f"the stake of ticket {ticket_id} is already in a table's pot")
            now = self.clock()
            posting = Posting(
                f"release:{ticket_id}",
                held_account(player_id),
                player_account(player_id),
                hold.amount,
                "release",
                "",
                now,
            )
            return {
                "id": f"release:{ticket_id}",
                "kind": "release",
                "ticket": ticket_id,
                "time_ms": now,
                "postings": [posting.to_json()],
            }

        await self._commit(decide)
        return self.balance(player_id)

    async def post_competition_entry(self, entry: EscrowEntry) -> tuple[EscrowEntry, bool]:
        """One entry of a competition's escrow (docs/adr/0030, `escrow.decide`): the entry as
        posted and whether its key was posted before."""
        _check_id(entry.competition_id, "competition_id")
        _check_id(entry.player_id, "player_id")
        _check_id(entry.key, "key")
        escrow.check(entry)
        stamped = replace(entry, time_ms=self.clock())
        applied = await self._commit(lambda state: escrow.decide(state, stamped))
        return self.state.escrow_entries[entry.key], applied is None

    def competition_account(self, competition_id: str) -> tuple[list[EscrowEntry], dict[str, int]]:
        _check_id(competition_id, "competition_id")
        return list(self.state.escrows.get(competition_id, ())), escrow.account(self.state, competition_id)

    def wallet_totals(self, credential: str | None) -> dict[str, int]:
        """The docs/rules.md §13 conservation sum, by kind of account (admin only)."""
        self._check_admin(credential)
        totals = {"granted": 0, "available": 0, "held": 0, "pots": 0, "house": 0, "escrow": 0}
        for account, amount in self.state.balances.items():
            if account == MINT:
                totals["granted"] = -amount
            elif account == HOUSE:
                totals["house"] += amount
            elif account.startswith("player:"):
                totals["available"] += amount
            elif account.startswith("held:"):
                totals["held"] += amount
            elif account.startswith("pot:"):
                totals["pots"] += amount
            elif account.startswith("escrow:"):
                totals["escrow"] += amount
        totals["settlements"] = len(self.state.settled)
        totals["running_tables"] = len(self.state.running_pots)
        totals["journal_sequence"] = self.state.sequence
        return totals

    def ledger(self, player_id: str, page_size: int, page_token: str) -> tuple[list[Posting], str]:
        """A player's postings, newest first."""
        _check_id(player_id, "player_id")
        start, size = _page(page_size, page_token)
        postings = self.state.ledger.get(player_id, [])
        newest_first = postings[::-1]
        return newest_first[start : start + size], _next_token(start, size, len(postings))

    # -- table events ---------------------------------------------------------------------

    async def apply_table_event(self, table_id: str, sequence: int, time_ms: int, event: dict[str, Any]) -> bool:
        """Apply one table event exactly once per (table, sequence); False if it was applied before."""
        _check_id(table_id, "table_id")
        applied = await self._commit(lambda state: self._decide_event(state, table_id, sequence, time_ms, event))
        if applied is None:
            self.events_skipped += 1
            return False
        self.events_applied += 1
        return True

    def _decide_event(
        self, state: ScoringState, table_id: str, sequence: int, time_ms: int, event: dict[str, Any]
    ) -> dict[str, Any] | None:
        view = state.tables.get(table_id) or TableView(table_id)
        if sequence <= view.sequence:
            return None  # idempotent on (table, sequence): a redelivery or a duplicate publish
        entry: dict[str, Any] = {
            "id": f"evt:{table_id}:{sequence}",
            "kind": "event",
            "table_id": table_id,
            "sequence": sequence,
            "time_ms": time_ms,
            "event": event,
            "postings": [],
        }
        kind = event["type"]
        if kind == "table_created" and int(event.get("stake", 0)) > 0 and not view.funded:
            self._decide_funding(state, entry, table_id, event, time_ms)
        elif kind == "game_ended":
            self._decide_game_end(state, entry, view, table_id, event, time_ms)
        return entry

    def _decide_funding(
        self, state: ScoringState, entry: dict[str, Any], table_id: str, event: dict[str, Any], time_ms: int
    ) -> None:
        """docs/rules.md §13 "Joining debits the stake from each player's balance into the table's pot":
        the ticket's held stake moves into the pot (any excess goes back to the player). A seat
        without a held ticket of its own pays nothing: coins leave a balance only through a hold
        its player's own request made, never on a MatchFormed's word."""
        stake = int(event["stake"])
        tickets: list[str] = [str(t) for t in event.get("ticket_ids", [])]
        funded: dict[str, int] = {}
        staked: list[str] = []
        postings: list[dict[str, Any]] = []
        for seat, player in enumerate(event["players"]):
            if not player or event["bots"][seat]:
                continue  # §13 bots never sit at paid tables; nothing to take from them
            ticket = tickets[seat] if seat < len(tickets) else ""
            hold = state.holds.get(ticket) if ticket else None
            if hold is not None and hold.state == "held" and hold.player_id == player and hold.amount >= stake:
                postings.append(
                    Posting(
                        f"stake:{table_id}:{seat}",
                        held_account(player),
                        pot_account(table_id),
                        stake,
                        "stake",
                        table_id,
                        time_ms,
                    ).to_json()
                )
                if hold.amount > stake:
                    postings.append(
                        Posting(
                            f"stake-excess:{table_id}:{seat}",
                            held_account(player),
                            player_account(player),
                            hold.amount - stake,
                            "release",
                            table_id,
                            time_ms,
                        ).to_json()
                    )
                staked.append(ticket)
                funded[str(seat)] = stake
            else:
                entry.setdefault("unfunded", []).append(seat)
        entry["postings"] = postings
        entry["funded"] = funded
        entry["staked_tickets"] = staked

    def _decide_game_end(
        self,
        state: ScoringState,
        entry: dict[str, Any],
        view: TableView,
        table_id: str,
        event: dict[str, Any],
        time_ms: int,
    ) -> None:
        if self.config.replay_records and not view.ended and (reason := dispute(view, event)) is not None:
            entry["disputed"] = reason[:300]  # no settlement, no rating, no record (state._apply_game_ended)
            entry["counted"] = entry["rated"] = False
            log.error("GameEnded not settled: it disagrees with its record", table_id=table_id, reason=reason)
            return
        record = _parse_record(str(event.get("record_json", "")))
        ranking = [int(p) for p in event.get("ranking", [])]
        never_started = record is not None and deals_dealt(record) == 0
        players = list(view.players)
        if not any(players) and record is not None and isinstance(record.get("players"), list):
            players = [str(p) for p in record["players"]][:4]
        variant = view.variant or (str(record.get("variant", "")) if record else "")
        entry["counted"] = not never_started and not view.ended
        entry["rated"] = (
            entry["counted"]
            and valid_ranking(ranking)
            and variant in VARIANTS
            and len(players) == 4
            and all(players)
            and len(set(players)) == 4
            # "Games with a bot seat are unrated."
            and not view.bot_seen
        )
        if table_id in state.running_pots and table_id not in state.settled:
            # Settlement id = table id: a table settles exactly once (docs/rules.md §13), also
            # when a second GameEnded arrives under another sequence.
            pot = state.balance(pot_account(table_id))
            postings = settlement_postings(table_id, view, pot, ranking, never_started, time_ms)
            entry["postings"] = [p.to_json() for p in postings]
            entry["settlement"] = table_id

    # -- queries ----------------------------------------------------------------------------

    def _visible(self, table_id: str, viewer: str) -> TableView | None:
        """The table's view, PermissionDenied if it is private and `viewer` not one of its
        players (`TableView.visible_to`)."""
        view = self.state.tables.get(table_id)
        if view is not None and not view.visible_to(viewer):
            raise PermissionDenied("a private table's standings and record are visible to its players only")
        return view

    def standings(self, table_id: str, viewer: str) -> TableView:
        _check_id(table_id, "table_id")
        view = self._visible(table_id, viewer)
        if view is None:
            raise NotFound(f"no standings for table {table_id}")
        return view

    def history(self, player_id: str, page_size: int, page_token: str, viewer: str) -> tuple[list[GameSummary], str]:
        """A player's finished games, newest first; their private games only if `viewer` sat
        at them."""
        _check_id(player_id, "player_id")
        start, size = _page(page_size, page_token)
        tables = self.state.tables
        games = [
            g
            for g in self.state.history.get(player_id, [])[::-1]
            if viewer == player_id or g.table_id not in tables or tables[g.table_id].visible_to(viewer)
        ]
        return games[start : start + size], _next_token(start, size, len(games))

    def live_tables(self, variant: str | None, page_size: int, page_token: str) -> tuple[list[TableView], str]:
        """Public tables being played (created, not ended), the most recently created first;
        of one variant if asked. Never a private table. Reads the list the projection keeps
        (`ScoringState.live`): a page costs its offset plus its size, whatever was played before."""
        start, size = _page(page_size, page_token)
        tables = self.state.tables
        views = (tables[t] for t in reversed(self.state.live) if t in tables)
        wanted = (v for v in views if not v.private and not v.ended and (variant is None or v.variant == variant))
        page = list(islice(wanted, start, start + size + 1))
        return page[:size], str(start + size) if len(page) > size else ""

    def game_record(self, table_id: str, viewer: str) -> str:
        _check_id(table_id, "table_id")
        self._visible(table_id, viewer)
        record = self.state.records.get(table_id)
        if record is None:
            raise NotFound(f"no finished game at table {table_id}")
        return record

    def leaderboard(
        self, variant: str, page_size: int, page_token: str, around_player_id: str
    ) -> tuple[list[tuple[int, str, float, int]], str]:
        """(rank, player, rating, games) rows of a variant; the page holding a player if asked."""
        if variant not in VARIANTS:
            raise InvalidArgument("variant is required")
        start, size = _page(page_size, page_token)
        ratings = self.state.ratings.get(variant, {})
        ordered = sorted(ratings.items(), key=lambda item: (-item[1].ordinal, item[0]))
        if around_player_id:
            names = [name for name, _ in ordered]
            if around_player_id not in ratings:
                raise NotFound(f"{around_player_id} has no rating in {variant}")
            start = max(0, names.index(around_player_id) - size // 2)
        rows = [(start + i + 1, name, r.ordinal, r.games) for i, (name, r) in enumerate(ordered[start : start + size])]
        return rows, _next_token(start, size, len(ordered))

    def player_stats(self, player_id: str, variant: str | None) -> PlayerStats:
        """A player's statistics in one variant, or all variants added up."""
        _check_id(player_id, "player_id")
        total = PlayerStats()
        for name in VARIANTS if variant is None else (variant,):
            stats = self.state.stats.get((player_id, name))
            if stats is not None:
                total.add(stats)
        return total
