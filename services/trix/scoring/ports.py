"""The scoring's port: the journal `ScoringService` is given, as a Protocol, and its errors.

Owns `Journal` (the durable, ordered log the projection is rebuilt from: the
SCORING_JOURNAL stream in production, `adapters.JetStreamJournal`), `JournalConflict`
and `JournalDuplicate`.
"""

from __future__ import annotations

from typing import Protocol


class JournalConflict(Exception):
    """The journal moved past the expected last sequence: catch up and decide again."""


class JournalDuplicate(Exception):
    """The entry id is already in the journal (a retried append)."""


class Journal(Protocol):
    """The durable, ordered log the projection is rebuilt from (a JetStream stream in production)."""

    async def append(self, entry_id: str, payload: bytes, expected_last_sequence: int) -> int:
        """Store `payload` once under `entry_id` if the last sequence is as expected; its sequence."""
        ...

    async def read_from(self, sequence: int) -> list[tuple[int, bytes]]:
        """Every entry from `sequence` on, in order, as (sequence, payload)."""
        ...
