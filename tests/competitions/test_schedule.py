"""The schedule of system competitions (issue 43, docs/adr/0026): the recurrence syntax, the next
slot, which slots are due, the fixed request and competition id of a slot, and the file's
checks (each bad field named)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from support.table import table_env
from trix.competitions.config import DEV_SCHEDULE, SCHEDULE_ENV, CompetitionsConfig, schedule_env
from trix.competitions.options import CompetitionError
from trix.competitions.schedule import (
    DAY_MS,
    MAX_OPEN_SLOTS,
    SCHEMA,
    SYSTEM_ORGANISER,
    Recurrence,
    competition_id_of,
    parse_duration,
    parse_recurrence,
    parse_schedule,
)
from trix.runtime.config import ConfigError
from trix.v1 import competitions_pb2 as pb

MINUTE = 60_000
OPTIONS = {
    "variant": "VARIANT_COMPLEX",
    "format": "COMPETITION_FORMAT_KNOCKOUT",
    "rounds": 2,
    "capacity": 16,
    "botFill": True,
    "speed": "COMPETITION_SPEED_FAST",
}


def _template(**fields: object) -> dict[str, object]:
    return {"name": "free-16", "every": "every 10m", "ahead": "20m", "close_before": "1m", "options": OPTIONS} | fields


def _schedule(*templates: dict[str, object]) -> dict[str, object]:
    return {"schema": SCHEMA, "templates": list(templates)}


def test_the_recurrence_syntax_every_minutes_hours_and_daily_at_utc() -> None:
    assert parse_recurrence("every 10m") == Recurrence(10 * MINUTE)
    assert parse_recurrence("every 2h") == Recurrence(120 * MINUTE)
    assert parse_recurrence("daily 18:30") == Recurrence(DAY_MS, (18 * 60 + 30) * MINUTE)
    for bad in ("every 0m", "every 10", "hourly", "daily 24:00", "daily 7:5", "every 10d", ""):
        with pytest.raises(CompetitionError) as err:
            parse_recurrence(bad)
        assert err.value.option == "every"
    assert parse_duration("90s", "ahead") == 90_000
    with pytest.raises(CompetitionError):
        parse_duration("1d", "ahead")


def test_a_daily_slot_starts_at_its_hour_utc() -> None:
    daily = parse_recurrence("daily 18:30")
    day = 20_000 * DAY_MS
    assert daily.next_start(day) == day + (18 * 60 + 30) * MINUTE
    assert daily.next_start(day + (18 * 60 + 30) * MINUTE) == day + DAY_MS + (18 * 60 + 30) * MINUTE


@given(
    period_min=st.integers(1, 3 * 24 * 60),
    offset_min=st.integers(0, 24 * 60),
    now=st.integers(0, 2**42),
)
def test_the_next_slot_is_the_first_start_after_now_on_the_recurrence(
    period_min: int, offset_min: int, now: int
) -> None:
    r = Recurrence(period_min * MINUTE, offset_min * MINUTE)
    start = r.next_start(now)
    assert now < start <= now + r.period_ms
    assert (start - r.offset_ms) % r.period_ms == 0
    assert r.starts(now, start) == [start] and r.starts(now, start - 1) == []


@given(now=st.integers(0, 2**42), later=st.integers(0, 3 * 3600 * 1000))
def test_every_due_slot_has_registration_open_and_the_same_id_whenever_it_is_computed(now: int, later: int) -> None:
    (template,) = parse_schedule(_schedule(_template()))
    first = {s.request_id: s for s in template.due(now)}
    again = {s.request_id: s for s in template.due(now + later)}
    for slot in first.values():
        assert now < slot.options.registration_closes_at_ms < slot.starts_at_ms <= now + 20 * MINUTE
        assert slot.starts_at_ms % (10 * MINUTE) == 0
    for request_id in first.keys() & again.keys():  # a slot due twice is the same competition
        assert first[request_id].options == again[request_id].options
    ids = [competition_id_of(SYSTEM_ORGANISER, r) for r in first]
    assert len(set(ids)) == len(ids) and 1 <= len(ids) <= 2


def test_a_slots_competition_id_is_fixed_by_its_template_and_start() -> None:
    (a, b) = parse_schedule(_schedule(_template(), _template(name="free-16-b")))
    now = 1_000 * DAY_MS + 30_000
    slot = a.due(now)[0]
    assert slot.request_id == f"schedule.free-16.{slot.starts_at_ms}"
    assert competition_id_of(SYSTEM_ORGANISER, slot.request_id) == competition_id_of(
        SYSTEM_ORGANISER, a.due(now)[0].request_id
    )
    assert competition_id_of(SYSTEM_ORGANISER, slot.request_id) != competition_id_of(
        SYSTEM_ORGANISER, b.due(now)[0].request_id
    )
    assert slot.options.capacity == 16 and slot.options.format == pb.COMPETITION_FORMAT_KNOCKOUT


@pytest.mark.parametrize(
    ("document", "field"),
    [
        ({"templates": []}, "schema"),
        (_schedule(_template(name="Bad Name")), "name"),
        (_schedule(_template(), _template()), "name"),
        (_schedule(_template(every="weekly")), "every"),
        (_schedule(_template(ahead="1m", close_before="1m")), "ahead"),
        (_schedule(_template(every="every 1m", ahead=f"{MAX_OPEN_SLOTS + 1}m")), "ahead"),
        (_schedule(_template(options=OPTIONS | {"startsAtMs": "1"})), "options"),
        (_schedule(_template(options={"rounds": "two"})), "options"),
        (_schedule(_template(colour="red")), "colour"),
    ],
)
def test_a_bad_schedule_names_its_bad_field(document: dict[str, object], field: str) -> None:
    with pytest.raises(CompetitionError) as err:
        parse_schedule(document)
    assert err.value.option == field


def test_the_service_config_refuses_a_template_whose_options_a_competition_refuses(tmp_path: Path) -> None:
    path = tmp_path / "schedule.json"
    path.write_text(json.dumps(_schedule(_template(options=OPTIONS | {"rounds": 7}))))
    with pytest.raises(ConfigError, match=f"{SCHEDULE_ENV}: rounds must be 1 to 4"):
        CompetitionsConfig.from_env(_env({SCHEDULE_ENV: str(path)}))


def test_the_dev_schedule_loads_and_always_has_a_slot_open_for_registration() -> None:
    config = CompetitionsConfig.from_env(_env({SCHEDULE_ENV: str(DEV_SCHEDULE)}))
    assert [t.name for t in config.schedule] == ["free-16-knockout"]
    (template,) = config.schedule
    assert template.every == Recurrence(10 * MINUTE)
    for now_ms in range(0, 20 * MINUTE, 7_000):  # whenever `trix up` starts, one is there to enter
        assert 1 <= len(template.due(now_ms)) <= 2


def test_trix_up_and_trix_play_load_the_dev_schedule_unless_told_otherwise(tmp_path: Path) -> None:
    assert schedule_env({}) == {SCHEDULE_ENV: str(DEV_SCHEDULE)}
    assert schedule_env({SCHEDULE_ENV: ""}) == {SCHEDULE_ENV: ""}  # the operator's: none
    mine = tmp_path / "mine.json"
    assert schedule_env({SCHEDULE_ENV: str(mine)}) == {SCHEDULE_ENV: str(mine)}
    assert schedule_env({SCHEDULE_ENV: str(mine)}, "") == {SCHEDULE_ENV: ""}  # --competitions-schedule ''
    assert schedule_env({}, str(mine)) == {SCHEDULE_ENV: str(mine)}


def _env(extra: dict[str, str]) -> dict[str, str]:
    return table_env("nats://127.0.0.1:4222", "competitions", **extra)
