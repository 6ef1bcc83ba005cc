"""The review period's complaints (issue 43, docs/adr/0026): an entrant's complaint against one
of the competition's tables, an operator's answer, and the prizes held until both the review
period has ended and every complaint is answered.

Rules: only an entrant accepted at the start may complain, only during the review period
(after the final, before `review_ends_at_ms`), against a table of the competition, in 1 to
`MAX_TEXT` characters, at most `MAX_PER_ENTRANT` times per competition. An operator answers
each complaint once (1 to `MAX_TEXT` characters). Both are stored events (`ComplaintFiled`,
`ComplaintAnswered`), folded here by every replica. Pure: the time is passed in.

Kept with the competition: every complaint and its answer is in the competition file
(`as_file`, in the order filed) and so covered by its digest (`trix.competitions.digest`);
`check_file` is `trix verify-competition`'s look at them.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, Final

from trix.competitions.options import CompetitionError
from trix.competitions.registration import ACCEPTED
from trix.competitions.state import Competition
from trix.v1 import competitions_pb2 as pb

MAX_TEXT: Final = 1000
MAX_PER_ENTRANT: Final = 5


class ComplaintRefused(CompetitionError):
    """Not possible in the competition's state (the service answers FAILED_PRECONDITION)."""


class NotAnEntrant(CompetitionError):
    """The caller is not an entrant of the competition (PERMISSION_DENIED)."""


def _text(text: str, what: str) -> str:
    text = text.strip()
    if not 1 <= len(text) <= MAX_TEXT:
        raise CompetitionError(f"{what}: 1 to {MAX_TEXT} characters", what)
    return text


def as_file(complaint: pb.Complaint) -> dict[str, Any]:
    """A complaint as the competition file keeps it (`answer` and `operator` null until answered)."""
    return {
        "id": complaint.complaint_id,
        "player": complaint.player_id,
        "table": complaint.table_id,
        "text": complaint.text,
        "answer": complaint.answer or None,
        "operator": complaint.operator_id or None,
    }


def check_file(competition_id: str, complaints: Any, players: Iterable[str], tables: Iterable[str]) -> str:
    """Why the file's complaints are not ones the service could have kept ("" when they are):
    numbered `<competition>-k1`, `-k2`... in the order filed, each by an entrant at the start
    against a listed table, a text of 1 to MAX_TEXT characters, an answer with its operator or
    neither, at most MAX_PER_ENTRANT per entrant."""
    if not isinstance(complaints, list):
        return "not a list"
    entrants, listed = set(players), set(tables)
    filed: dict[str, int] = {}
    for n, c in enumerate(complaints, start=1):
        if not isinstance(c, dict) or c.get("id") != f"{competition_id}-k{n}":
            return f"complaint {n} is not {competition_id}-k{n}"
        player, text, answer, operator = c.get("player"), c.get("text"), c.get("answer"), c.get("operator")
        if player not in entrants or c.get("table") not in listed:
            return f"{c['id']} is not an entrant's against a table of the competition"
        if not isinstance(text, str) or not 1 <= len(text) <= MAX_TEXT:
            return f"{c['id']}'s text is not 1 to {MAX_TEXT} characters"
        if (answer is None) != (operator is None) or not (
            answer is None or (isinstance(answer, str) and 1 <= len(answer) <= MAX_TEXT and isinstance(operator, str))
        ):
            return f"{c['id']}'s answer and operator are not both given or both null"
        filed[str(player)] = filed.get(str(player), 0) + 1
        if filed[str(player)] > MAX_PER_ENTRANT:
            return f"{player} filed more than {MAX_PER_ENTRANT} complaints"
    return ""


@dataclass
class Complaints:
    """Every competition's complaints, in the order filed: competition id -> complaint id -> it."""

    by_competition: dict[str, dict[str, pb.Complaint]] = field(default_factory=dict)

    def apply(self, event: pb.CompetitionEvent) -> None:
        body = event.WhichOneof("body")
        if body == "complaint_filed":
            complaint = event.complaint_filed.complaint
        elif body == "complaint_answered":
            complaint = event.complaint_answered.complaint
        else:
            return
        kept = pb.Complaint()
        kept.CopyFrom(complaint)
        self.by_competition.setdefault(event.competition_id, {})[complaint.complaint_id] = kept

    def of(self, competition_id: str) -> list[pb.Complaint]:
        return list(self.by_competition.get(competition_id, {}).values())

    def in_file(self, competition_id: str) -> list[dict[str, Any]]:
        """The competition's complaints as its file keeps them, in the order filed."""
        return [as_file(c) for c in self.of(competition_id)]

    def unanswered(self, competition_id: str) -> int:
        """Complaints still waiting for an answer: while any does, the prizes are held."""
        return sum(1 for c in self.of(competition_id) if not c.operator_id)

    def file(self, comp: Competition, player: str, table_id: str, text: str, now_ms: int) -> pb.Complaint:
        """The complaint to store (ComplaintRefused or CompetitionError otherwise)."""
        if comp.registration.states.get(player) != ACCEPTED:
            raise NotAnEntrant("only an entrant of the competition may complain", "player_id")
        if comp.finished is None or comp.settled or now_ms >= comp.finished.review_ends_at_ms:
            raise ComplaintRefused("complaints are filed during the review period only", "competition_id")
        if table_id not in {t.table_id for t in comp.tables()}:
            raise CompetitionError("no such table in this competition", "table_id")
        mine = [c for c in self.of(comp.competition_id) if c.player_id == player]
        if len(mine) >= MAX_PER_ENTRANT:
            raise ComplaintRefused(f"at most {MAX_PER_ENTRANT} complaints per entrant", "player_id")
        complaint_id = f"{comp.competition_id}-k{len(self.of(comp.competition_id)) + 1}"
        return pb.Complaint(complaint_id=complaint_id, player_id=player, table_id=table_id, text=_text(text, "text"))

    def answer(self, competition_id: str, complaint_id: str, operator: str, answer: str) -> pb.Complaint:
        """The complaint with its answer, to store."""
        complaint = self.by_competition.get(competition_id, {}).get(complaint_id)
        if complaint is None:
            raise CompetitionError("no such complaint in this competition", "complaint_id")
        if complaint.operator_id:
            raise ComplaintRefused("this complaint has been answered", "complaint_id")
        answered = pb.Complaint()
        answered.CopyFrom(complaint)
        answered.answer, answered.operator_id = _text(answer, "answer"), operator
        return answered
