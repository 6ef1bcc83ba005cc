"""The expiry of a finished table (ADR 0003): `archive`, the body of `TableService.archive`."""

from __future__ import annotations

from typing import TYPE_CHECKING

import structlog

from trix.errors import Unavailable
from trix.natsio.subjects import token

if TYPE_CHECKING:
    from trix.table.service import TableService

log = structlog.get_logger("trix.table")


async def archive(service: TableService, table_id: str, game_ended_sequence: int) -> bool:
    """RecordArchived: scoring stored this finished game's record, so the table's private
    log, snapshot and server seed go.

    Done by the table's owner under the table's lock (UNAVAILABLE elsewhere: the message is
    redelivered to the owner). Only a finished table whose GameEnded has the sequence
    scoring names is purged (scoring names it once it stored the record, so every result
    the log holds reached it). Idempotent: a repeated signal, or one after a purge interrupted by a crash, purges
    what is left. Returns False when the signal is refused (the table is not finished).
    """
    table_id = token(table_id, "table id")
    if not service.config.purge_finished:
        return False  # kept (TRIX_TABLE_PURGE_FINISHED=false)
    if not service.may_write(table_id):
        raise Unavailable("this replica does not own the table")
    async with service._lock(table_id):
        table = service.tables.get(table_id)
        if table is None:
            await service._recover_one(table_id)
            table = service.tables.get(table_id)
        if table is not None and (not table.finished or table.sequence != game_ended_sequence):
            log.warning(
                "archive signal refused: table not finished at that sequence",
                table_id=table_id,
                sequence=table.sequence,
                game_ended_sequence=game_ended_sequence,
            )
            return False
        await service.store.purge_table(table_id)
    # The finished table stays in this replica's memory (views of the final state and its
    # recent events keep answering, e.g. a client asking right after GameEnded) until a
    # restart or a shard move; nothing rebuilds it afterwards (NOT_FOUND; scoring serves
    # the record).
    log.info("finished table purged", table_id=table_id)
    return True
