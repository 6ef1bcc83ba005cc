"""A `trix up` supervisor that is only looked at: what it would write and run on a state
folder (its NATS configs, its children's command lines and environments), with one replica
of each service, free ports and a one-second grace, unless `options` say otherwise."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from trix.supervisor import Supervisor


def inspected_supervisor(state_dir: Path, **options: Any) -> Supervisor:
    settings: dict[str, Any] = dict(
        fresh=False, replicas={}, ports={}, nats_port=0, grace_s=1, ready_timeout_s=1, log_level="info"
    )
    return Supervisor(state_dir=state_dir, **{**settings, **options})
