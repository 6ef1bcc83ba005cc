"""The whole platform with competitions, and bot clients that take part through the gateway
(`make test-competitions`; reusable by the paid competitions' tests).

- `start_platform`: `trix.embedded.EmbeddedPlatform` (a real nats-server, every service as its
  own process, real gRPC on 127.0.0.1, the C engine), its competitions' review period short,
  scoring's admin credential set (coins granted to the entrants of paid competitions);
- `Entrant`: one bot client, a real `trix.client.GatewayClient`: it signs in, keeps a Session
  stream open, enters competitions with the gateway's RPCs, and follows each table a round seats
  it at as soon as its `seated` notice comes (its next table "opens by itself"), to the table's
  GameEnded on its own stream. Its seats stay played by auto-play (it follows them with
  `EventsRequest.auto_play`, so opening them does not take them: docs/rules.md §10);
- `field`: N entrants signed in with their sessions open; `organise`, `enter_all`, `until`:
  a competition created, entered, followed to a state.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import grpc

from trix.client import GatewayClient
from trix.embedded import EmbeddedPlatform
from trix.v1 import common_pb2, gateway_pb2
from trix.v1 import competitions_pb2 as cpb

REVIEW_S = 4.0
"""The platform's review period (TRIX_COMPETITIONS_REVIEW_S): issue 43's 10 minutes, shortened."""
DEADLINE_S = 240.0
RETRY_S = 0.5
AGAIN = ("UNAVAILABLE", "NOT_FOUND")
"""A resume of a table the player was told of, refused so, is sent again (a loaded table slow
to answer; one whose creation another gateway saw first)."""
ENTER_LEAD_MS = 3_000
"""How long before its start a competition of the tests opens: time for every entrant to enter."""
SCORING_ADMIN_TOKEN = "competitions-gateway-scoring-admin"
"""Scoring's operators' credential in the test platform: the paid competitions' tests grant
coins with it (`gateway_money_support`)."""


def start_platform(state: Path, env: dict[str, str] | None = None) -> EmbeddedPlatform:
    """The platform with competitions, started (stop it with `.stop()`)."""
    settings = {
        "TRIX_GATEWAY_RATE_PER_S": "400",
        "TRIX_GATEWAY_RATE_BURST": "400",
        "TRIX_COMPETITIONS_REVIEW_S": str(REVIEW_S),
        "TRIX_COMPETITIONS_TICK_S": "0.1",
        "TRIX_SCORING_ADMIN_TOKEN": SCORING_ADMIN_TOKEN,
        **(env or {}),
    }
    platform = EmbeddedPlatform(state, fresh=True, env=settings)
    try:
        platform.start()
    except BaseException:
        platform.stop()
        raise
    return platform


@contextlib.contextmanager
def platform_running(state: Path) -> Iterator[EmbeddedPlatform]:
    """`start_platform`'s platform for the length of a `with` (a module's fixture)."""
    platform = start_platform(state)
    try:
        yield platform
    finally:
        platform.stop()


@dataclass
class Entrant:
    """One bot client of a player, following his competitions through his Session stream."""

    client: GatewayClient
    name: str
    player_id: str = ""
    seated: list[cpb.CompetitionSeat] = field(default_factory=list)
    changed: list[cpb.CompetitionChanged] = field(default_factory=list)
    ended: set[str] = field(default_factory=set)
    """Tables whose GameEnded came on his own stream (he followed them)."""
    errors: list[str] = field(default_factory=list)
    pong: asyncio.Event = field(default_factory=asyncio.Event)
    retries: int = 0
    """Resumes sent again after an UNAVAILABLE (a table that did not answer in time)."""
    task: asyncio.Task[None] | None = None

    async def start(self) -> None:
        self.player_id = await self.client.sign_in(f"competition-bot-{self.name}-{uuid.uuid4().hex}", self.name)
        stream = self.client.open()
        self.task = asyncio.ensure_future(self._read(stream))
        self.client.send(gateway_pb2.SessionRequest(ping=True, request_id="hello"))
        await asyncio.wait_for(self.pong.wait(), 30)  # the session is live: notices reach it

    async def _read(self, stream: Any) -> None:
        with contextlib.suppress(grpc.aio.AioRpcError, asyncio.CancelledError):
            async for message in stream:
                kind = message.WhichOneof("kind")
                if kind == "pong":
                    self.pong.set()
                elif kind == "competition":
                    self._notice(message.competition)
                elif kind == "event" and message.event.HasField("game_ended"):
                    self.ended.add(message.event.table_id)
                elif kind == "error" and message.error.code in AGAIN and self._table(message.request_id):
                    self._follow(message.request_id, again=True)  # as a client does: the same resume again
                elif kind == "error":
                    self.errors.append(f"{message.error.code}: {message.error.message}")

    def _notice(self, notice: cpb.CompetitionNotice) -> None:
        assert notice.player_id == self.player_id, "a notice for someone else reached this player"
        if notice.HasField("seated"):
            self.seated.append(notice.seated)
            self._follow(notice.seated.table_id)  # his next table opens by itself
        else:
            self.changed.append(notice.changed)

    def _table(self, table_id: str) -> bool:
        return any(s.table_id == table_id for s in self.seated)

    def _follow(self, table_id: str, *, again: bool = False) -> None:
        """Follow the table from its creation (`again`: a moment after a refusal to retry)."""
        resume = gateway_pb2.SessionRequest(
            resume=gateway_pb2.EventsRequest(table_id=table_id, after_sequence=0, auto_play=True), request_id=table_id
        )
        if again:
            self.retries += 1
            asyncio.get_running_loop().call_later(RETRY_S, self.client.send, resume)
        else:
            self.client.send(resume)

    @property
    def metadata(self) -> tuple[tuple[str, str], ...]:
        return self.client.metadata

    async def close(self) -> None:
        await self.client.close()
        if self.task is not None:
            self.task.cancel()
            with contextlib.suppress(BaseException):
                await self.task


async def field_of(target: str, n: int, prefix: str) -> list[Entrant]:
    """`n` entrants signed in, each with his Session stream open."""
    entrants = [Entrant(GatewayClient(target), f"{prefix}{i:02d}") for i in range(n)]
    await asyncio.gather(*(e.start() for e in entrants))
    return entrants


async def close_all(entrants: list[Entrant]) -> None:
    await asyncio.gather(*(e.close() for e in entrants), return_exceptions=True)


def now_ms() -> int:
    return time.time_ns() // 1_000_000


def free_options(
    competition_format: int, capacity: int, rounds: int, lead_ms: int = ENTER_LEAD_MS
) -> cpb.CompetitionOptions:
    """A free competition of COMPLEX at the fast speed, bots filling the empty seats, starting
    `lead_ms` from now (registration closes then)."""
    starts = now_ms() + lead_ms
    return cpb.CompetitionOptions(
        variant=common_pb2.VARIANT_COMPLEX,
        format=competition_format,  # type: ignore[arg-type]
        rounds=rounds,
        capacity=capacity,
        starts_at_ms=starts,
        registration_closes_at_ms=starts,
        bot_fill=True,
        speed=cpb.COMPETITION_SPEED_FAST,
    )


async def organise(organiser: Entrant, options: cpb.CompetitionOptions) -> cpb.Competition:
    request = gateway_pb2.OrganiseCompetitionRequest(options=options, request_id=uuid.uuid4().hex)
    reply = await organiser.client.stub.OrganiseCompetition(request, metadata=organiser.metadata, timeout=10)
    return reply.competition  # type: ignore[no-any-return]


async def enter_all(entrants: list[Entrant], competition_id: str) -> list[cpb.Entrant]:
    async def enter(e: Entrant) -> cpb.Entrant:
        request = gateway_pb2.EnterCompetitionRequest(competition_id=competition_id)
        reply = await e.client.stub.EnterCompetition(request, metadata=e.metadata, timeout=10)
        return reply.entrant  # type: ignore[no-any-return]

    return list(await asyncio.gather(*(enter(e) for e in entrants)))


async def view(entrant: Entrant, competition_id: str) -> gateway_pb2.ViewCompetitionResponse:
    request = gateway_pb2.ViewCompetitionRequest(competition_id=competition_id)
    return await entrant.client.stub.ViewCompetition(request, metadata=entrant.metadata, timeout=10)  # type: ignore[no-any-return]


async def until(entrant: Entrant, competition_id: str, states: set[int]) -> gateway_pb2.ViewCompetitionResponse:
    """The competition as `entrant` sees it once in one of `states` (a test's wait, not a client's)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + DEADLINE_S
    while True:
        seen = await view(entrant, competition_id)
        if seen.competition.state in states:
            return seen
        assert loop.time() < deadline, f"competition still {cpb.CompetitionState.Name(seen.competition.state)}"
        await asyncio.sleep(0.25)


async def download(entrant: Entrant, competition_id: str, folder: Path) -> tuple[Path, str]:
    """The competition file through the gateway, written to `folder`: (its path, its digest)."""
    request = gateway_pb2.DownloadCompetitionFileRequest(competition_id=competition_id)
    reply = await entrant.client.stub.DownloadCompetitionFile(request, metadata=entrant.metadata, timeout=30)
    path = folder / f"{competition_id}.json"
    path.write_text(reply.file_json, encoding="utf-8")
    return path, str(reply.digest)
