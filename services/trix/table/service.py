"""The table service's logic: the live tables this replica owns: validates and applies
actions through the engine, appends them to each table's JetStream log, publishes
events.

Must not import grpc or nats: adapters (`grpc_api`, `subscribers`) translate to and
from this module, and it raises `trix.errors` domain errors. At this stage (issue 3)
it holds only its configuration; issue 4 builds the logic here.
"""

from __future__ import annotations

from trix.table.config import TableConfig


class TableService:
    """The table's domain logic (issue 4)."""

    def __init__(self, config: TableConfig) -> None:
        self.config = config
