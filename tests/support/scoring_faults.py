"""Fault injection for the scoring service (issue 8's wallet fault test): the scoring
process with injected exits, kept out of the production modules.

`python -m support.scoring_faults` (PYTHONPATH with `services` and `tests`) serves as
`python -m trix.scoring` does, and exits with `CRASH_EXIT_CODE` the n-th time an entry of
a kind reaches a point named by `TRIX_SCORING_CRASH_AT=point:kind:n`:

- points: `before_append` (decided, not in the journal), `after_append` (in the journal,
  not in the projection), `after_apply` (in both, nothing answered or acked yet);
- kinds: `settle` (entries that settle or refund a table), `wallet` (any entry with
  postings), `any`.

The points are reached through the service's own ports: the journal it is given (before
and after an append) and the projection's `apply` of the entry just appended.
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from typing import Any

from trix.runtime.config import ConfigError
from trix.runtime.server import Runtime, run_main
from trix.scoring.__main__ import build
from trix.scoring.bootstrap import NewScoring
from trix.scoring.config import SERVICE, ScoringConfig
from trix.scoring.ports import Journal
from trix.scoring.service import ScoringService, decode_entry
from trix.scoring.state import ScoringState

CRASH_AT_ENV = "TRIX_SCORING_CRASH_AT"
CRASH_EXIT_CODE = 75
"""Exit code of an injected crash, so a test tells it from a bug."""
CRASH_POINTS = ("before_append", "after_append", "after_apply")
CRASH_KINDS = ("settle", "wallet", "any")


@dataclass(frozen=True)
class CrashPlan:
    """Exit the process the n-th time an entry of `kind` reaches `point` (module docstring)."""

    point: str
    kind: str
    nth: int

    @classmethod
    def parse(cls, text: str) -> CrashPlan | None:
        if not text:
            return None
        parts = text.split(":")
        if (
            len(parts) != 3
            or parts[0] not in CRASH_POINTS
            or parts[1] not in CRASH_KINDS
            or not parts[2].isdigit()
            or int(parts[2]) < 1
        ):
            raise ConfigError(f"{CRASH_AT_ENV}: not point:kind:n: {text!r}")
        return cls(parts[0], parts[1], int(parts[2]))


class Crasher:
    """Counts crash points reached and exits when the plan says so."""

    def __init__(self, plan: CrashPlan | None) -> None:
        self.plan = plan
        self.reached = 0

    def at(self, point: str, entry: dict[str, Any]) -> None:
        plan = self.plan
        if plan is None or plan.point != point:
            return
        if plan.kind == "settle" and not entry.get("settlement"):
            return
        if plan.kind == "wallet" and not entry.get("postings"):
            return
        self.reached += 1
        if self.reached == plan.nth:
            os._exit(CRASH_EXIT_CODE)


class CrashingJournal:
    """A `Journal` that passes its appends through the crash points around them."""

    def __init__(self, journal: Journal, crasher: Crasher) -> None:
        self.journal = journal
        self.crasher = crasher
        self.appended: tuple[int, dict[str, Any]] | None = None
        """The entry just appended and its sequence, until the projection applies it."""

    async def append(self, entry_id: str, payload: bytes, expected_last_sequence: int) -> int:
        entry = decode_entry(payload)
        self.crasher.at("before_append", entry)
        sequence = await self.journal.append(entry_id, payload, expected_last_sequence)
        self.crasher.at("after_append", entry)
        self.appended = (sequence, entry)
        return sequence

    async def read_from(self, sequence: int) -> list[tuple[int, bytes]]:
        return await self.journal.read_from(sequence)


class CrashingState(ScoringState):
    """The projection, reaching `after_apply` once it applied the entry just appended."""

    def __init__(self, journal: CrashingJournal) -> None:
        super().__init__()
        self._journal = journal

    def apply(self, sequence: int, entry: dict[str, Any]) -> None:
        super().apply(sequence, entry)
        appended = self._journal.appended
        if appended is not None and appended[0] == sequence:
            self._journal.appended = None
            self._journal.crasher.at("after_apply", entry)


def crashing_scoring(plan: CrashPlan | None) -> NewScoring:
    """Builds the scoring service on a journal and a projection that reach the plan's crash points."""
    crasher = Crasher(plan)

    def new_service(config: ScoringConfig, journal: Journal) -> ScoringService:
        crashing = CrashingJournal(journal, crasher)
        return ScoringService(config, crashing, state=CrashingState(crashing))

    return new_service


def build_crashing(config: ScoringConfig) -> Runtime:
    return build(config, crashing_scoring(CrashPlan.parse(os.environ.get(CRASH_AT_ENV, ""))))


def main() -> int:
    return run_main(SERVICE, ScoringConfig.from_env, build_crashing)


if __name__ == "__main__":
    sys.exit(main())
