"""The schedule at work (docs/adr/0026): each due slot of `config.schedule` (`trix.competitions.
schedule`) created once, by the system organiser, from `CompetitionsService.tick`.

A slot this process has created, found created, or seen fenced (another replica created it
first) is not tried again; a slot whose creation failed otherwise (the log unreachable) is
tried at the next tick while it is due.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import structlog

from trix.competitions.ports import Fenced
from trix.competitions.schedule import SYSTEM_ORGANISER, Template, competition_id_of, due
from trix.errors import IllegalMove, InvalidArgument

if TYPE_CHECKING:
    from trix.competitions.service import CompetitionsService

log = structlog.get_logger("trix.competitions")


class Scheduler:
    def __init__(self, templates: tuple[Template, ...]) -> None:
        self.templates = templates
        self.done: set[str] = set()
        """Request ids of the slots settled in this process."""

    async def tick(self, service: CompetitionsService, now_ms: int) -> None:
        for slot in due(self.templates, now_ms):
            if slot.request_id in self.done:
                continue
            if competition_id_of(SYSTEM_ORGANISER, slot.request_id) in service.competitions:
                self.done.add(slot.request_id)
                continue
            try:
                created = await service.create(SYSTEM_ORGANISER, slot.options, slot.request_id)
            except Fenced:
                self.done.add(slot.request_id)  # another writer created it first
                continue
            except (InvalidArgument, IllegalMove) as err:  # e.g. a paid template, no ledger: logged once
                self.done.add(slot.request_id)
                log.warning("scheduled competition refused", template=slot.template, error=str(err))
                continue
            except Exception as exc:  # noqa: BLE001 - tried again at the next tick
                log.warning("scheduled competition not created", template=slot.template, error=repr(exc))
                continue
            self.done.add(slot.request_id)
            log.info("scheduled competition created", template=slot.template, competition=created.competition_id)
