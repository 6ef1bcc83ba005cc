"""Fixtures of the competitions service tests."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from competitions_service_support import Platform, running

from support.nats import AuthNats


@pytest.fixture
async def competition_platform(auth_nats: AuthNats, tmp_path: Path) -> AsyncIterator[Platform]:
    """The table and competitions services on a real nats-server, the competitions service's clock the test's."""
    async with running(auth_nats, tmp_path / "digests") as p:
        yield p
