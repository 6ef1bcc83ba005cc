"""Configuration of the competitions service, read once from the environment.

Owns `CompetitionsConfig`: the shared runtime settings (`trix.runtime.config.RuntimeConfig`)
plus its own. A bad value raises `ConfigError` naming the variable; the process exits with 2.
"""

from __future__ import annotations

import os
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from trix.competitions.options import CompetitionError, validate_options
from trix.competitions.protos import options_from_proto
from trix.competitions.schedule import Template, load_schedule
from trix.declarations import load_keys
from trix.runtime.config import ConfigError, RuntimeConfig, env_float
from trix.runtime.identity import Keys

SERVICE = "competitions"
DIGEST_DIR_ENV = "TRIX_COMPETITIONS_DIGEST_DIR"
SCHEDULE_ENV = "TRIX_COMPETITIONS_SCHEDULE"
DEV_SCHEDULE = Path(__file__).resolve().with_name("dev_schedule.json")
"""The dev setup's schedule (package data): a free 16-entrant knockout of COMPLEX every 10
minutes, open for registration 20 minutes ahead. `trix up` and `trix play`'s embedded platform
load it unless told otherwise (`schedule_env`)."""


def schedule_env(environ: Mapping[str, str], chosen: str | None = None) -> dict[str, str]:
    """TRIX_COMPETITIONS_SCHEDULE for a local platform (`trix up`, `trix play`): `chosen` (a
    file, "" for none) if given, else the operator's own variable if set (empty: none), else
    the dev schedule."""
    if chosen is None:
        chosen = environ.get(SCHEDULE_ENV, str(DEV_SCHEDULE))
    return {SCHEDULE_ENV: str(Path(chosen).resolve()) if chosen.strip() else ""}


@dataclass(frozen=True)
class CompetitionsConfig:
    """Everything the competitions service reads from the environment."""

    runtime: RuntimeConfig
    keys: Keys = field(repr=False, default_factory=lambda: Keys())
    """TRIX_PLAYER_TOKEN_KEY (players' tokens, passed on by the gateway), TRIX_ADMIN_PUBLIC_KEY
    (the operators' tools: system competitions; ADR 0028) and TRIX_SERVICE_SIGNING_KEY (its own,
    for its calls to scoring's ledger, docs/adr/0030). All required."""
    digest_dir: Path = Path("competitions")
    """TRIX_COMPETITIONS_DIGEST_DIR: where each finished or cancelled competition's file
    (`trix-competition/1`, `<competition>.json`) is published. Default `competitions` in
    TRIX_DATA_DIR (`trix up`: the service's folder under its state folder), else in the
    working directory."""
    tick_s: float = 0.2
    """TRIX_COMPETITIONS_TICK_S: how often the owner looks at start times and its running tables."""
    review_s: float = 600.0
    """TRIX_COMPETITIONS_REVIEW_S: the review period after the final (issue 43: 10 minutes)."""
    await_players: bool = True
    """TRIX_COMPETITIONS_AWAIT_PLAYERS (1): a round's tables wait for their players' seeds before
    the first deal (docs/rules.md §10, §11's seed turn, fired by the timers), so a player who
    opens his table takes his seat; 0: the bots play an auto-played seat at once (tests of the
    service run without the timers)."""
    scoring_target: str = ""
    """TRIX_SCORING_TARGET: scoring's gRPC address (host:port), whose ledger holds the entry fees
    and pays refunds and prizes (docs/adr/0030); empty: competitions with coins are refused."""

    schedule: tuple[Template, ...] = ()
    """TRIX_COMPETITIONS_SCHEDULE: a schedule file (`trix.competitions.schedule`) of the system's
    own competitions, each template's options checked at start; empty (the service's default):
    none. `trix up` and `trix play` give it DEV_SCHEDULE unless told otherwise (`schedule_env`)."""

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> CompetitionsConfig:
        e = os.environ if env is None else env
        digest_dir = e.get(DIGEST_DIR_ENV, str(Path(e.get("TRIX_DATA_DIR", ".")) / "competitions")).strip()
        if not digest_dir:
            raise ConfigError(f"{DIGEST_DIR_ENV}: a folder, not empty")
        return cls(
            runtime=RuntimeConfig.from_env(SERVICE, e),
            keys=load_keys(e, SERVICE),
            digest_dir=Path(digest_dir),
            tick_s=env_float(e, "TRIX_COMPETITIONS_TICK_S", 0.2, minimum=0.01),
            review_s=env_float(e, "TRIX_COMPETITIONS_REVIEW_S", 600.0, minimum=0.0),
            await_players=e.get("TRIX_COMPETITIONS_AWAIT_PLAYERS", "1").strip() != "0",
            scoring_target=e.get("TRIX_SCORING_TARGET", "").strip(),
            schedule=_schedule(e.get(SCHEDULE_ENV, "").strip()),
        )


def _schedule(path: str) -> tuple[Template, ...]:
    """The templates of the schedule file, each one's options valid for its next slot."""
    if not path:
        return ()
    now_ms = time.time_ns() // 1_000_000
    try:
        templates = load_schedule(Path(path))
        for template in templates:
            slot = template.slot(template.every.next_start(now_ms + template.close_before_ms))
            validate_options(options_from_proto(slot.options), now_ms)
    except CompetitionError as err:
        raise ConfigError(f"{SCHEDULE_ENV}: {err}") from None
    return templates
