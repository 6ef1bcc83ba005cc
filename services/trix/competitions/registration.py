"""Registration (issue 43): who is in a competition before its start.

Owns: the entrants from creation to the start, in registration order: registering (refused
after registration closes, when full, twice, or with an id a bot's could be), the organiser's
approval when `admission` is "approval" (an entrant waits, his fee held, until accepted or
refused), leaving before the start (half the fee back), and what the start and the ledger need:
the humans accepted, who paid, who left, who was refused or still waiting (both get the full
fee back). Holding the fee at the ledger comes first and is the service's (a player without
the coins is refused before anything is held); this module only decides. Pure: the time is
passed in.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from trix.competitions.model import BOT_PREFIX, Entrant, is_bot
from trix.competitions.options import CompetitionError, CompetitionOptions
from trix.rules import PLAYER_ID_RULE, is_player_id

PENDING, ACCEPTED, REFUSED, LEFT = "pending", "accepted", "refused", "left"


@dataclass
class Registration:
    """The entrants of one competition before its start."""

    options: CompetitionOptions
    states: dict[str, str] = field(default_factory=dict)
    ratings: dict[str, float] = field(default_factory=dict)

    def register(self, player: str, rating: float, now_ms: int) -> str:
        """The new entrant's state (accepted, or pending with approval on)."""
        if not is_player_id(player) or is_bot(player):
            raise CompetitionError(f"a player id is {PLAYER_ID_RULE}, not starting with {BOT_PREFIX!r}", "player_id")
        if now_ms >= self.options.registration_closes_at_ms:
            raise CompetitionError("registration has closed", "competition_id")
        if player in self.states:
            raise CompetitionError("already registered for this competition", "player_id")
        if sum(state in (PENDING, ACCEPTED) for state in self.states.values()) >= self.options.capacity:
            raise CompetitionError(f"the competition is full ({self.options.capacity} entrants)", "competition_id")
        self.states[player] = PENDING if self.options.admission == "approval" else ACCEPTED
        self.ratings[player] = rating
        return self.states[player]

    def approve(self, player: str, accept: bool) -> str:
        """The organiser's decision on a waiting entrant."""
        if self.states.get(player) != PENDING:
            raise CompetitionError("no entrant of this competition waits for approval under this id", "player_id")
        self.states[player] = ACCEPTED if accept else REFUSED
        return self.states[player]

    def leave(self, player: str, now_ms: int) -> int:
        """A registered entrant leaves before the start: the coins that come back (half the fee)."""
        if now_ms >= self.options.starts_at_ms:
            raise CompetitionError("the competition has started: leaving now is leaving your table", "competition_id")
        if self.states.get(player) not in (PENDING, ACCEPTED):
            raise CompetitionError("not registered for this competition", "player_id")
        self.states[player] = LEFT
        return self.options.entry_fee // 2

    def at_start(self) -> list[Entrant]:
        """The accepted humans, in registration order, with their ratings."""
        return [Entrant(p, self.ratings[p]) for p, state in self.states.items() if state == ACCEPTED]

    def paid(self) -> list[str]:
        """Everyone whose fee was held, in registration order."""
        return list(self.states)

    def left_before_start(self) -> list[str]:
        return [p for p, state in self.states.items() if state == LEFT]

    def refunded_in_full(self) -> list[str]:
        """Refused by the organiser, or still waiting at the start: the full fee back."""
        return [p for p, state in self.states.items() if state in (PENDING, REFUSED)]
