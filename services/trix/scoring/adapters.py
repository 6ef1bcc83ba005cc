"""The scoring's outbound NATS adapters.

Owns `JetStreamJournal`, the `ports.Journal` on the `SCORING_JOURNAL` stream: an entry
appended with its id as `Nats-Msg-Id` (a retried append is stored once) and the
projection's last sequence as `Nats-Expected-Last-Sequence` (a writer that missed an entry
is refused), and the stream read back in order to rebuild the projection; it knows nothing
of what entries mean. And `ArchiveNotices`: RecordArchived on `trix.scoring.archived.<table>`
once a game's record is in the journal, so the table service purges that table's private
log (ADR 0003).
"""

from __future__ import annotations

import nats.js.errors
from nats.js.client import JetStreamContext

from trix.natsio import names, subjects
from trix.natsio.consumer import read_range
from trix.natsio.publish import publish_once
from trix.scoring.ports import JournalConflict, JournalDuplicate
from trix.v1 import events_pb2

STREAM = names.SCORING_JOURNAL_STREAM
EXPECTED_LAST_SEQUENCE_HEADER = "Nats-Expected-Last-Sequence"
WRONG_LAST_SEQUENCE = 10071
READ_BATCH = 1000


class JetStreamJournal:
    """`ports.Journal` over the SCORING_JOURNAL stream."""

    def __init__(self, js: JetStreamContext, *, stream: str = STREAM, subject: str | None = None) -> None:
        self.js = js
        self.stream = stream
        self.subject = subject or subjects.scoring_journal()

    async def append(self, entry_id: str, payload: bytes, expected_last_sequence: int) -> int:
        try:
            ack = await publish_once(
                self.js,
                self.subject,
                payload,
                msg_id=entry_id,
                headers={EXPECTED_LAST_SEQUENCE_HEADER: str(expected_last_sequence)},
            )
        except nats.js.errors.APIError as err:
            if err.err_code == WRONG_LAST_SEQUENCE:
                raise JournalConflict(str(err.description)) from None
            raise
        if ack.duplicate:
            raise JournalDuplicate(entry_id)
        return int(ack.seq)

    async def read_from(self, sequence: int) -> list[tuple[int, bytes]]:
        return await read_range(self.js, self.subject, self.stream, sequence, batch=READ_BATCH, fetch_timeout_s=5.0)


class ArchiveNotices:
    """RecordArchived to the table service, stored once per (table, GameEnded sequence)."""

    def __init__(self, js: JetStreamContext) -> None:
        self.js = js

    async def record_archived(self, table_id: str, sequence: int) -> None:
        """The record is in the journal: tell the table service (ADR 0003)."""
        body = events_pb2.RecordArchived(table_id=table_id, game_ended_sequence=sequence)
        await publish_once(
            self.js,
            subjects.record_archived(table_id),
            body.SerializeToString(),
            msg_id=f"archived.{table_id}.{sequence}",
            deadline_s=10.0,
        )
