"""The scoring journal on JetStream: the adapter behind `service.Journal`.

Owns appending an entry to the `SCORING_JOURNAL` stream with its id as `Nats-Msg-Id`
(a retried append is stored once) and the projection's last sequence as
`Nats-Expected-Last-Sequence` (a writer that missed an entry is refused), and reading
the stream back in order to rebuild the projection. Knows nothing of what entries mean.
"""

from __future__ import annotations

import nats.js.errors
from nats.js.client import JetStreamContext

from trix.natsio import names, subjects
from trix.natsio.consumer import read_range
from trix.natsio.publish import publish_once
from trix.scoring.service import JournalConflict, JournalDuplicate

STREAM = names.SCORING_JOURNAL_STREAM
EXPECTED_LAST_SEQUENCE_HEADER = "Nats-Expected-Last-Sequence"
WRONG_LAST_SEQUENCE = 10071
READ_BATCH = 1000


class JetStreamJournal:
    """`service.Journal` over the SCORING_JOURNAL stream."""

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
