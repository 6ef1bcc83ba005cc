"""What the competitions service tells its entrants as their competition moves (docs/adr/0029).

Owns `notices_of`, the notices one stored event makes (pure: the same competition and event,
the same notices; `adapters.NatsNotices` publishes them on core NATS, one subject per player,
`trix.competitions.notice.<player>`, for the gateways to pass to that player's streams):

- a round's tables were created: each human seated there gets `seated` (the table and his
  seat): his next table "opens by itself";
- the competition started, was cancelled, a table ended, the final ended, the payouts were
  settled: every human entrant gets `changed` (its state, round, the table, the digest).

Best effort, never in the way: a notice is published after its event is stored and applied,
without waiting for anyone (a player who was not listening reads the same from the
competition). Nothing of this runs per table action.
"""

from __future__ import annotations

from trix.competitions.model import BOT_PREFIX
from trix.competitions.state import Competition
from trix.v1 import competitions_pb2 as pb

CHANGES = frozenset({"cancelled", "round_started", "table_ended", "finished", "payouts_settled"})
"""The events that change a competition's state, bracket or standings."""


def notices_of(
    comp: Competition, event: pb.CompetitionEvent, now_ms: int, digest: str = ""
) -> list[pb.CompetitionNotice]:
    """The notices `event`, just applied to `comp`, makes: `seated` for each human of a new
    round's tables, then `changed` for every human entrant (with `digest`, its file's as it
    stands: the final's, or with the review period's complaints; default the final's)."""
    body = event.WhichOneof("body")
    if body not in CHANGES:
        return []
    cid = comp.competition_id
    out: list[pb.CompetitionNotice] = []
    if body == "round_started":
        for table in event.round_started.tables:
            for seat, player in enumerate(table.players):
                if not player.startswith(BOT_PREFIX):
                    where = pb.CompetitionSeat(
                        competition_id=cid, round=table.round, table_id=table.table_id, seat=seat
                    )
                    out.append(pb.CompetitionNotice(player_id=player, seated=where))
    changed = pb.CompetitionChanged(
        competition_id=cid,
        state=comp.state(now_ms),
        round=comp.run.current_round if comp.run is not None else 0,
        table_id=event.table_ended.table.table_id if body == "table_ended" else "",
        digest=digest or (comp.finished.digest if comp.finished is not None else ""),
    )
    for player in comp.registration.states:
        out.append(pb.CompetitionNotice(player_id=player, changed=changed))
    return out
