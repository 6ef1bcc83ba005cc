"""One live table: the engine game plus what the table adds around it.

Owns `Table`, the aggregate the table service keeps per table: seats, seeds (docs/rules.md
§11), the engine `Game`, the table sequence, the current turn, bot control of seats
(§10), and the mapping of engine events to the `trix.v1.Event` envelope with the
audience each copy may reach (§14). The same `apply_entry` runs live (building a log
entry) and during recovery (replaying one), so a rebuilt table is bit-exact with the
one that crashed. No I/O here: the caller appends entries to the log and publishes
the routed events.

Log entries are small JSON objects (`op` one of create, seed, autoseed, act, leave,
reclaim) whose `acts` list every engine action applied, bot moves included, so a
replay never depends on the bot's choices.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from trix import engine, fairness
from trix.rules import decision_timeout_s, engine_enum  # §9 timers; proto <-> engine enum values
from trix.table.conversions import (
    card_pb,
    contract_pb,
    engine_options,
    event_stamp,
    from_ms,
    legal_moves,
    named_seat,
    set_time,
    to_ms,
)
from trix.v1 import common_pb2, events_pb2, table_pb2

Clock = Callable[[], datetime]

PUBLIC_ONLY = -1
"""Audience of the public copy of an event that also has per-seat copies (DealStarted, and
TurnStarted with `seat_copies`)."""
ALL = -2
"""Audience of a public event: the public copies (the feed and the public subject), every seat's."""

# docs/rules.md §2: the contracts of each variant's kingdoms.
TRIX_CONTRACTS = (
    engine.Contract.KING,
    engine.Contract.QUEENS,
    engine.Contract.DIAMONDS,
    engine.Contract.TRICKS,
    engine.Contract.TRIX,
)
COMPLEX_CONTRACTS = (engine.Contract.COMPLEX, engine.Contract.TRIX)


def variant_contracts(variant: engine.Variant) -> tuple[engine.Contract, ...]:
    if variant in (engine.Variant.COMPLEX, engine.Variant.COMPLEX_PARTNERSHIP):
        return COMPLEX_CONTRACTS
    return TRIX_CONTRACTS


@dataclass(frozen=True)
class Routed:
    """One copy of an event and who may receive it: ALL, PUBLIC_ONLY, or a seat 0..3."""

    event: events_pb2.Event
    audience: int


@dataclass
class Turn:
    """The decision now due: its sequence (the TurnStarted event's), seats, kind and deadline."""

    seq: int
    seats: tuple[int, ...]
    decision: int
    client_seeds: bool = False
    deadline_ms: int = 0
    """The TurnStarted's deadline (what the timers act on, docs/rules.md §9), ms since the epoch;
    0 in snapshots written before it was kept."""


@dataclass
class Table:
    """A live table (see the module docstring)."""

    table_id: str
    request: table_pb2.CreateTableRequest
    commitment: str
    server_seed: bytes
    variant: engine.Variant
    options: engine.Options
    seeds: list[str | None]
    bots: list[bool]
    game: engine.Game | None = None
    sequence: int = 0
    log_seq: int = 0
    entries: int = 0
    turn: Turn | None = None
    results: dict[str, int] = field(default_factory=dict)
    finished: bool = False
    left: list[int] = field(default_factory=list)
    trick: list[tuple[int, int]] = field(default_factory=list)
    contract: int | None = None
    running_totals: list[int] = field(default_factory=lambda: [0, 0, 0, 0])
    _seats: tuple[common_pb2.Seat, ...] = field(default=(), compare=False, repr=False)
    """The request's seats by index, sorted once (the request never changes): shared by copies."""
    _timeouts: dict[int, float] = field(default_factory=dict, compare=False, repr=False)
    """§9 turn timer per decision, worked out once from the options: shared by copies."""
    last_entry_from: int = 0
    """The sequence before the last applied entry's events (a recovering owner publishes the
    events above it again: a crash may have come between that entry's append and its events)."""

    # -- construction ---------------------------------------------------------------

    @classmethod
    def from_create(cls, entry: dict[str, Any], server_seed: bytes) -> Table:
        request = table_pb2.CreateTableRequest.FromString(base64.b64decode(entry["request"]))
        seats = sorted(request.seats, key=lambda s: s.index)
        return cls(
            table_id=request.table_id,
            request=request,
            commitment=entry["commitment"],
            server_seed=server_seed,
            variant=engine.Variant(engine_enum(request.variant)),
            options=engine_options(request.options),
            seeds=[None] * 4,
            bots=[s.bot for s in seats],
        )

    def copy(self) -> Table:
        """An independent copy (the engine state cloned) to try a command on."""
        return Table(
            table_id=self.table_id,
            request=self.request,
            commitment=self.commitment,
            server_seed=self.server_seed,
            variant=self.variant,
            options=self.options,
            seeds=list(self.seeds),
            bots=list(self.bots),
            game=None if self.game is None else self.game.clone(),
            sequence=self.sequence,
            log_seq=self.log_seq,
            entries=self.entries,
            turn=None if self.turn is None else Turn(**vars(self.turn)),
            results=dict(self.results),
            finished=self.finished,
            left=list(self.left),
            trick=list(self.trick),
            contract=self.contract,
            running_totals=list(self.running_totals),
            last_entry_from=self.last_entry_from,
            _seats=self.seats,
            _timeouts=self._timeouts,
        )

    # -- facts ------------------------------------------------------------------------

    @property
    def seats(self) -> tuple[common_pb2.Seat, ...]:
        if not self._seats:
            self._seats = tuple(named_seat(s) for s in sorted(self.request.seats, key=lambda s: s.index))
        return self._seats

    def player(self, seat: int) -> str:
        return self.seats[seat].player_id

    @property
    def leave_ends_game(self) -> bool:
        """docs/rules.md §10: a leaver ends the game, ranked last: a paid table, or a competition's."""
        return self.request.HasField("stake") or self.request.leave_ends_game

    def timeout_s(self, decision: int) -> float:
        timeout = self._timeouts.get(decision)
        if timeout is None:
            timeout = self._timeouts[decision] = decision_timeout_s(self.request.options, decision)  # §9
        return timeout

    def to_act(self) -> tuple[int, ...]:
        if self.finished:
            return ()
        if self.game is None:
            return tuple(s for s in range(4) if self.seeds[s] is None)
        return tuple(self.game.to_act())

    def client_seed(self) -> str:
        return fairness.join_client_seeds([s or "" for s in self.seeds])

    def bot_to_act(self) -> int | None:
        """The first bot-controlled seat that must act now, if any."""
        if self.game is None or self.finished:
            return None
        for seat in self.game.to_act():
            if self.bots[seat]:
                return int(seat)
        return None

    # -- applying log entries ------------------------------------------------------------

    def apply_entry(self, entry: dict[str, Any], now: datetime, *, live: bool) -> list[Routed]:
        """Apply one log entry; live, also play the bots' moves and record them in `entry["acts"]`.

        Live, the entry records its time (`t`, ms): a replay uses it, so rebuilt events and
        turn deadlines are the ones published (entries logged before `t` existed use `now`).
        """
        if live:
            entry["t"] = to_ms(now)
        if "t" in entry:
            now = from_ms(int(entry["t"]))
        out: list[Routed] = []
        op = entry["op"]
        turn_before = self.turn
        self.last_entry_from = self.sequence
        if op == "create":
            self._emit(out, now, ALL, table_created=self._table_created())
            for s in self.seats:
                # §11 seeds awaited: a player's, and an auto-played seat's (§10: its player may
                # come and take it before the first deal; none given by then contributes "").
                if self.request.await_client_seeds and (not s.bot or s.auto_play) and not s.client_seed:
                    continue
                self.seeds[s.index] = s.client_seed
        elif op == "seed":
            self.seeds[entry["seat"]] = entry["seed"]
        elif op == "autoseed":
            self.seeds = [s or "" for s in self.seeds]  # §11 "a seat that gives none contributes ''"
        elif op == "leave":
            seat = entry["seat"]
            self.left.append(seat)
            self._emit(
                out,
                now,
                ALL,
                seat_left=events_pb2.SeatLeft(seat=seat, player_id=self.player(seat), reason=entry["reason"]),
            )
            if self.leave_ends_game:
                # docs/rules.md §10 "A player who leaves for good ... from a **paid** table ends the
                # game at once: the leaver is ranked last ..." (and "At a competition's table").
                # The engine ranks the leaver last. Before the first deal (seeds awaited) there is
                # no deal yet: an undealt game is left, so the record has no deal and §13 "A paid
                # table that ends before its first deal is dealt (it could not start) gives every
                # stake back" is scoring's settlement; once dealt, even before the first card,
                # the stakes are settled from the §10 places.
                if self.game is None:
                    self.game = engine.Game(self.variant, self.options)
                self._map(out, now, self.game.leave(seat), self.game.deal_index, auto=False)
            else:
                self._control(out, now, seat, bot=True)  # §10 free table: a bot takes the seat
        elif op == "handover":
            # §10 a competition's seat: the bot plays it until he takes it back
            self._control(out, now, entry["seat"], bot=True)
        elif op == "reclaim":
            seat = entry["seat"]
            self.left = [s for s in self.left if s != seat]
            self._control(out, now, seat, bot=False)
        self._maybe_deal(out, now)
        acts: list[list[int]] = entry.setdefault("acts", [])
        for seat, action, auto in list(acts):
            self._act(out, now, seat, action, bool(auto))
        if live:
            while (seat := self.bot_to_act()) is not None:
                assert self.game is not None
                action = self.game.bot_action(seat)
                # A bot's own move, not a timeout: `automatic` stays false. The
                # timers' AutoAct is the one that logs 1 (docs/rules.md §9).
                acts.append([seat, action, 0])
                self._act(out, now, seat, action, False)
        if self.game is not None and self.game.phase == engine.Phase.GAME_OVER:
            self.finished = True
        # A seat taken back (or handed to auto-play) keeps the current turn and its deadline
        # (docs/rules.md §9, §10): no new TurnStarted (entries logged before `keep_turn` existed
        # replay as they were published).
        kept = op in ("reclaim", "handover") and bool(entry.get("keep_turn"))
        self._next_turn(out, now, turn_before, changed=bool(acts) or (op != "act" and not kept))
        self.entries += 1
        self.results[entry["id"]] = self.sequence
        return out

    def _act(self, out: list[Routed], now: datetime, seat: int, action: int, auto: bool) -> None:
        assert self.game is not None
        deal = self.game.deal_index  # the action's deal: the engine may move on to the next one
        self._map(out, now, self.game.apply(seat, action), deal, auto=auto)
        self._maybe_deal(out, now)

    def _maybe_deal(self, out: list[Routed], now: datetime) -> None:
        """Deal when the seeds are complete (first deal) or the engine waits for the next deal (§11)."""
        if self.finished:
            return
        if self.game is None:
            if any(s is None for s in self.seeds):
                return
            self.game = engine.Game(self.variant, self.options)
        if self.game.phase == engine.Phase.AWAITING_DEAL:
            deal = self.game.deal_index
            hands = fairness.deal_from_seeds(self.server_seed, self.client_seed(), deal)
            self._map(out, now, self.game.provide_deal(hands), deal, auto=False)

    def _next_turn(self, out: list[Routed], now: datetime, before: Turn | None, *, changed: bool) -> None:
        """Emit TurnStarted when a new decision is due (§9: the timers schedule its deadline)."""
        if self.finished:
            self.turn = None
            return
        if self.game is None:
            waiting = self.to_act()
            if before is None or not before.client_seeds:
                self._turn(out, now, waiting, common_pb2.DECISION_UNSPECIFIED, client_seeds=True)
            return
        phase = self.game.phase
        decision = {
            engine.Phase.CHOOSE_CONTRACT: common_pb2.DECISION_CONTRACT,
            engine.Phase.DOUBLING: common_pb2.DECISION_DOUBLE,
            engine.Phase.PLAY: common_pb2.DECISION_CARD,
        }.get(phase, common_pb2.DECISION_UNSPECIFIED)
        simultaneous = self.options.doubling_reveal == engine.Reveal.SIMULTANEOUS
        if (
            simultaneous
            and decision == common_pb2.DECISION_DOUBLE
            and before is not None
            and before.decision == decision
            and not before.client_seeds
        ):
            # §14 SIMULTANEOUS: nobody may learn who has answered; the turn stays the same.
            return
        if changed or before is None:
            self._turn(out, now, self.to_act(), decision, client_seeds=False)

    def _turn(
        self, out: list[Routed], now: datetime, seats: tuple[int, ...], decision: int, *, client_seeds: bool
    ) -> None:
        deadline = now + timedelta(seconds=self.timeout_s(decision))
        body = events_pb2.TurnStarted(
            seats=seats,
            decision=common_pb2.Decision.ValueType(decision),
            turn_seq=self.sequence + 1,
            deal_index=0 if self.game is None else self.game.deal_index,
            client_seeds=client_seeds,
        )
        set_time(body.deadline, deadline)
        if client_seeds or self.game is None or decision == common_pb2.DECISION_UNSPECIFIED or not seats:
            event = self._emit(out, now, ALL, turn_started=body)
        else:
            # ADR 0003 decision 15: each seat due gets its own copy carrying its legal moves, so
            # it needs no view to act. Derived from the engine state at this event, live and in
            # a replay alike (recovery republishes the same copies). docs/rules.md §14 "its hand |
            # yes | never (only the number of cards) | never": legal cards reveal the hand, so
            # they are on the seat's own copy only; the public copy carries none.
            body.seat_copies = True
            copies: dict[int, dict[str, Any]] = {}
            for seat in seats:
                own = events_pb2.TurnStarted()
                own.CopyFrom(body)
                cards, contracts = legal_moves(self.game, seat)
                own.legal_cards.extend(cards)
                own.legal_contracts.extend(contracts)
                copies[seat] = {"turn_started": own}
            copies[PUBLIC_ONLY] = {"turn_started": body}
            event = self._copies(out, now, copies)
        self.turn = Turn(event.sequence, seats, decision, client_seeds, to_ms(deadline))

    # -- engine events -> trix.v1.Event ---------------------------------------------------

    def _control(self, out: list[Routed], now: datetime, seat: int, *, bot: bool) -> None:
        """The seat played by the bot or by its player from now on, and the SeatControlChanged saying so."""
        self.bots[seat] = bot
        control = events_pb2.SeatControlChanged(seat=seat, bot=bot, player_id=self.player(seat))
        self._emit(out, now, ALL, seat_control_changed=control)

    def _emit(self, out: list[Routed], now: datetime, audience: int, **body: Any) -> events_pb2.Event:
        self.sequence += 1
        event = events_pb2.Event(table_id=self.table_id, sequence=self.sequence, **body)
        event.time.CopyFrom(event_stamp(now))
        out.append(Routed(event, audience))
        return event

    def _copies(self, out: list[Routed], now: datetime, copies: dict[int, dict[str, Any]]) -> events_pb2.Event:
        """Several copies of one event (same sequence), each for its audience: one per seat,
        then the public one (PUBLIC_ONLY) last, in that order; returns the last. Readers take a
        seat's own copy over the public one (`trix.natsio.seatstream.has_seat_copies` names
        these events and the seats that have one)."""
        self.sequence += 1
        for audience, body in copies.items():
            event = events_pb2.Event(table_id=self.table_id, sequence=self.sequence, **body)
            event.time.CopyFrom(event_stamp(now))
            out.append(Routed(event, audience))
        return event

    def _map(self, out: list[Routed], now: datetime, events: list[tuple[Any, ...]], deal: int, *, auto: bool) -> None:
        """Publish the engine's events of one step. `deal` is the deal the step happened in, read
        before it: after a deal's last card the engine has already moved on to the next deal, yet
        that card, its trick and its seats out belong to this one. A DEAL_STARTED or
        DEAL_SCORED event carries its own deal, and the events after it belong to that one."""
        assert self.game is not None
        game = self.game
        simultaneous = self.options.doubling_reveal == engine.Reveal.SIMULTANEOUS
        for ev in events:
            kind = ev[0]
            if kind == engine.DEAL_STARTED:
                _, deal, kingdom, owner = ev
                self.trick = []
                self.contract = None
                played = set(game.view(None)["played_contracts"])
                available = [contract_pb(c) for c in variant_contracts(self.variant) if c not in played]

                def started(
                    hand: tuple[int, ...], deal: int = deal, kingdom: int = kingdom, owner: int = owner
                ) -> dict[str, Any]:
                    return {
                        "deal_started": events_pb2.DealStarted(
                            deal_index=deal,
                            kingdom=kingdom,
                            owner=owner,
                            hand=[card_pb(c) for c in hand],
                            available_contracts=available,  # noqa: B023 - called in this iteration only
                        )
                    }

                # §14: each hand only in its own seat's copies; the public copy has none.
                copies = {seat: started(game.hand(seat)) for seat in range(4)}
                copies[PUBLIC_ONLY] = started(())
                self._copies(out, now, copies)
            elif kind == engine.CONTRACT_CHOSEN:
                self.contract = int(ev[2])
                self._emit(
                    out,
                    now,
                    ALL,
                    contract_chosen=events_pb2.ContractChosen(
                        deal_index=deal, seat=ev[1], contract=contract_pb(ev[2]), automatic=auto
                    ),
                )
            elif kind == engine.DOUBLE_ANSWERED:
                if simultaneous:
                    continue  # §14: secret until DOUBLES_REVEALED; not even a sequence number leaks
                answer = common_pb2.DoubleAnswer(seat=ev[1], cards=[card_pb(c) for c in ev[2]])
                self._emit(
                    out,
                    now,
                    ALL,
                    double_answered=events_pb2.DoubleAnswered(deal_index=deal, answer=answer, automatic=auto),
                )
            elif kind == engine.DOUBLES_REVEALED:
                answers = [common_pb2.DoubleAnswer(seat=s, cards=[card_pb(c) for c in cs]) for s, cs in ev[1]]
                self._emit(
                    out,
                    now,
                    ALL,
                    doubles_revealed=events_pb2.DoublesRevealed(deal_index=deal, answers=answers),
                )
            elif kind == engine.CARD_PLAYED:
                self.trick.append((ev[1], ev[2]))
                self._emit(
                    out,
                    now,
                    ALL,
                    card_played=events_pb2.CardPlayed(deal_index=deal, seat=ev[1], card=card_pb(ev[2]), automatic=auto),
                )
            elif kind == engine.TRICK_TAKEN:
                _, winner, index, points = ev
                cards, self.trick = self.trick, []
                self._emit(
                    out,
                    now,
                    ALL,
                    trick_taken=events_pb2.TrickTaken(
                        deal_index=deal,
                        trick_index=index,
                        leader=cards[0][0] if cards else winner,
                        taker=winner,
                        cards=[card_pb(c) for _, c in cards],
                        points=common_pb2.SeatScores(values=list(points)),
                    ),
                )
            elif kind == engine.SEAT_PASSED:
                self._emit(out, now, ALL, seat_passed=events_pb2.SeatPassed(deal_index=deal, seat=ev[1]))
            elif kind == engine.SEAT_OUT:
                _, seat, place, points = ev
                self._emit(
                    out,
                    now,
                    ALL,
                    seat_out=events_pb2.SeatOut(deal_index=deal, seat=seat, place=place, points=points),
                )
            elif kind == engine.DEAL_SCORED:
                _, deal, scores = ev
                self.running_totals = [t + s for t, s in zip(self.running_totals, scores, strict=True)]
                self._emit(
                    out,
                    now,
                    ALL,
                    deal_scored=events_pb2.DealScored(
                        deal_index=deal,
                        contract=contract_pb(self.contract),
                        points=common_pb2.SeatScores(values=list(scores)),
                        totals=common_pb2.SeatScores(values=list(self.running_totals)),
                    ),
                )
            elif kind == engine.GAME_ENDED:
                _, totals, ranking = ev
                self.finished = True
                self._emit(
                    out,
                    now,
                    ALL,
                    game_ended=events_pb2.GameEnded(
                        record_json=json.dumps(self.record(), separators=(",", ":")),
                        totals=common_pb2.SeatScores(values=list(totals)),
                        ranking=list(ranking),
                        left_seat=self.left[0] if self.left and self.leave_ends_game else -1,
                    ),
                )
            # SEAT_LEFT: the table already published SeatLeft with the player and reason.

    def _table_created(self) -> events_pb2.TableCreated:
        r = self.request
        created = events_pb2.TableCreated(
            variant=r.variant, options=r.options, seats=self.seats, commitment=self.commitment, match_id=r.table_id
        )
        created.private_table = r.private_table  # its players' only at scoring too
        created.leave_ends_game = r.leave_ends_game
        if r.HasField("stake"):
            created.stake.CopyFrom(r.stake)
            # docs/rules.md §13: scoring moves each seat's held ticket stake into the pot.
            created.ticket_ids.extend(r.ticket_ids)
        return created

    def record(self) -> dict[str, Any]:
        """docs/rules.md §12 record; the server seed only once the game is over (§11, §14)."""
        assert self.game is not None
        rec: dict[str, Any] = self.game.record()
        rec["players"] = [self.player(s) or f"bot-{s}" for s in range(4)]
        rec["fairness"] = {
            "commitment": self.commitment,
            "server_seed": self.server_seed.hex() if self.game.phase == engine.Phase.GAME_OVER else None,
            "client_seed": self.client_seed(),
        }
        return rec

    # -- snapshots ----------------------------------------------------------------------

    def to_snapshot(self) -> bytes:
        """Everything but the server seed (kept apart, docs/rules.md §14), as JSON."""
        doc = {
            "request": base64.b64encode(self.request.SerializeToString()).decode(),
            "commitment": self.commitment,
            "seeds": self.seeds,
            "bots": self.bots,
            "engine": None if self.game is None else base64.b64encode(self.game.snapshot()).decode(),
            "sequence": self.sequence,
            "log_seq": self.log_seq,
            "entries": self.entries,
            "turn": None if self.turn is None else vars(self.turn),
            "results": self.results,
            "finished": self.finished,
            "left": self.left,
            "trick": self.trick,
            "contract": self.contract,
            "running_totals": self.running_totals,
        }
        return json.dumps(doc, sort_keys=True).encode()

    @classmethod
    def from_snapshot(cls, data: bytes, server_seed: bytes) -> Table:
        doc = json.loads(data)
        table = cls.from_create({"request": doc["request"], "commitment": doc["commitment"]}, server_seed)
        table.seeds = doc["seeds"]
        table.bots = doc["bots"]
        table.game = None if doc["engine"] is None else engine.Game.restore(base64.b64decode(doc["engine"]))
        table.sequence = doc["sequence"]
        table.log_seq = doc["log_seq"]
        table.entries = doc["entries"]
        table.turn = None if doc["turn"] is None else Turn(**{**doc["turn"], "seats": tuple(doc["turn"]["seats"])})
        table.results = doc["results"]
        table.finished = doc["finished"]
        table.left = doc["left"]
        table.trick = [(s, c) for s, c in doc["trick"]]
        table.contract = doc["contract"]
        table.running_totals = doc["running_totals"]
        return table

    def state_key(self) -> tuple[Any, ...]:
        """The whole state compared by recovery tests (engine bytes included)."""
        return (self.to_snapshot(), None if self.game is None else self.game.snapshot())
