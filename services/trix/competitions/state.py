"""One competition as its stored events make it (docs/adr/0026): the fold.

Owns `Competition`: the state the owner keeps in memory and rebuilds after a restart by
applying the same events in order (`apply`), through the pure core (registration, the start's
roster, `CompetitionRun`), so a rebuilt competition seats the next round exactly as the one
before the crash would have. `view` is the competition as its entrants see it: the seating
seed only once the first round is seated, the code only for its organiser.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from trix.competitions.model import Outcome
from trix.competitions.options import CompetitionError, CompetitionOptions
from trix.competitions.payments import MoneyState
from trix.competitions.protos import competition_table, options_from_proto
from trix.competitions.registration import ACCEPTED, LEFT, PENDING, REFUSED, Registration
from trix.competitions.run import CompetitionRun
from trix.competitions.seating import Start, start
from trix.v1 import competitions_pb2 as pb

_ENTRANT_STATES = {
    PENDING: pb.ENTRANT_STATE_PENDING,
    ACCEPTED: pb.ENTRANT_STATE_ACCEPTED,
    REFUSED: pb.ENTRANT_STATE_REFUSED,
    LEFT: pb.ENTRANT_STATE_LEFT_BEFORE_START,
}


@dataclass
class Competition:
    """A competition folded from its events; `last_seq` is the fence of the next append."""

    created: pb.Competition
    options: CompetitionOptions
    seed: bytes
    registration: Registration
    names: dict[str, str] = field(default_factory=dict)
    events: int = 0
    last_seq: int = 0
    run: CompetitionRun | None = None
    roster: Start | None = None
    announced: int = 0
    """The last round whose RoundStarted is stored (the run may have opened the next one)."""
    cancelled: str = ""
    ended: dict[str, pb.CompetitionTableEnded] = field(default_factory=dict)
    finished: pb.CompetitionFinished | None = None
    settled: bool = False
    money: MoneyState = field(default_factory=MoneyState)
    """Its coins at the ledger (docs/adr/0030)."""

    @property
    def competition_id(self) -> str:
        return self.created.competition_id

    @property
    def started(self) -> bool:
        return self.run is not None or bool(self.cancelled)

    @staticmethod
    def from_created(event: pb.CompetitionEvent, seq: int) -> Competition:
        created = event.created.competition
        options = options_from_proto(created.options)
        comp = Competition(created, options, bytes.fromhex(created.seating_seed), Registration(options))
        comp.events, comp.last_seq = event.sequence, seq
        return comp

    def apply(self, event: pb.CompetitionEvent, seq: int) -> None:
        """One stored event, in order (live after its append, or at recovery)."""
        if event.sequence != self.events + 1:
            raise CompetitionError(f"event {event.sequence} after {self.events}", "events")
        body = event.WhichOneof("body")
        if body == "registered":
            e = event.registered.entrant
            self.registration.states[e.player_id] = PENDING if e.state == pb.ENTRANT_STATE_PENDING else ACCEPTED
            self.registration.ratings[e.player_id] = e.rating
            self.names[e.player_id] = e.display_name
        elif body == "approved":
            self.registration.approve(event.approved.player_id, event.approved.accept)
        elif body == "left":
            self.registration.states[event.left.player_id] = LEFT
        elif body == "cancelled":
            self.cancelled = event.cancelled.reason or "cancelled"
        elif body == "round_started":
            self._round_started(event.round_started)
        elif body == "table_ended":
            self._table_ended(event.table_ended)
        elif body == "finished":
            self.finished = event.finished
        elif body == "payouts_settled":
            self.settled = True
        self.money.apply(event)
        self.events, self.last_seq = event.sequence, seq

    def _round_started(self, started: pb.RoundStarted) -> None:
        if started.round == 1:
            self.roster = start(self.options, self.registration.at_start())
            self.run = CompetitionRun(self.competition_id, self.options, self.seed, self.roster.entrants)
        if self.run is None or started.round != self.run.current_round:
            raise CompetitionError(f"round {started.round} is not the competition's next", "round")
        seated = [competition_table(self.competition_id, s).players for s in self.run.rounds[-1]]
        if [list(t.players) for t in started.tables] != [list(p) for p in seated]:
            raise CompetitionError(f"round {started.round}'s tables are not the core's", "round")
        self.announced = started.round

    def _table_ended(self, ended: pb.CompetitionTableEnded) -> None:
        if self.run is None:
            raise CompetitionError("a table ended before the start", "table")
        t = ended.table
        places, totals = tuple(t.places), tuple(ended.totals)
        outcome = Outcome(
            (places[0], places[1], places[2], places[3]),
            (totals[0], totals[1], totals[2], totals[3]),
            None if ended.left_seat < 0 else ended.left_seat,
        )
        self.run.record(t.round, t.index, outcome)
        self.ended[t.table_id] = ended

    def tables(self) -> list[pb.CompetitionTable]:
        """Every table seated so far, with its result once ended."""
        out = []
        for round_ in self.run.rounds if self.run else ():
            for seating in round_:
                table = competition_table(self.competition_id, seating)
                ended = self.ended.get(table.table_id)
                if ended is not None:
                    table.CopyFrom(ended.table)
                out.append(table)
        return out

    def state(self, now_ms: int) -> pb.CompetitionState.ValueType:
        if self.cancelled:
            return pb.COMPETITION_STATE_CANCELLED
        if self.settled:
            return pb.COMPETITION_STATE_FINISHED
        if self.finished is not None:
            return pb.COMPETITION_STATE_REVIEW
        if self.run is not None:
            return pb.COMPETITION_STATE_RUNNING
        if now_ms >= self.options.registration_closes_at_ms:
            return pb.COMPETITION_STATE_CLOSED
        return pb.COMPETITION_STATE_REGISTRATION

    def entrant(self, player: str) -> pb.Entrant:
        state = _ENTRANT_STATES[self.registration.states[player]]
        seated = self.run is None or any(player in seating.players for seating in self.run.rounds[-1])
        if state == pb.ENTRANT_STATE_ACCEPTED and not seated:
            state = pb.ENTRANT_STATE_OUT  # knocked out: not seated in the latest round
        rating = self.registration.ratings.get(player, 0.0)
        return pb.Entrant(player_id=player, display_name=self.names.get(player, ""), state=state, rating=rating)

    def view(self, now_ms: int, organiser: bool) -> pb.Competition:
        out = pb.Competition()
        out.CopyFrom(self.created)
        out.state = self.state(now_ms)
        if self.run is None:
            out.seating_seed = ""
        if not organiser:
            out.code = ""
        out.entrants.extend(self.entrant(p) for p in self.registration.states)
        if self.finished is not None:
            out.digest = self.finished.digest
            out.review_ends_at_ms = self.finished.review_ends_at_ms
        return out
