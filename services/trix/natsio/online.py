"""The gateways' presence beat (issue 44, docs/adr/0027's amendment "presence that expires").

A session's PlayerConnected and PlayerDisconnected (PRESENCE) say when a player comes and
goes; a gateway that dies (SIGKILL, its node lost) says nothing more. So every period each
gateway publishes the players it holds online (`gateways_online`, core NATS: a beat is worth
nothing once the next one is due), their ids one a line, one message a period (more only
past `MAX_PER_MESSAGE` players); the social service marks offline a player no gateway named
for `MISSED_BEATS` periods. Owns the period's setting (`BEAT_ENV`, one value for both
services), the message's encoding and the gateway's publishing loop (`beat`).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Collection, Iterable

import structlog
from nats.aio.client import Client

from trix.natsio import subjects

log = structlog.get_logger("trix.natsio.online")

BEAT_ENV = "TRIX_PRESENCE_BEAT_S"
"""Seconds between two beats of a gateway; the social service reads the same variable."""
BEAT_S = 10.0
MISSED_BEATS = 3
"""A player no gateway named for this many periods is offline (a beat lost on the way, or
one late, is tolerated): within `MISSED_BEATS + 1` periods of his gateway's death, his friends
are told (the social service looks once a period)."""
MAX_PER_MESSAGE = 20_000
"""Players named by one message (about 0.5 MB of ids at most, under NATS's 1 MB payload)."""


def encode(players: Iterable[str]) -> list[bytes]:
    """The messages of one beat naming `players` (none: one empty message, still a beat)."""
    ordered = list(players)
    chunks = [ordered[i : i + MAX_PER_MESSAGE] for i in range(0, len(ordered), MAX_PER_MESSAGE)] or [[]]
    return ["\n".join(chunk).encode() for chunk in chunks]


def decode(data: bytes) -> list[str]:
    """The players one message names (what is not a player id is never online: it matches
    no session the social service holds)."""
    return [p for p in data.decode(errors="replace").split("\n") if p]


async def beat(nc: Client, players: Callable[[], Collection[str]], period_s: float) -> None:
    """Publish `players()` every `period_s` until cancelled (a failed publish: the next one)."""
    subject = subjects.gateways_online()
    while True:
        try:
            for data in encode(players()):
                await nc.publish(subject, data)
        except Exception as exc:  # noqa: BLE001 - NATS reconnecting: the next beat tries again
            log.warning("presence beat not sent", error=type(exc).__name__)
        await asyncio.sleep(period_s)
