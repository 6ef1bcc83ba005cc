"""Scheduled competitions (issue 43, docs/adr/0026): the system's own competitions, created ahead
of their start from a declared schedule, as Nakama's tournaments take a reset schedule.

A schedule is a JSON file (`TRIX_COMPETITIONS_SCHEDULE` names it; `dev_schedule.json` beside
this module is the dev setup's, which `trix up` loads by default) of templates:

    {"schema": "trix-competition-schedule/1", "templates": [
      {"name": "free-16", "every": "every 10m", "ahead": "10m", "close_before": "1m",
       "options": {"variant": "VARIANT_COMPLEX", "format": "COMPETITION_FORMAT_KNOCKOUT", ...}}]}

- `name`: 1 to 32 of a-z, 0-9 and `-`, unique in the file;
- `every`: the recurrence, UTC, anchored at the Unix epoch: `every <N>m` (the slots start at
  every multiple of N minutes since the epoch), `every <N>h` (of N hours), `daily HH:MM`;
- `ahead`: how long before its start a slot's competition is created (registration opens);
  at most `MAX_OPEN_SLOTS` slots of one template are open at once;
- `close_before`: registration closes this long before the start (shorter than `ahead`);
- `options`: `CompetitionOptions` in protobuf's JSON form, without the two times (the slot
  sets them); checked at load like any organiser's (`validate_options`).

Durations are `<N>s`, `<N>m` or `<N>h`. A slot's competition is created once: its request id
is `schedule.<name>.<start ms>`, so its competition id is fixed by the template and the slot
(`service.competition_id_of`), and the event log's fence refuses a second creation, by a
restarted process or another replica. Pure: the time is passed in.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from google.protobuf import json_format

from trix.competitions.options import MAX_START_AHEAD_MS, CompetitionError
from trix.v1 import competitions_pb2 as pb

SYSTEM_ORGANISER: Final = "system"
"""The organiser of the competitions an operator's tool (or the schedule) creates."""
SCHEMA: Final = "trix-competition-schedule/1"
MAX_OPEN_SLOTS: Final = 24
"""A template's slots open at once (`ahead` / the period) at most."""
MAX_TEMPLATES: Final = 64
DAY_MS: Final = 24 * 3600 * 1000
_UNITS_MS: Final = {"s": 1000, "m": 60_000, "h": 3_600_000}
_NAME = re.compile(r"[a-z0-9-]{1,32}")
_EVERY = re.compile(r"every ([1-9][0-9]{0,4})([mh])")
_DAILY = re.compile(r"daily ([01][0-9]|2[0-3]):([0-5][0-9])")
_DURATION = re.compile(r"([0-9]{1,6})([smh])")


def competition_id_of(organiser: str, request_id: str) -> str:
    """The competition a create request makes: the same organiser and request id, the same id."""
    return f"c{hashlib.sha256(f'{organiser}|{request_id}'.encode()).hexdigest()[:15]}"


@dataclass(frozen=True)
class Recurrence:
    """Slots start at `offset_ms + k * period_ms` milliseconds since the epoch, for every integer k."""

    period_ms: int
    offset_ms: int = 0

    def next_start(self, after_ms: int) -> int:
        """The first slot starting strictly after `after_ms`."""
        k = (after_ms - self.offset_ms) // self.period_ms + 1
        return self.offset_ms + k * self.period_ms

    def starts(self, after_ms: int, until_ms: int) -> list[int]:
        """Every slot start in (after_ms, until_ms], in order."""
        out, start = [], self.next_start(after_ms)
        while start <= until_ms:
            out.append(start)
            start += self.period_ms
        return out


def parse_recurrence(text: str) -> Recurrence:
    """`every <N>m`, `every <N>h` or `daily HH:MM` (UTC); CompetitionError otherwise."""
    every = _EVERY.fullmatch(text.strip())
    if every:
        return Recurrence(int(every.group(1)) * _UNITS_MS[every.group(2)])
    daily = _DAILY.fullmatch(text.strip())
    if daily:
        return Recurrence(DAY_MS, int(daily.group(1)) * _UNITS_MS["h"] + int(daily.group(2)) * _UNITS_MS["m"])
    raise CompetitionError(f"every: 'every <N>m', 'every <N>h' or 'daily HH:MM' (got {text!r})", "every")


def parse_duration(text: str, name: str) -> int:
    """`<N>s`, `<N>m` or `<N>h` in milliseconds."""
    match = _DURATION.fullmatch(text.strip()) if isinstance(text, str) else None
    if match is None:
        raise CompetitionError(f"{name}: a duration like 30s, 10m or 2h (got {text!r})", name)
    return int(match.group(1)) * _UNITS_MS[match.group(2)]


@dataclass(frozen=True)
class Slot:
    """One scheduled competition: its template, start, and the request that creates it."""

    template: str
    starts_at_ms: int
    options: pb.CompetitionOptions

    @property
    def request_id(self) -> str:
        return f"schedule.{self.template}.{self.starts_at_ms}"


@dataclass(frozen=True)
class Template:
    name: str
    every: Recurrence
    ahead_ms: int
    close_before_ms: int
    options: bytes
    """`CompetitionOptions` serialized (a message is mutable; each slot gets its own copy)."""

    def slot(self, starts_at_ms: int) -> Slot:
        options = pb.CompetitionOptions.FromString(self.options)
        options.starts_at_ms = starts_at_ms
        options.registration_closes_at_ms = starts_at_ms - self.close_before_ms
        return Slot(self.name, starts_at_ms, options)

    def due(self, now_ms: int) -> list[Slot]:
        """The slots to exist now: registration still open, the start at most `ahead` away."""
        return [self.slot(s) for s in self.every.starts(now_ms + self.close_before_ms, now_ms + self.ahead_ms)]


def due(templates: tuple[Template, ...], now_ms: int) -> list[Slot]:
    return [slot for template in templates for slot in template.due(now_ms)]


def _template(data: Any, seen: set[str]) -> Template:
    if not isinstance(data, dict):
        raise CompetitionError("a template is an object", "templates")
    unknown = sorted(set(data) - {"name", "every", "ahead", "close_before", "options"})
    if unknown:
        raise CompetitionError(f"unknown template field {unknown[0]!r}", unknown[0])
    name = data.get("name")
    if not isinstance(name, str) or not _NAME.fullmatch(name) or name in seen:
        raise CompetitionError(f"name: 1 to 32 of a-z, 0-9 and '-', unique (got {name!r})", "name")
    seen.add(name)
    every = parse_recurrence(str(data.get("every", "")))
    ahead = parse_duration(data.get("ahead", ""), "ahead")
    close_before = parse_duration(data.get("close_before", "0s"), "close_before")
    if not close_before < ahead <= MAX_START_AHEAD_MS:
        raise CompetitionError(f"{name}: close_before < ahead <= 30 days", "ahead")
    if ahead > MAX_OPEN_SLOTS * every.period_ms:
        raise CompetitionError(f"{name}: at most {MAX_OPEN_SLOTS} slots open at once (ahead / every)", "ahead")
    raw = data.get("options")
    if not isinstance(raw, dict) or {"startsAtMs", "registrationClosesAtMs"} & set(raw):
        raise CompetitionError(f"{name}: options is an object without the times (the slot sets them)", "options")
    try:
        options = json_format.ParseDict(raw, pb.CompetitionOptions())
    except json_format.ParseError as err:
        raise CompetitionError(f"{name}: options: {err}", "options") from None
    return Template(name, every, ahead, close_before, options.SerializeToString())


def parse_schedule(document: Any) -> tuple[Template, ...]:
    """The templates of a schedule document; CompetitionError naming the first bad field."""
    if not isinstance(document, dict) or document.get("schema") != SCHEMA:
        raise CompetitionError(f"a schedule is an object with schema {SCHEMA!r}", "schema")
    templates = document.get("templates")
    if not isinstance(templates, list) or len(templates) > MAX_TEMPLATES:
        raise CompetitionError(f"templates: a list of at most {MAX_TEMPLATES}", "templates")
    seen: set[str] = set()
    return tuple(_template(t, seen) for t in templates)


def load_schedule(path: Path) -> tuple[Template, ...]:
    try:
        document = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as err:
        raise CompetitionError(f"cannot read the schedule {path.name}: {err}", "schedule") from None
    return parse_schedule(document)
