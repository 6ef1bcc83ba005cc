"""The competitions service's NATS adapters (`trix.competitions.ports`).

- `StreamEventLog`: the COMPETITIONS stream, one subject per competition; each append carries
  `Nats-Expected-Last-Subject-Sequence` (the fence: no two writers after the same event) and a
  message id (a retried append is stored once);
- `MatchTables`: a table made as matchmaking makes one, MatchFormed on `trix.match.formed`
  with the table id as its message id (the table service's create is idempotent by table id),
  whether a table exists (any message of its durable results, TABLE_RESULTS: its TableCreated
  first) and its GameEnded, the last of them;
- `FolderDigests`: each competition's file written to a folder, atomically, and its digest
  read back;
- `ScoringLedger`: scoring's ledger over its escrow RPCs (docs/adr/0030);
- `NatsNotices`: each entrant's notices on core NATS (docs/adr/0029), best effort.
"""

from __future__ import annotations

import asyncio
import json
import os
import secrets
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import grpc
import nats.js.errors
import structlog
from nats.js.errors import APIError

from trix import tls
from trix.competitions.money import HOLD, HOUSE, PRIZE, REFUND, LedgerEntry
from trix.competitions.noshows import no_shows
from trix.competitions.ports import Fenced
from trix.errors import IllegalMove, Unavailable
from trix.natsio import names, subjects
from trix.natsio.connection import NatsConnection
from trix.natsio.publish import EXPECTED_LAST_SUBJECT_SEQ_HEADER, publish_once
from trix.natsio.stored import stored_messages
from trix.runtime.identity import IDENTITY_METADATA, PLAYER_METADATA, PLAYER_TOKEN, ServiceSigner
from trix.v1 import competitions_pb2, events_pb2, scoring_pb2, scoring_pb2_grpc

log = structlog.get_logger("trix.competitions")

_KINDS = {
    HOLD: scoring_pb2.COMPETITION_ENTRY_KIND_FEE,
    REFUND: scoring_pb2.COMPETITION_ENTRY_KIND_REFUND,
    PRIZE: scoring_pb2.COMPETITION_ENTRY_KIND_PRIZE,
    HOUSE: scoring_pb2.COMPETITION_ENTRY_KIND_HOUSE,
}
WRONG_LAST_SEQUENCE = 10071
WRONG_LAST_SEQUENCE_IN_PROCESS = 10164


class StreamEventLog:
    def __init__(self, nats: NatsConnection) -> None:
        self.nats = nats

    async def append(self, event: competitions_pb2.CompetitionEvent, expected_last: int) -> int:
        cid = event.competition_id
        try:
            ack = await publish_once(
                self.nats.jetstream,
                subjects.competition_events(cid),
                event.SerializeToString(),
                msg_id=f"{cid}.{event.sequence}",
                headers={EXPECTED_LAST_SUBJECT_SEQ_HEADER: str(expected_last)},
            )
        except APIError as err:
            if err.err_code in (WRONG_LAST_SEQUENCE, WRONG_LAST_SEQUENCE_IN_PROCESS):
                raise Fenced(f"competition {cid}: another writer appended first") from None
            raise
        if ack.duplicate:
            raise Fenced(f"competition {cid}: event {event.sequence} was stored before")
        return int(ack.seq)

    async def read_all(
        self, after: int = 0, competition_id: str = ""
    ) -> AsyncIterator[tuple[int, competitions_pb2.CompetitionEvent]]:
        subject = subjects.competition_events(competition_id) if competition_id else subjects.all_competition_events()
        async for msg in stored_messages(self.nats, names.COMPETITIONS_STREAM, subject, after=after):
            yield msg.seq, competitions_pb2.CompetitionEvent.FromString(msg.data)


class MatchTables:
    def __init__(self, nats: NatsConnection) -> None:
        self.nats = nats

    async def create(self, formed: events_pb2.Event) -> None:
        await publish_once(
            self.nats.jetstream,
            subjects.match_formed(),
            formed.SerializeToString(),
            msg_id=formed.match_formed.table_id,
        )

    async def _last_result(self, table_id: str) -> events_pb2.Event | None:
        try:
            msg = await self.nats.jetstream.get_last_msg(names.TABLE_RESULTS_STREAM, subjects.table_results(table_id))
        except nats.js.errors.NotFoundError:
            return None
        return events_pb2.Event.FromString(msg.data or b"")

    async def game_ended(self, table_id: str) -> events_pb2.GameEnded | None:
        event = await self._last_result(table_id)
        return event.game_ended if event is not None and event.HasField("game_ended") else None

    async def exists(self, table_id: str) -> bool:
        return await self._last_result(table_id) is not None

    async def no_shows(self, table_id: str) -> list[str]:
        found = stored_messages(self.nats, names.TABLE_RESULTS_STREAM, subjects.table_results(table_id))
        return no_shows([events_pb2.Event.FromString(msg.data) async for msg in found])


class FolderDigests:
    def __init__(self, folder: Path) -> None:
        self.folder = folder

    async def publish(self, competition_id: str, document: dict[str, Any]) -> None:
        await asyncio.to_thread(self._write, competition_id, json.dumps(document, indent=1, sort_keys=True))

    async def stored_digest(self, competition_id: str) -> str | None:
        return await asyncio.to_thread(self._digest, competition_id)

    def _digest(self, competition_id: str) -> str | None:
        try:
            digest = json.loads((self.folder / f"{competition_id}.json").read_text(encoding="utf-8")).get("digest")
        except (OSError, ValueError, AttributeError):
            return None
        return digest if isinstance(digest, str) else None

    def _write(self, competition_id: str, text: str) -> None:
        self.folder.mkdir(parents=True, exist_ok=True)
        target = self.folder / f"{competition_id}.json"
        partial = target.with_suffix(f".json.{secrets.token_hex(4)}.part")  # two owners at a handover: each its own
        partial.write_text(text, encoding="utf-8")
        os.replace(partial, target)


class ScoringLedger:
    """`ports.Ledger` over scoring's escrow RPCs (docs/adr/0030), in the competitions service's
    own name (its signing key); an entry fee also carries the token of the player whose request
    is being served, as scoring takes a fee only on the player's own request."""

    def __init__(self, target: str, signer: ServiceSigner, timeout_s: float = 3.0, *, ca_file: str = "") -> None:
        self.target, self.ca_file = target, ca_file
        self.signer = signer
        self.timeout_s = timeout_s
        self.channel: grpc.aio.Channel | None = None

    def _stub(self) -> scoring_pb2_grpc.ScoringServiceAsyncStub:
        """Opened on first use, in the serving event loop (a channel is bound to its loop)."""
        if self.channel is None:
            self.channel = tls.aio_channel(self.target, self.ca_file)
        return scoring_pb2_grpc.ScoringServiceStub(self.channel)

    async def post(self, competition_id: str, entry: LedgerEntry) -> None:
        metadata: tuple[tuple[str, str], ...] = ((IDENTITY_METADATA, self.signer.token()),)
        if entry.kind == HOLD:
            metadata += ((PLAYER_METADATA, PLAYER_TOKEN.get()),)
        request = scoring_pb2.PostCompetitionEntryRequest(
            competition_id=competition_id,
            entry=scoring_pb2.CompetitionEntry(
                key=entry.key, kind=_KINDS[entry.kind], player_id=entry.player, coins=entry.coins
            ),
        )
        try:
            await self._stub().PostCompetitionEntry(request, timeout=self.timeout_s, metadata=metadata)
        except grpc.aio.AioRpcError as err:
            if err.code() == grpc.StatusCode.FAILED_PRECONDITION:
                raise IllegalMove(err.details() or "the ledger refused the entry") from None
            raise Unavailable("the ledger is unavailable; retry") from None

    async def fees(self, competition_id: str) -> list[LedgerEntry]:
        request = scoring_pb2.GetCompetitionAccountRequest(competition_id=competition_id)
        metadata = ((IDENTITY_METADATA, self.signer.token()),)
        try:
            account = await self._stub().GetCompetitionAccount(request, timeout=self.timeout_s, metadata=metadata)
        except grpc.aio.AioRpcError:
            raise Unavailable("the ledger is unavailable; retry") from None
        return [
            LedgerEntry(e.key, HOLD, e.player_id, e.coins)
            for e in account.entries
            if e.kind == scoring_pb2.COMPETITION_ENTRY_KIND_FEE
        ]

    async def close(self) -> None:
        if self.channel is not None:
            await self.channel.close()
            self.channel = None


class NatsNotices:
    """`Notices`: core NATS publishes (buffered by the client), one subject per player."""

    def __init__(self, nats: NatsConnection) -> None:
        self.nats = nats

    async def publish(self, notices: list[competitions_pb2.CompetitionNotice]) -> None:
        try:
            for notice in notices:
                await self.nats.client.publish(
                    subjects.competition_notices(notice.player_id), notice.SerializeToString()
                )
        except Exception as exc:  # noqa: BLE001 - best effort: the competition is read again
            log.warning("competition notices not published", error=type(exc).__name__)
