"""Issue 42, finding 7 (fault-nats: standings that differ from the replayed totals): scoring
catches up with its journal (after an append another writer got in before, or an ambiguous one)
by reading it on an ephemeral consumer without acks. An entry lost on its way (a NATS node
killed, a reconnect) is never delivered again on that read: applying the entries after it
would leave the projection without it for good (a DealScored or GameEnded missing, the
standings wrong until a restart). The journal's sequences have no holes (one subject, kept
forever): a catch-up applies the entries up to the first hole and reads the rest again.
Real nats-server and journal; the lost delivery is the first entry of one read dropped."""

from __future__ import annotations

import asyncio
import time

from scoring_support import PLAYERS, EventPublisher, InProcessScoring, consuming

from trix.scoring.adapters import JetStreamJournal
from trix.scoring.service import ScoringService
from trix.v1 import common_pb2


class LossyJournal(JetStreamJournal):
    """The real journal whose next read loses its first entry in transit (once)."""

    lose_next = False

    async def read_from(self, sequence: int) -> list[tuple[int, bytes]]:
        entries = await super().read_from(sequence)
        if self.lose_next and entries:
            self.lose_next = False
            return entries[1:]
        return entries


async def test_a_journal_entry_lost_in_a_catch_up_read_is_read_again_not_skipped(
    scoring: InProcessScoring, publisher: EventPublisher
) -> None:
    await consuming(scoring, publisher, "catch-up")
    journal = LossyJournal(publisher.js)
    other = ScoringService(scoring.config, journal)  # a second writer of the same journal
    await other.load()
    assert other.state.snapshot() == scoring.service.state.snapshot()

    # The consuming scoring appends two entries this one has not read: a deal of the table,
    # then another table.
    await publisher.deal_scored("catch-up", 0, common_pb2.CONTRACT_KING, [200, 150, 100, 50], [200, 150, 100, 50])
    await publisher.table_created("catch-up-later", PLAYERS)
    await _until_sequence(scoring, other.state.sequence + 2)

    # This one appends too: its expected last sequence is behind (a conflict), it catches up,
    # and the read loses the deal's entry on the way.
    journal.lose_next = True
    assert await other.apply_table_event("catch-up-own", 1, 1_700_000_000_000, _created())
    assert other.state.tables["catch-up"].totals == [200, 150, 100, 50]
    assert [d.deal_index for d in other.state.tables["catch-up"].deals] == [0]
    rebuilt = ScoringService(scoring.config, JetStreamJournal(publisher.js))
    await rebuilt.load()
    assert other.state.snapshot() == rebuilt.state.snapshot()


def _created() -> dict[str, object]:
    return {
        "type": "table_created",
        "variant": "TRIX",
        "players": PLAYERS,
        "bots": [False] * 4,
        "names": [""] * 4,
        "stake": 0,
        "rake_percent": 0,
        "ticket_ids": [],
        "commitment": "",
        "private_table": False,
    }


async def _until_sequence(scoring: InProcessScoring, sequence: int, timeout_s: float = 30.0) -> None:
    """Wait until the consuming scoring's projection is at journal `sequence` at least."""
    deadline = time.monotonic() + timeout_s
    while scoring.service.state.sequence < sequence:
        assert time.monotonic() < deadline, f"journal sequence {sequence} not reached in {timeout_s:.0f}s"
        await asyncio.sleep(0.05)
