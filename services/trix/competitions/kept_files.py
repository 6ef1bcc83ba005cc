"""A competition's file kept as its stored events make it (issue 43, docs/adr/0026).

The competition file (`trix-competition/1`) of a final is published before `CompetitionFinished`
is stored (a failed publish leaves the final to the next tick). Two files are published after
their event instead: a cancelled competition's (after `CompetitionCancelled`) and a settled
one's with the review period's complaints and answers (after `PayoutsSettled`). A publish that
fails there (the tables' records not read in a NATS fault, the folder not written) or an owner
killed in between would leave the stored file without them: the final's file, or none.

`KeptFiles.keep`, called on every tick of the competition's owner, compares the stored file's
digest with the one the events give (`CompetitionsService.digest_of`: the records' hashes as
the tables' ends stored them, no record read) and, while they differ, publishes the file again
(its records read back from the tables' results). Once they match, a competition is not looked
at again by this process; a new owner (after a takeover or a SIGKILL) looks once. Idempotent:
the same events and records make the same file, byte for byte. A file whose records are no
longer stored (TABLE_RESULTS keeps them 7 days) cannot be made again: logged once, left as it is.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

import structlog

from trix.competitions.complaints import Complaints
from trix.competitions.ports import Digests
from trix.errors import IllegalMove

if TYPE_CHECKING:
    from trix.competitions.state import Competition

log = structlog.get_logger("trix.competitions")


class FileSource(Protocol):
    """What of the service a kept file needs (`CompetitionsService`)."""

    digests: Digests
    complaints: Complaints

    def digest_of(self, comp: Competition) -> str: ...

    def _document(
        self, comp: Competition, records: dict[str, Any], hashes: dict[str, str] | None = None
    ) -> dict[str, Any]: ...

    async def records(self, comp: Competition) -> dict[str, Any]: ...


class KeptFiles:
    """The competitions whose file this process found stored as their events make it."""

    def __init__(self) -> None:
        self.stored: set[str] = set()

    async def keep(self, service: FileSource, comp: Competition) -> None:
        """Publishes the file of a cancelled competition, or of a settled one with complaints,
        unless the one stored has the digest its events give (the module docstring). Raises what
        the publish raises: the next tick tries again."""
        cid = comp.competition_id
        if cid in self.stored or not (comp.cancelled or comp.settled):
            return
        if comp.cancelled or service.complaints.of(cid):  # else its file is the final's, stored before it
            cancelled = service._document(comp, {}) if comp.cancelled else None
            digest = service.digest_of(comp) if cancelled is None else cancelled["digest"]
            if await service.digests.stored_digest(cid) != digest:
                try:
                    document = cancelled or service._document(comp, await service.records(comp))
                except IllegalMove as err:  # a record past the results' retention: never again
                    log.warning("competition file not made again", competition=cid, error=str(err))
                else:
                    await service.digests.publish(cid, document)
                    log.info("competition file published", competition=cid, digest=document["digest"])
        self.stored.add(cid)
