"""Presence that expires (issue 44, docs/adr/0027's amendment): a player whose gateway died
(no PlayerDisconnected will ever come) is marked offline and his friends told.

Owns `GatewaysOnline`: the subscription to the gateways' beats (`trix.natsio.online`: each
names the players it holds online, every period) and a sweep once a period. A player with
sessions whom no gateway named for `MISSED_BEATS` periods loses them all (as if each had
disconnected: `SocialGraph.connected`, the stored presence and the friends' notices). A
player on two gateways is named by the one alive: he stays online. Counted from the last
beat naming him, his last PlayerConnected, or the moment this process began to hear the
beats, whichever is last: after a start, a NATS reconnect or a stall of this process (a
sweep late by a period) nobody is expired for beats this process could not hear.

The PRESENCE consumer is the source of a player's sessions; the beats only take them away.
One exception keeps the two from disagreeing for good: a player expired while his gateway
lived (its beats lost: the gateway cut from NATS for three periods) is online again, with the
sessions he had, at the first beat that names him while he has no other session; his
PlayerDisconnected, whenever it comes, ends them as usual.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable, Iterable
from typing import Any

import structlog
from nats.aio.msg import Msg

from trix.natsio import online, subjects
from trix.natsio.connection import NatsConnection
from trix.runtime.tasks import cancel_and_wait
from trix.social.graph import SocialGraph

log = structlog.get_logger("trix.social.online")

EXPIRED_KEPT = 100_000
"""Expired players whose sessions are kept for a beat that names them again (the oldest go first)."""


class GatewaysOnline:
    def __init__(
        self,
        nats: NatsConnection,
        graph: SocialGraph,
        period_s: float,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.nats = nats
        self.graph = graph
        self.period_s = period_s
        self.clock = clock
        self.named: dict[str, float] = {}
        """Player (with sessions) -> when he was last named by a beat or connected."""
        self.listening_since = clock()
        self.swept_at = clock()
        self._reconnects = 0
        self.expired = 0
        """Players marked offline because no gateway named them."""
        self.expired_sessions: dict[str, set[str]] = {}
        """Player expired -> the sessions he had then, until a beat names him or they end."""
        self._sub: Any = None
        self._task: asyncio.Task[None] | None = None

    async def start(self) -> None:
        self._reconnects = self.nats.client.stats["reconnects"]
        self._sub = await self.nats.client.subscribe(subjects.gateways_online(), cb=self._heard)
        self._task = asyncio.ensure_future(self._sweep_forever())

    async def stop(self) -> None:
        if self._sub is not None:
            with contextlib.suppress(Exception):
                await self._sub.unsubscribe()
            self._sub = None
        if self._task is not None:
            await cancel_and_wait([self._task], 3.0)
            self._task = None

    async def _heard(self, msg: Msg) -> None:
        players = online.decode(msg.data)
        self.named_now(players)
        await self.named_again(players)

    async def named_again(self, players: Iterable[str]) -> None:
        """A beat names `players`: one expired while his gateway lived, with no session now, is
        online again with the sessions he had (his gateway still holds them)."""
        for player in players:
            kept = self.expired_sessions.pop(player, None)
            if not kept or player in self.graph.sessions:
                continue
            log.info("presence restored: a gateway names the expired player again", player_id=player)
            for session in sorted(kept):
                await self.graph.connected(player, session, True)
            self.named[player] = self.clock()

    def disconnected(self, player: str, session: str) -> None:
        """His PlayerDisconnected: an expired session of his is not restored by a late beat."""
        kept = self.expired_sessions.get(player)
        if kept is not None:
            kept.discard(session)
            if not kept:
                del self.expired_sessions[player]

    def named_now(self, players: Iterable[str]) -> None:
        """A beat (or a PlayerConnected) names `players`: online now, if they have sessions."""
        now = self.clock()
        sessions = self.graph.sessions
        for player in players:
            if player in sessions:
                self.named[player] = now

    async def _sweep_forever(self) -> None:
        while True:
            await asyncio.sleep(self.period_s)
            try:
                await self.sweep()
            except Exception as exc:  # noqa: BLE001 - storage unavailable: the next sweep again
                log.warning("presence sweep failed", error=type(exc).__name__)

    async def sweep(self) -> None:
        """Mark offline every player no gateway named for `MISSED_BEATS` periods."""
        now = self.clock()
        reconnects = self.nats.client.stats["reconnects"]
        if reconnects != self._reconnects or now - self.swept_at > 2 * self.period_s:
            self.listening_since = now  # beats this process could not hear are not missed beats
        self._reconnects, self.swept_at = reconnects, now
        oldest = now - online.MISSED_BEATS * self.period_s
        sessions = self.graph.sessions
        for player in [p for p in self.named if p not in sessions]:
            del self.named[player]
        gone = [p for p in sessions if max(self.named.setdefault(p, now), self.listening_since) < oldest]
        for player in gone:
            log.info("presence expired: no gateway names the player", player_id=player)
            kept = sorted(sessions.get(player, ()))
            self.expired_sessions.pop(player, None)
            if len(self.expired_sessions) >= EXPIRED_KEPT:
                del self.expired_sessions[next(iter(self.expired_sessions))]
            self.expired_sessions[player] = set(kept)
            for session in kept:
                await self.graph.connected(player, session, False)
            self.named.pop(player, None)
            self.expired += 1
