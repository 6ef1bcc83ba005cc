"""The competitions service (issue 43, docs/adr/0026): the owner of every competition.

Owns the commands (create, register, leave, approve, the reads) and `tick`, which moves each
competition on by the clock and its tables: at the start time the roster is decided (cancelled
under 75 % full; bots fill the empty seats), the first round is seated from the committed seed
and its tables are created; each table's GameEnded is recorded, the next round seated and
created as soon as a round's last table ends; after the final the competition file is published
(`trix-competition/1`) and the review period runs; then the payouts are settled and the file
published again with the review period's complaints and answers (its digest covers them, as
`digest_of` gives it meanwhile), until the stored one has that digest (`kept_files`, as a
cancelled competition's). Every change is
first a stored event (appended with the competition's expected last sequence, `ports.Fenced`
otherwise) and only then applied, by the same fold a restarted process rebuilds with (`state`).

A paid competition's coins move at scoring's ledger through `payments` (docs/adr/0030): the
fee held before the registration is stored, every refund, prize and the house's share posted
after its event with its own key and re-driven by `tick` until confirmed.

Several replicas (docs/adr/0026): every replica folds every competition's events, the ones
the others append too (`catch_up`, each tick and before each command), and answers any
command (its append fenced); only a competition's owner, the replica holding its shard's
lease (`owns`, set by `trix.competitions.ownership`), moves it on and drives its payments in
`tick`, rebuilding it from its events first when the shard is won (`rebuild`).
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import secrets
from collections.abc import Callable
from typing import Any

import structlog

from trix.competitions import points
from trix.competitions.complaints import ComplaintRefused, Complaints, NotAnEntrant
from trix.competitions.config import CompetitionsConfig
from trix.competitions.digest import build_document, canonical
from trix.competitions.kept_files import KeptFiles
from trix.competitions.model import BOT_PREFIX
from trix.competitions.money import plan
from trix.competitions.noshows import NoShows, no_show_wait_message
from trix.competitions.notices import notices_of
from trix.competitions.options import CompetitionError, validate_options
from trix.competitions.payments import Payments
from trix.competitions.ports import Digests, EventLog, Fenced, Notices, Tables
from trix.competitions.protos import competition_table, match_formed, options_from_proto
from trix.competitions.schedule import SYSTEM_ORGANISER as SYSTEM_ORGANISER  # grpc_api's
from trix.competitions.schedule import competition_id_of
from trix.competitions.scheduler import Scheduler
from trix.competitions.seating import first_round, seating_commitment, start
from trix.competitions.state import Competition
from trix.errors import IllegalMove, InvalidArgument, NotFound, PermissionDenied
from trix.v1 import competitions_pb2 as pb

log = structlog.get_logger("trix.competitions")


class FailedPrecondition(IllegalMove):
    """Not possible in the competition's state (FAILED_PRECONDITION)."""


def _invalid(err: CompetitionError) -> InvalidArgument:
    return InvalidArgument(f"{err.option}: {err}" if err.option and err.option not in str(err) else str(err))


def _refusal(err: CompetitionError) -> InvalidArgument | FailedPrecondition | PermissionDenied:
    if isinstance(err, NotAnEntrant):
        return PermissionDenied(str(err))
    return FailedPrecondition(str(err)) if isinstance(err, ComplaintRefused) else _invalid(err)


class CompetitionsService:
    def __init__(
        self,
        config: CompetitionsConfig,
        events: EventLog,
        tables: Tables,
        digests: Digests,
        *,
        clock_ms: Callable[[], int],
        new_seed: Callable[[], bytes] = lambda: secrets.token_bytes(32),
    ) -> None:
        self.config = config
        self.events = events
        self.tables = tables
        self.digests = digests
        self.clock_ms = clock_ms
        self.new_seed = new_seed
        self.competitions: dict[str, Competition] = {}
        self.lock = asyncio.Lock()
        """One writer in this process: every append and apply holds it."""
        self.payments = Payments()
        self.schedule = Scheduler(config.schedule)
        self.complaints = Complaints()
        """The review period's complaints, folded from their events (`trix.competitions.complaints`)."""
        self.noshows = NoShows()
        """Every player's no-shows, folded from the tables' ends (`trix.competitions.noshows`)."""
        """The system's own competitions (`trix.competitions.schedule`), created from `tick`."""
        """Its hand at scoring's ledger (`bootstrap` gives it one)."""
        self.files = KeptFiles()
        """The files of the cancelled and the settled competitions, published again until stored
        as their events make them (`trix.competitions.kept_files`)."""
        self.published: set[tuple[str, int]] = set()
        """(competition, round) whose tables this process has asked for: after a restart or a
        takeover the current round's are asked for again (a crash may have come between the
        round's event and its MatchFormed), each only while its table does not exist (the
        MatchFormed's message id is the table id: a repeat within the stream's window is stored once)."""
        self.seen_seq = 0
        """The stream sequence folded through by `recover` and `catch_up`."""
        self.owns: Callable[[str], bool] = lambda _competition_id: True
        """Does this replica own the competition (its shard's lease held and valid)? Alone: yes."""
        self.notices: Notices | None = None
        """Where each entrant is told of his next table and his competition's changes (ADR 0029)."""

    # -- recovery -----------------------------------------------------------------------------

    async def recover(self) -> None:
        """Every competition rebuilt from its stored events, in order."""
        self.competitions.clear()
        self.noshows, self.complaints = NoShows(), Complaints()
        self.seen_seq = 0
        await self.catch_up()
        log.info("competitions recovered", competitions=len(self.competitions))

    async def catch_up(self) -> None:
        """Folds the events stored since the last look (other replicas' appends; this one's own
        are folded already). The caller holds `lock`."""
        async for seq, event in self.events.read_all(after=self.seen_seq):
            self._fold(event, seq)
            self.seen_seq = seq

    async def rebuild(self, competition_ids: list[str]) -> None:
        """The competitions folded again from their own events, up to `seen_seq` (a won shard's,
        before its new owner moves them on; the caller has just caught up, and the service's
        own folds of every event, complaints and no-shows, stay as they are); their current
        round's tables are asked for again. Holds `lock`."""
        for cid in competition_ids:
            fresh: Competition | None = None
            async for seq, event in self.events.read_all(competition_id=cid):
                if seq > self.seen_seq:
                    break  # folded by the next catch_up, with the rest
                if event.HasField("created"):
                    fresh = Competition.from_created(event, seq)
                elif fresh is not None:
                    fresh.apply(event, seq)
            if fresh is not None:
                self.competitions[cid] = fresh
            self.published = {p for p in self.published if p[0] != cid}

    def _fold(self, event: pb.CompetitionEvent, seq: int) -> None:
        comp = self.competitions.get(event.competition_id)
        if comp is not None and seq <= comp.last_seq:
            return  # folded already (this replica appended it)
        if event.HasField("created"):
            self.competitions[event.competition_id] = Competition.from_created(event, seq)
        elif comp is not None:
            comp.apply(event, seq)
        self.complaints.apply(event)
        for player in event.table_ended.no_shows:
            self.noshows.record(player, event.competition_id, event.time_ms)

    async def _append(self, comp: Competition | None, event: pb.CompetitionEvent) -> Competition:
        """Stores the event after the competition's last one, then applies it (the fence: an
        append after another writer's is refused and the competitions are rebuilt)."""
        event.sequence = 1 if comp is None else comp.events + 1
        event.time_ms = self.clock_ms()
        try:
            seq = await self.events.append(event, 0 if comp is None else comp.last_seq)
        except Fenced:
            await self.catch_up()
            raise
        self._fold(event, seq)
        comp = self.competitions[event.competition_id]
        if self.notices is not None:
            await self.notices.publish(notices_of(comp, event, self.clock_ms(), self.digest_of(comp)))
        return comp

    async def _current(self, competition_id: str) -> Competition:
        """The competition with every stored event folded (another replica may have appended)."""
        await self.catch_up()
        return self._get(competition_id)

    def _get(self, competition_id: str) -> Competition:
        comp = self.competitions.get(competition_id)
        if comp is None:
            raise NotFound("no such competition")
        return comp

    # -- commands -----------------------------------------------------------------------------

    async def create(self, organiser: str, options: pb.CompetitionOptions, request_id: str) -> pb.Competition:
        try:
            core = validate_options(options_from_proto(options), self.clock_ms())
        except CompetitionError as err:
            raise _invalid(err) from None
        self.payments.check_open(core)
        competition_id = competition_id_of(organiser, request_id or secrets.token_hex(16))
        async with self.lock:
            await self.catch_up()  # a repeat of the request may have been stored by another replica
            if competition_id in self.competitions:
                return self.competitions[competition_id].view(self.clock_ms(), True)
            seed = self.new_seed()
            created = pb.Competition(
                competition_id=competition_id,
                organiser_id=organiser,
                options=options,
                seating_commitment=seating_commitment(seed),
                seating_seed=seed.hex(),  # kept in the service's own stream; shown from round 1
                code=secrets.token_hex(4) if core.visibility == "private" else "",
            )
            event = pb.CompetitionEvent(
                competition_id=competition_id, created=pb.CompetitionCreated(competition=created)
            )
            comp = await self._append(None, event)
            return comp.view(self.clock_ms(), True)

    async def register(self, player: str, competition_id: str, code: str, display_name: str) -> pb.Entrant:
        async with self.lock:
            comp = await self._current(competition_id)
            if comp.created.code and code != comp.created.code:
                raise PermissionDenied("this private competition needs its code")
            if player.startswith(BOT_PREFIX):
                raise InvalidArgument(f"a player id may not start with {BOT_PREFIX!r}")
            opens_at_ms = self.noshows.opens_at_ms(player, self.clock_ms())
            if opens_at_ms > self.clock_ms():
                raise FailedPrecondition(no_show_wait_message(opens_at_ms))
            trial = type(comp.registration)(comp.options, dict(comp.registration.states), {})
            try:
                state = trial.register(player, 0.0, self.clock_ms())
            except CompetitionError as err:
                raise _invalid(err) from None
            entrant = pb.Entrant(
                player_id=player,
                display_name=display_name[:64],
                state=pb.ENTRANT_STATE_PENDING if state == "pending" else pb.ENTRANT_STATE_ACCEPTED,
            )
            await self.payments.hold_fee(comp, player)
            hold_key = f"competition.{competition_id}.hold.{player}"
            event = pb.CompetitionEvent(
                competition_id=competition_id, registered=pb.EntrantRegistered(entrant=entrant, hold_key=hold_key)
            )
            comp = await self._append(comp, event)
            return comp.entrant(player)

    async def leave(self, player: str, competition_id: str) -> int:
        async with self.lock:
            comp = await self._current(competition_id)
            if comp.started:
                raise FailedPrecondition("the competition has started: leaving now is leaving your table")
            trial = type(comp.registration)(comp.options, dict(comp.registration.states), {})
            try:
                refund = trial.leave(player, self.clock_ms())
            except CompetitionError as err:
                raise _invalid(err) from None
            event = pb.CompetitionEvent(
                competition_id=competition_id, left=pb.EntrantLeft(player_id=player, before_start=True)
            )
            await self.payments.after(self, await self._append(comp, event))
            return refund

    async def approve(self, caller: str, competition_id: str, player: str, accept: bool) -> pb.Entrant:
        async with self.lock:
            comp = await self._current(competition_id)
            if caller != comp.created.organiser_id:
                raise PermissionDenied("only the organiser decides on entrants")
            trial = type(comp.registration)(comp.options, dict(comp.registration.states), {})
            try:
                trial.approve(player, accept)
            except CompetitionError as err:
                raise _invalid(err) from None
            event = pb.CompetitionEvent(
                competition_id=competition_id, approved=pb.EntrantApproved(player_id=player, accept=accept)
            )
            comp = await self._append(comp, event)
            await self.payments.after(self, comp)
            return self.competitions[competition_id].entrant(player)

    async def file_complaint(self, player: str, competition_id: str, table_id: str, text: str) -> pb.Complaint:
        async with self.lock:
            comp = await self._current(competition_id)
            try:
                complaint = self.complaints.file(comp, player, table_id, text, self.clock_ms())
            except CompetitionError as err:
                raise _refusal(err) from None
            body = pb.ComplaintFiled(complaint=complaint)
            await self._append(comp, pb.CompetitionEvent(competition_id=competition_id, complaint_filed=body))
            return complaint

    async def answer_complaint(
        self, operator: str, competition_id: str, complaint_id: str, answer: str
    ) -> pb.Complaint:
        async with self.lock:
            comp = await self._current(competition_id)
            try:
                complaint = self.complaints.answer(competition_id, complaint_id, operator, answer)
            except CompetitionError as err:
                raise _refusal(err) from None
            body = pb.ComplaintAnswered(complaint=complaint)
            await self._append(comp, pb.CompetitionEvent(competition_id=competition_id, complaint_answered=body))
            return complaint

    def get(self, competition_id: str, caller: str) -> pb.Competition:
        comp = self._get(competition_id)
        view = comp.view(self.clock_ms(), caller == comp.created.organiser_id)
        if comp.cancelled:  # its file is made again from the events, the same bytes
            view.digest, view.seating_seed = self._document(comp, {})["digest"], comp.seed.hex()
        elif comp.finished is not None:
            view.digest = self.digest_of(comp)
        return view

    def digest_of(self, comp: Competition) -> str:
        """The digest of the finished competition's file as it stands: the final's, then with the
        review period's complaints and answers (the tables' record hashes as their ends stored
        them); "" before the final."""
        if comp.finished is None:
            return ""
        if not self.complaints.of(comp.competition_id):
            return comp.finished.digest
        hashes = {t.table_id: t.record_sha256 for t in comp.tables() if t.ended}
        return str(self._document(comp, {}, hashes)["digest"])

    def bracket(self, competition_id: str) -> pb.GetBracketResponse:
        comp = self._get(competition_id)
        out = pb.GetBracketResponse(tables=comp.tables())
        if comp.finished is not None:
            out.ranking.extend(comp.finished.ranking)
        return out

    def standings(self, competition_id: str) -> pb.GetCompetitionStandingsResponse:
        comp = self._get(competition_id)
        if comp.options.format != "points":
            raise FailedPrecondition("a knockout has a bracket, not standings (GetBracket)")
        out = pb.GetCompetitionStandingsResponse(tables=comp.tables())
        if comp.run is not None:
            run = comp.run
            for row in points.standings(comp.options, run.rounds, run.outcomes, run.draw_index):
                out.rows.add(players=row.unit, points=row.points, wins=row.wins, score=row.score, out=row.out)
        return out

    # -- the clock and the tables -------------------------------------------------------------

    async def tick(self) -> None:
        """Moves every unfinished competition this replica owns on (`tick_s` apart; a failed one is
        tried again), after folding what the other replicas appended; the schedule's due
        competitions created (by every replica: the same ids, the fence stores one)."""
        await self.schedule.tick(self, self.clock_ms())
        async with self.lock:
            await self.catch_up()
            for comp in list(self.competitions.values()):
                if not self.owns(comp.competition_id):
                    continue
                try:
                    if not (comp.settled or comp.cancelled):
                        await self._advance(comp.competition_id)
                    await self.files.keep(self, self.competitions[comp.competition_id])
                    await self.payments.drive(self, self.competitions[comp.competition_id])
                except Fenced:
                    return
                except Exception as exc:  # noqa: BLE001 - one competition never stops the others
                    log.warning("competition not advanced", competition=comp.competition_id, error=repr(exc))

    async def _advance(self, competition_id: str) -> None:
        comp = self.competitions[competition_id]
        now = self.clock_ms()
        if not comp.started:
            if now >= comp.options.starts_at_ms:
                await self._start(comp)
            return
        if comp.run is not None and comp.finished is None:
            await self._follow(comp)
            return
        held = self.complaints.unanswered(competition_id)  # the prizes wait for every answer
        if comp.finished is not None and now >= comp.finished.review_ends_at_ms and not held:
            entries = self._ledger(comp)
            event = pb.CompetitionEvent(
                competition_id=competition_id, payouts_settled=pb.PayoutsSettled(entries=entries)
            )
            await self._append(comp, event)  # its file published again by `files` (with the complaints)

    async def _start(self, comp: Competition) -> None:
        comp = await self.payments.reconcile(self, comp)
        roster = start(comp.options, comp.registration.at_start())
        cid = comp.competition_id
        if roster.cancelled:
            comp = await self._append(
                comp,
                pb.CompetitionEvent(competition_id=cid, cancelled=pb.CompetitionCancelled(reason=roster.cancelled)),
            )
            log.info("competition cancelled", competition=cid, reason=roster.cancelled)  # its file: `files`
            return
        tables = [competition_table(cid, s) for s in first_round(comp.options, comp.seed, roster.entrants)]
        started = pb.RoundStarted(round=1, tables=tables, seating_seed=comp.seed.hex())
        comp = await self._append(comp, pb.CompetitionEvent(competition_id=cid, round_started=started))
        await self._create_round(comp)

    async def _create_round(self, comp: Competition) -> None:
        assert comp.run is not None
        for seating in comp.run.rounds[-1]:
            table_id = seating.table_id(comp.competition_id)
            if table_id not in comp.ended and not await self.tables.exists(table_id):
                await self.tables.create(
                    match_formed(
                        comp.competition_id, comp.options, seating, comp.names, await_players=self.config.await_players
                    )
                )
        self.published.add((comp.competition_id, comp.run.current_round))

    async def _announce(self, comp: Competition) -> Competition:
        """The current round's RoundStarted unless stored (a round opens with the last table of
        the one before: an owner killed between the two appends leaves it to the next owner),
        then the round's tables asked for."""
        assert comp.run is not None
        if comp.run.current_round > comp.announced:
            started = pb.RoundStarted(
                round=comp.run.current_round,
                tables=[competition_table(comp.competition_id, s) for s in comp.run.rounds[-1]],
            )
            comp = await self._append(
                comp, pb.CompetitionEvent(competition_id=comp.competition_id, round_started=started)
            )
        assert comp.run is not None
        if (comp.competition_id, comp.run.current_round) not in self.published:
            await self._create_round(comp)
        return comp

    async def _follow(self, comp: Competition) -> None:
        assert comp.run is not None
        cid = comp.competition_id
        comp = await self._announce(comp)
        for table in comp.tables():
            if table.ended or comp.run is None or table.round != comp.run.current_round:
                continue
            ended = await self.tables.game_ended(table.table_id)
            if ended is None:
                continue
            table.ended = True
            table.places.extend(ended.ranking)
            table.record_sha256 = hashlib.sha256(canonical(json.loads(ended.record_json))).hexdigest()
            body = pb.CompetitionTableEnded(table=table, totals=list(ended.totals.values), left_seat=ended.left_seat)
            body.no_shows.extend(await self.tables.no_shows(table.table_id))
            comp = await self._append(comp, pb.CompetitionEvent(competition_id=cid, table_ended=body))
            comp = await self._announce(comp)
        if comp.run is not None and comp.run.finished:
            await self._finish(comp)

    async def _finish(self, comp: Competition) -> None:
        assert comp.run is not None
        document = self._document(comp, await self.records(comp))
        await self.digests.publish(comp.competition_id, document)
        finished = pb.CompetitionFinished(
            ranking=["+".join(unit) for unit in comp.run.ranking()],
            digest=document["digest"],
            review_ends_at_ms=self.clock_ms() + round(self.config.review_s * 1000),
        )
        await self._append(comp, pb.CompetitionEvent(competition_id=comp.competition_id, finished=finished))
        log.info("competition finished", competition=comp.competition_id, digest=document["digest"])

    async def records(self, comp: Competition) -> dict[str, Any]:
        """Every table's stored record (docs/rules.md §12), by table id."""
        records: dict[str, Any] = {}
        for table in comp.tables():
            ended = await self.tables.game_ended(table.table_id)
            if ended is None:
                raise FailedPrecondition(f"the record of {table.table_id} is not stored")
            records[table.table_id] = json.loads(ended.record_json)
        return records

    def _document(
        self, comp: Competition, records: dict[str, Any], hashes: dict[str, str] | None = None
    ) -> dict[str, Any]:
        reg = comp.registration
        return build_document(
            comp.competition_id,
            comp.options,
            comp.seed,
            reg.at_start(),
            reg.paid(),
            reg.left_before_start(),
            None if comp.cancelled else comp.run,
            records,
            reg.refunded_in_full(),
            self.complaints.in_file(comp.competition_id),
            hashes,
        )

    def _ledger(self, comp: Competition) -> list[pb.CompetitionLedgerEntry]:
        reg = comp.registration
        ranking = comp.run.ranking() if comp.run is not None else None
        entries = plan(
            comp.competition_id, comp.options, reg.paid(), reg.left_before_start(), ranking, reg.refunded_in_full()
        )
        return [pb.CompetitionLedgerEntry(key=e.key, kind=e.kind, player_id=e.player, coins=e.coins) for e in entries]
