"""The competitions service's reads for players browsing (docs/adr/0029): `find`, the listed
competitions of a stage, and `competition_file`, a finished or cancelled competition's file
(`trix-competition/1`), made again from its events and its tables' stored records, the same
bytes whichever replica answers (its digest covers them)."""

from __future__ import annotations

import json
from typing import Any

from trix.competitions.service import CompetitionsService, FailedPrecondition
from trix.errors import InvalidArgument
from trix.v1 import competitions_pb2 as pb

DEFAULT_LIMIT = 50
MAX_LIMIT = 200
STAGES: dict[int, frozenset[int]] = {
    pb.COMPETITION_LISTING_OPEN: frozenset({pb.COMPETITION_STATE_REGISTRATION, pb.COMPETITION_STATE_CLOSED}),
    pb.COMPETITION_LISTING_RUNNING: frozenset({pb.COMPETITION_STATE_RUNNING, pb.COMPETITION_STATE_REVIEW}),
    pb.COMPETITION_LISTING_FINISHED: frozenset({pb.COMPETITION_STATE_FINISHED, pb.COMPETITION_STATE_CANCELLED}),
}


def find(service: CompetitionsService, listing: int, limit: int) -> list[pb.Competition]:
    """The listed competitions of the stage (every stage when unspecified), latest start first."""
    if limit > MAX_LIMIT:
        raise InvalidArgument(f"limit: at most {MAX_LIMIT}")
    if listing and listing not in STAGES:
        raise InvalidArgument("listing: open, running or finished")
    now = service.clock_ms()
    listed = [
        c
        for c in service.competitions.values()
        if c.options.visibility != "private" and (not listing or c.state(now) in STAGES[listing])
    ]
    listed.sort(key=lambda c: (-c.options.starts_at_ms, c.competition_id))
    return [service.get(c.competition_id, "") for c in listed[: limit or DEFAULT_LIMIT]]


async def competition_file(service: CompetitionsService, competition_id: str) -> tuple[str, str]:
    """(the file as JSON text, its digest); FAILED_PRECONDITION before the final."""
    comp = service._get(competition_id)
    if not comp.cancelled and comp.finished is None:
        raise FailedPrecondition("the competition has no file before its final")
    records: dict[str, Any] = {} if comp.cancelled else await service.records(comp)
    document = service._document(comp, records)
    return json.dumps(document, indent=1, sort_keys=True), str(document["digest"])


def payouts(service: CompetitionsService, competition_id: str) -> list[pb.CompetitionLedgerEntry]:
    """The settlement's entries scoring has confirmed (paid: docs/adr/0030); empty before."""
    money = service._get(competition_id).money
    return [
        pb.CompetitionLedgerEntry(key=e.key, kind=e.kind, player_id=e.player, coins=e.coins)
        for e in money.payouts or ()
        if e.key in money.posted
    ]
