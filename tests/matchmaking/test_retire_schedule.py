"""Retention's schedule (issue 16): a matchmaking round takes the finished records that are
due off a heap, earliest first, at most ROUND_CHORES, instead of scanning every record kept
for its retention (a matched ticket is kept two hours: thousands of records, twenty rounds a
second). A record whose purge did not remove it is taken again next round; one given a later
due time (a failed stake release is retried later) waits for it. Pure: no store is called."""

from __future__ import annotations

import random
from typing import Any, cast

from mm_support import config

from trix.matchmaking.retention import ROUND_CHORES
from trix.matchmaking.service import MatchmakingService

PARTITION = 3


def _keys(chores: list[Any]) -> list[str]:
    return [chore.args[1] for chore in chores]


def _service() -> MatchmakingService:
    return MatchmakingService(config("none"), cast(Any, None), cast(Any, None), clock=lambda: 0.0)


def _keep(service: MatchmakingService, key: str, due: float) -> None:
    service.retention.retire_at(PARTITION, key, (due, 1, "", "", False))


def test_a_round_takes_only_the_due_records_earliest_first_and_again_until_purged() -> None:
    service = _service()
    dues = list(range(1, 2001))
    random.Random(16).shuffle(dues)
    for due in dues:
        _keep(service, f"tk.{due:05d}", float(due))
    assert _keys(service.retention.chores(PARTITION, 0.5)) == []
    first = _keys(service.retention.chores(PARTITION, 10.0))
    assert first == [f"tk.{d:05d}" for d in range(1, 11)]
    # nothing purged them (their purge failed): the same ten next round, no more, no fewer
    assert _keys(service.retention.chores(PARTITION, 10.0)) == first
    for key in first[:5]:  # purged, as `Retention.retire` removes a record once its keys are gone
        del service.retiring[PARTITION][key]
    assert _keys(service.retention.chores(PARTITION, 10.0)) == first[5:]
    # another partition's records are its own
    assert _keys(service.retention.chores(PARTITION + 1, 10.0)) == []


def test_a_record_given_a_later_due_time_waits_for_it() -> None:
    service = _service()
    _keep(service, "tk.a", 5.0)
    _keep(service, "tk.b", 6.0)
    _keep(service, "tk.a", 40.0)  # its stake release failed: tried again 30 s later
    assert _keys(service.retention.chores(PARTITION, 10.0)) == ["tk.b"]
    assert _keys(service.retention.chores(PARTITION, 40.0)) == ["tk.b", "tk.a"]


def test_a_round_purges_at_most_round_chores_records() -> None:
    service = _service()
    for i in range(ROUND_CHORES * 2 + 7):
        _keep(service, f"tk.{i:05d}", 1.0)
    taken = _keys(service.retention.chores(PARTITION, 2.0))
    assert len(taken) == ROUND_CHORES == len(set(taken))
    for key in taken:
        del service.retiring[PARTITION][key]
    second = _keys(service.retention.chores(PARTITION, 2.0))
    assert len(second) == ROUND_CHORES and not set(second) & set(taken)
    for key in second:
        del service.retiring[PARTITION][key]
    assert len(service.retention.chores(PARTITION, 2.0)) == 7
    service.release_partition(PARTITION)
    assert service.retention.chores(PARTITION, 2.0) == []
